"""A claim found on its page word for word, with other spacing and markup: the matcher agrees
with the regular expression it stands for, at every place of every text tried."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from foundry_mcp.research.verification.excerpts import _words_at

PIECES = ["a", "b", "ab", "ba", "1.5", " ", "  ", "\n", "\u00a0", "`", "*", "_", "**", "|", "x"]
WORDS = ["a", "b", "ab", "ba", "1.5", "a|b", "|a", "", "a*b"]
JOINERS = ["", " ", "  ", "\n", "\u00a0", "`", "*", "**", "_", "|", " | ", "` ", "x", " x "]


@st.composite
def pages(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text that mostly holds the words in order, with markup, spacing or something else
    between and around them, among other pieces; and the words."""
    bare = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
    pieces = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)
    joiners = st.sampled_from(JOINERS)
    text = draw(pieces) + draw(joiners)
    for word in bare:
        text += word + draw(joiners)
    return text + draw(pieces), bare


def expected(text: str, bare: list[str], start: int, end: int) -> tuple[int, int] | None:
    """What the regular expression finds (the matcher's specification)."""
    pattern = re.compile(r"[\s`*_|]+".join(rf"[`*_]*{re.escape(word)}[`*_]*" for word in bare))
    found = pattern.search(text, start, end)
    return None if found is None else found.span()


@settings(max_examples=500, deadline=None)
@given(pages(), st.data())
def test_the_matcher_finds_what_the_expression_finds(
    page: tuple[str, list[str]], data: st.DataObject
) -> None:
    text, bare = page
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text) + 3))  # a reach may run past the text
    assert _words_at(text, bare, start, end) == expected(text, bare, start, end)


def test_a_claim_is_found_across_markup_and_line_breaks() -> None:
    page = "| Backend | *Lookup* |\n| `gdbm` | **1.2 µs** per key |"
    bare = ["gdbm", "1.2", "µs", "per", "key"]
    span = _words_at(page, bare, 0, len(page))
    assert span is not None and page[span[0] : span[1]] == "`gdbm` | **1.2 µs** per key"
    assert _words_at(page, ["key", "gdbm"], 0, len(page)) is None  # out of order
    assert _words_at(page, bare, 0, page.index("key")) is None  # past the end it may reach
