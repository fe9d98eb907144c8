"""The fact-checker sees what the analyst saw: a source's page text and what only its snippet says."""

from __future__ import annotations

from foundry_mcp.research.models import Source
from foundry_mcp.research.prompts.analyzer import render_source, snippet_lacking
from foundry_mcp.research.verification.excerpts import ExcerptSelector
from foundry_mcp.research.verification.quotes import quotes_for

PAGE = "\n\n".join(
    f"Section {n} of the multiprocessing guide explains how a Pool starts its workers, how "
    "tasks are pickled and how results come back to the parent process."
    for n in range(40)
)
SNIPPET_ONLY = (
    "The 2025 benchmark found that a multiprocessing.Pool with 8 worker processes ran the "
    "CPU-bound suite 6.8 times faster than a single process."
)
CLAIM = (
    "A multiprocessing.Pool with 8 worker processes ran the CPU-bound suite 6.8 times faster "
    "than a single process."
)


def source() -> Source:
    return Source(title="multiprocessing guide", content=PAGE, snippet=SNIPPET_ONLY)


def test_the_analyst_is_shown_the_snippet_sentence_the_page_lacks() -> None:
    page = source()
    assert snippet_lacking(page, PAGE) == [SNIPPET_ONLY]
    assert SNIPPET_ONLY in render_source(page, PAGE)
    # A snippet sentence the page holds is not shown twice.
    echo = Source(title="x", content=PAGE + "\n\n" + SNIPPET_ONLY, snippet=SNIPPET_ONLY)
    assert snippet_lacking(echo, echo.content or "") == []


def test_a_claim_read_in_the_snippet_is_checked_against_it_and_quoted_from_it() -> None:
    page = source()
    selector = ExcerptSelector({page.id: page})

    excerpts = selector.excerpts(CLAIM, [page.id])

    assert excerpts and SNIPPET_ONLY in excerpts[0][1]
    (quote,) = quotes_for({page.id: page}, excerpts[:1])
    assert quote.field == "snippet"
    assert page.snippet[quote.start : quote.end] == quote.text == SNIPPET_ONLY


def test_an_excerpt_from_the_page_keeps_its_context_within_the_page() -> None:
    page = source()
    selector = ExcerptSelector({page.id: page})

    (_, excerpt), *_ = selector.excerpts(
        "How does a Pool start its workers in section 39?", [page.id]
    )

    assert "Section 39" in excerpt and SNIPPET_ONLY not in excerpt
    (quote,) = quotes_for({page.id: page}, [(page.id, excerpt)])
    assert quote.field == "content" and PAGE[quote.start : quote.end] == quote.text


def test_a_claim_the_page_holds_word_for_word_in_a_table_row_is_shown_as_it_stands() -> None:
    rows = "\n".join(
        f"| `dbm.gnu` | option {n} | opens the file in mode {n} and returns a handle |"
        for n in range(60)
    )
    fact = "dbm.gnu answered 100,000 lookups in 0.06 seconds on the reference machine"
    page = Source(
        title="dbm reference",
        content=f"```python\nimport dbm\ndb = dbm.open('x', 'c')\n```\n{rows}\n"
        f"| `dbm.gnu` | benchmark | {fact.replace('dbm.gnu', '`dbm.gnu`', 1)} |\n{rows}",
    )
    selector = ExcerptSelector({page.id: page})

    ((_, excerpt),) = selector.excerpts(fact + ".", [page.id])

    assert "0.06 seconds" in excerpt and "option 59" not in excerpt
    (quote,) = quotes_for({page.id: page}, [(page.id, excerpt)])
    assert quote.field == "content" and "0.06 seconds" in quote.text
