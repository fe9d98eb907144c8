"""The analyzer's calls: sources focused on the question, packed into batches that fit one call.

Each pending source has an equal share of the round's analysis budget (:func:`reading_share`:
at least ``MIN_SHARE_TOKENS``, so that a small window reads less per source in more calls,
never more than one call's room). A source whose text fits its share is read whole; a longer
one is focused (:mod:`foundry_mcp.context.focus`): repeats of other sources first, then its
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

from foundry_mcp.context.focus import RepeatLedger, focus, focus_terms
from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.tokens import TokenCounter
from foundry_mcp.research.models import ResearchState, Source
from foundry_mcp.research.prompts.analyzer import render_source, source_text

BATCH_TARGET_TOKENS = 12_000
SOURCES_PER_CALL = 20
MIN_SHARE_TOKENS = 4_000  # every source may bring this much, when one call holds it


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


def reading_share(round_budget: int, room: int, sources: int) -> int:
    """The tokens of text each of ``sources`` may bring to the analyst: an equal share of the
    round's budget, at least ``MIN_SHARE_TOKENS``, at most one call's ``room``."""
    fair = round_budget // max(1, sources)
    return max(1, min(room, max(fair, MIN_SHARE_TOKENS)))


def focus_sources(
    state: ResearchState,
    sources: Sequence[Source],
    counter: TokenCounter,
    ledger: RepeatLedger | None,
    *,
    round_budget: int,
    room: int,
) -> list[ReadySource]:
    """Every source within its share of ``round_budget`` (see :func:`reading_share`), focused
    on the question and its sub-query where it does not fit, in order. CPU work on long pages:
    call it in a worker thread."""
    ready = []
    for source in sources:
        frame = counter.count(render_source(source, "", ContentLevel.FULL))
        share = max(1, reading_share(round_budget, room, len(sources)) - frame)
        terms = focus_terms(state.query, sub_query_of(state, source))
        focused = focus(
            source_text(source), terms, counter, source_id=source.id, share=share, ledger=ledger
        )
        tokens = counter.count(focused.text) + frame
        ready.append(ReadySource(source, focused.text, tokens, focused.selected))
    return ready


def seed_ledger(ledger: RepeatLedger, state: ResearchState, counter: TokenCounter) -> None:
    """Claim the passages of sources analysed before (a resumed run's ledger starts empty)."""
    if ledger.first_reader:
        return
    for source in state.sources:
        if source.analyzed and source.content:
            ledger.claim_text(source.id, source.content)


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


def batch_capacity(room: int) -> int:
    """The content tokens one analysis call is packed to (``room``: what the call can carry)."""
    return max(1, min(BATCH_TARGET_TOKENS, room))
