"""Quotes are found again in the stored source text, whatever its spacing."""

from __future__ import annotations

from foundry_mcp.research.models import Source
from foundry_mcp.research.verification.quotes import locate, quotes_for

STORED = "Heat pumps\n\nkeep a COP of  2.5 at\n-10 °C in the 2023 trial.   Noise stays low."


def test_an_excerpt_is_found_across_other_spacing_and_quoted_verbatim() -> None:
    span = locate(STORED, "keep a COP of 2.5 at -10 °C in the 2023 trial.")
    assert span is not None
    start, end = span
    assert STORED[start:end] == "keep a COP of  2.5 at\n-10 °C in the 2023 trial."


def test_a_cut_excerpt_is_quoted_up_to_its_cut() -> None:
    span = locate(STORED, "keep a COP of 2.5 …")
    assert span is not None and STORED[span[0] : span[1]] == "keep a COP of  2.5"


def test_words_not_in_the_text_give_no_quote() -> None:
    assert locate(STORED, "keep a COP of 3.5") is None
    assert locate(STORED, "   ") is None


def test_quotes_come_from_the_content_or_else_the_snippet() -> None:
    page = Source(title="page", content=STORED, snippet="Heat pumps keep a COP.")
    card = Source(title="card", snippet="Heat pumps keep a COP.")
    quotes = quotes_for(
        {page.id: page, card.id: card},
        [(page.id, "Noise stays low."), (card.id, "keep a COP."), ("src-gone", "x")],
    )
    assert [(q.source_id, q.field, q.text) for q in quotes] == [
        (page.id, "content", "Noise stays low."),
        (card.id, "snippet", "keep a COP."),
    ]
    assert all(
        (page if q.source_id == page.id else card).model_dump()[q.field][q.start : q.end] == q.text
        for q in quotes
    )
