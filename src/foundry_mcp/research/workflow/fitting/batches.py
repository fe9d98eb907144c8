"""The analyzer's calls: the text a reading sends of its pages, packed into batches that each
fit one call.

What of each page is sent is the reading's choice (:mod:`foundry_mcp.research.workflow.reading`:
its passages worth most within the round's reading budget, or, with none, each page within its
share of the round's analysis budget). The texts are packed, in order, into batches of at most
``BATCH_TARGET_TOKENS`` content tokens (or the call's room, when smaller) and
``SOURCES_PER_CALL`` sources; a source larger than that goes alone. Small batches keep every
call short (the analyst extracts more from a short prompt) and let several run at once.

Each batch is later fitted into its call by the degradation ladder, which changes nothing unless
the batch does not fit: one sub-query's big pages never take room from another's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from foundry_mcp.research.models import ResearchState, Source

BATCH_TARGET_TOKENS = 6_000
SOURCES_PER_CALL = 20
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
