"""A reading with no reading budget: each page within its share of the round's analysis budget.

Each pending page has a share of the round's analysis budget (:func:`page_shares`: at least
:data:`MIN_SHARE_TOKENS` a page, so that a small window reads less per page in more calls;
shared max-min fairly, so that what a short page does not need goes to the long ones; never more
than one call's room). A page whose text fits its share is read whole; a longer one is focused
(:func:`~foundry_mcp.context.reading.focus.focus`): repeats of other pages first, then its least
relevant passages, until it fits (:func:`focus_sources`). A page the user restored is read this
way whatever the budget (:func:`~foundry_mcp.research.workflow.reading.pages.read_pages`).
"""

from __future__ import annotations

from collections.abc import Sequence

from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.reading.focus import RepeatLedger, focus, focus_terms
from foundry_mcp.context.tokens import TokenCounter
from foundry_mcp.research.models import ResearchState, Source
from foundry_mcp.research.prompts.analyzer import render_source, source_text
from foundry_mcp.research.workflow.fitting.batches import ReadySource, sub_query_of

MIN_SHARE_TOKENS = 8_000  # a round's budget is at least this much a page


def page_shares(sizes: Sequence[int], round_budget: int, room: int) -> list[int]:
    """The tokens of text each page (of ``sizes`` tokens) may bring to the analyst.

    The round's budget, at least ``MIN_SHARE_TOKENS`` a page, is shared max-min fairly: a
    page that needs less than an equal share leaves the rest to those that need more, and none
    gets more than one call's ``room``.
    """
    total = max(round_budget, MIN_SHARE_TOKENS * len(sizes))
    shares = [0] * len(sizes)
    left = len(sizes)
    for index in sorted(range(len(sizes)), key=lambda i: sizes[i]):
        shares[index] = max(1, min(sizes[index], room, total // left))
        total -= shares[index]
        left -= 1
    return shares


def focus_sources(
    state: ResearchState,
    sources: Sequence[Source],
    counter: TokenCounter,
    ledger: RepeatLedger | None,
    *,
    round_budget: int,
    room: int,
) -> list[ReadySource]:
    """Every source's page within its share of ``round_budget`` (see :func:`page_shares`),
    focused on the question and its sub-query where it does not fit, in order. CPU work on long
    pages: call it in a worker thread."""
    frames = [counter.count(render_source(s, "", ContentLevel.FULL)) for s in sources]
    sizes = [counter.count(source_text(s)) + f for s, f in zip(sources, frames, strict=True)]
    shares = page_shares(sizes, round_budget, room)
    ready = []
    for source, frame, share in zip(sources, frames, shares, strict=True):
        terms = focus_terms(state.query, sub_query_of(state, source))
        focused = focus(
            source_text(source),
            terms,
            counter,
            source_id=source.id,
            share=max(1, share - frame),
            ledger=ledger,
        )
        tokens = counter.count(focused.text) + frame
        ready.append(ReadySource(source, focused.text, tokens, focused.selected))
    return ready
