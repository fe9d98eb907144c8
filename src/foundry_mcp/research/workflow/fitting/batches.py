"""The analyzer's calls: sources focused on the question, packed into batches that fit one call.

Each pending source has a share of the round's analysis budget (:func:`reading_shares`: at least
``MIN_SHARE_TOKENS`` a source, so that a small window reads less per source in more calls;
shared max-min fairly, so that what a short page does not need goes to the long ones; never more
than one call's room). A source whose text fits its share is read whole; a longer
one is focused (:mod:`foundry_mcp.context.reading.focus`): repeats of other sources first, then its
least relevant passages, until it fits. The focused sources are then packed, in order, into
batches of at most ``BATCH_TARGET_TOKENS`` content tokens (or the call's room, when smaller) and
``SOURCES_PER_CALL`` sources; a source larger than that goes alone. Small batches keep every
call short (the analyst extracts more from a short prompt) and let several run at once.

Each batch is later fitted into its call by the degradation ladder, which changes nothing unless
the batch does not fit: one sub-query's big pages never take room from another's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.reading.focus import RepeatLedger, focus, focus_terms
from foundry_mcp.context.tokens import TokenCounter
from foundry_mcp.research.models import ResearchState, Source
from foundry_mcp.research.prompts.analyzer import render_source, source_text

BATCH_TARGET_TOKENS = 6_000
SOURCES_PER_CALL = 20
MIN_SHARE_TOKENS = 8_000  # a round's budget is at least this much a source
MIN_SPLIT_TOKENS = 2_000  # a reading smaller than twice this is one call


@dataclass(frozen=True)
class ReadySource:
    """A source with the text the analyst will read, and that text's size with its frame."""

    source: Source
    text: str
    tokens: int
    selected: bool = False  # passages chosen to fit its share: a loss the fidelity records


def sub_query_of(state: ResearchState, source: Source) -> str | None:
    """The query that found ``source``, if it was a sub-query of this research."""
    return next((sq.query for sq in state.sub_queries if sq.id == source.sub_query_id), None)


def reading_shares(sizes: Sequence[int], round_budget: int, room: int) -> list[int]:
    """The tokens of text each source (of ``sizes`` tokens) may bring to the analyst.

    The round's budget, at least ``MIN_SHARE_TOKENS`` a source, is shared max-min fairly: a
    source that needs less than an equal share leaves the rest to those that need more, and none
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
    """Every source within its share of ``round_budget`` (see :func:`reading_shares`), focused
    on the question and its sub-query where it does not fit, in order. CPU work on long pages:
    call it in a worker thread."""
    frames = [counter.count(render_source(s, "", ContentLevel.FULL)) for s in sources]
    sizes = [counter.count(source_text(s)) + f for s, f in zip(sources, frames, strict=True)]
    shares = reading_shares(sizes, round_budget, room)
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


def pack(ready: Sequence[ReadySource], capacity: int) -> list[list[ReadySource]]:
    """``ready`` in order, in batches of at most ``capacity`` tokens and ``SOURCES_PER_CALL``."""
    batches: list[list[ReadySource]] = []
    current: list[ReadySource] = []
    used = 0
    for item in ready:
        full = len(current) >= SOURCES_PER_CALL or used + item.tokens > capacity
        if current and full:
            batches.append(current)
            current, used = [], 0
        current.append(item)
        used += item.tokens
    if current:
        batches.append(current)
    return batches


def batch_capacity(room: int, reading: int | None = None) -> int:
    """The content tokens one analysis call is packed to (``room``: what the call can carry).

    With ``reading`` (the tokens of the whole reading to pack), half of it when that is less:
    a reading of several pages is read by two calls at once or more, each writing part of the
    answer, rather than one writing it all; one under twice ``MIN_SPLIT_TOKENS`` is not split.
    """
    capacity = min(BATCH_TARGET_TOKENS, room)
    if reading is not None and reading >= 2 * MIN_SPLIT_TOKENS:
        capacity = min(capacity, -(-reading // 2))
    return max(1, capacity)
