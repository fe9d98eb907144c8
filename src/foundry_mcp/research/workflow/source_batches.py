"""The analyzer's calls: sources focused on the question, packed into batches that fit one call.

Each pending source is first focused (:mod:`foundry_mcp.context.focus`): passages another
source already gave the analyst, and the off-topic passages of a long text, are set aside. The
focused sources are then packed, in order, into batches of at most ``BATCH_TARGET_TOKENS``
content tokens and ``SOURCES_PER_CALL`` sources, never more than one call's analysis budget; a
source larger than that goes alone. Small batches keep every call short (the analyst extracts
more from a short prompt) and let several run at once.

Each batch is later fitted into its call by the degradation ladder, which changes nothing unless
the batch (a single huge source, or a small model) does not fit: one sub-query's big pages
never take room from another's.
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


@dataclass(frozen=True)
class ReadySource:
    """A source with the text the analyst will read, and that text's size with its frame."""

    source: Source
    text: str
    tokens: int


def sub_query_of(state: ResearchState, source: Source) -> str | None:
    """The query that found ``source``, if it was a sub-query of this research."""
    return next((sq.query for sq in state.sub_queries if sq.id == source.sub_query_id), None)


def focus_sources(
    state: ResearchState,
    sources: Sequence[Source],
    counter: TokenCounter,
    ledger: RepeatLedger | None,
) -> list[ReadySource]:
    """Every source focused on the question and its sub-query, in order."""
    ready = []
    for source in sources:
        terms = focus_terms(state.query, sub_query_of(state, source))
        focused = focus(source_text(source), terms, counter, source_id=source.id, ledger=ledger)
        frame = counter.count(render_source(source, "", ContentLevel.FULL))
        ready.append(ReadySource(source, focused.text, counter.count(focused.text) + frame))
    return ready


def seed_ledger(ledger: RepeatLedger, state: ResearchState, counter: TokenCounter) -> None:
    """Claim the passages of sources analysed before (a resumed run's ledger starts empty)."""
    if ledger.first_reader:
        return
    for source in state.sources:
        if source.analyzed and source.content:
            focus(source.content, [], counter, source_id=source.id, ledger=ledger)


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


def batch_capacity(analysis_budget: int) -> int:
    """The content tokens one analysis call is packed to."""
    return max(1, min(BATCH_TARGET_TOKENS, analysis_budget))
