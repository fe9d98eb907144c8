"""Which search providers search a sub-query, in which order, and how they share the work.

A sub-query is searched for one or more kinds of sources (``web``, ``academic``, ``news``,
``local``): its own ``source_types``, as the planner aimed it, else its research's. Each kind is
a *lane*: the research's providers that serve it, in priority order (the order of
``[research] deep_research_providers``; by default the specification's Tavily, Google, Semantic
Scholar). A research that asks for no kind has two lanes: every outside provider, and the user's
documents. The sub-query's ``target`` (seed 003's allocation between the user's documents and
the web) then keeps the documents' lane, the others, or all of them; its ``sources``, when the
planner named some, keep only those of the user's own (``local``: the documents, ``mcp.<name>``:
an MCP source).

The lanes of a sub-query are searched at once. Within a lane, the ``priority`` strategy asks
the first provider, and the next one only when it fails (an error, or a rate limit or quota the
retries did not cure) or finds nothing; ``all`` asks every provider of the lane at once and
merges their answers rank by rank. Under ``priority``, a provider whose key was refused or whose
quota is spent is passed over for the rest of the gathering round (unless every provider of the
lane is).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.search.base import (
    SearchProvider,
    SearchResult,
    SourceType,
    served_types,
)
from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.models import SearchTarget, SubQuery

PRIORITY = "priority"
ALL = "all"


@dataclass(frozen=True)
class SearchLane:
    """The providers that search one kind of sources for a sub-query, in priority order."""

    source_type: str | None  # None: the research asked for no kind
    providers: tuple[SearchProvider, ...]

    @property
    def local(self) -> bool:
        return self.source_type == "local"


@dataclass
class Attempt:
    """One provider's answer to one search: its results, or the error it failed with."""

    provider: str
    results: list[SearchResult] = field(default_factory=list)
    error: ProviderError | None = None


@dataclass
class LaneAnswer:
    """What a lane's providers answered, in the order they were asked, and the results kept."""

    attempts: list[Attempt]
    results: list[SearchResult]

    @property
    def failed(self) -> bool:
        return all(attempt.error is not None for attempt in self.attempts)


# Asks one provider for one kind of sources (None: its main kind) and reports the outcome.
Ask = Callable[[SearchProvider, SourceType | None], Awaitable[Attempt]]


def kinds_of(provider: SearchProvider, local_providers: frozenset[str]) -> tuple[str, ...]:
    """The kinds of sources a provider serves (a provider named in ``local_providers``: local)."""
    return ("local",) if provider.name in local_providers else served_types(provider)


def search_lanes(
    sub_query: SubQuery,
    providers: Sequence[SearchProvider],
    local_providers: frozenset[str],
    research_types: Sequence[str] = (),
) -> list[SearchLane]:
    """The lanes that search ``sub_query`` (see the module); never empty when providers exist.

    A kind no provider serves gets no lane; when nothing is left, every provider forms one lane.
    """
    wanted = [t for t in sub_query.source_types if not research_types or t in research_types]
    kinds = wanted or list(research_types)
    if kinds:
        lanes = [
            SearchLane(kind, tuple(p for p in providers if kind in kinds_of(p, local_providers)))
            for kind in kinds
        ]
    else:
        local = tuple(p for p in providers if "local" in kinds_of(p, local_providers))
        outside = tuple(p for p in providers if "local" not in kinds_of(p, local_providers))
        lanes = [SearchLane(None, outside), SearchLane("local", local)]
    lanes = [_named(lane, sub_query.sources) for lane in lanes]
    lanes = [lane for lane in lanes if lane.providers]
    if sub_query.target is SearchTarget.LOCAL:
        aimed = [lane for lane in lanes if lane.local]
    elif sub_query.target is SearchTarget.WEB:
        aimed = [lane for lane in lanes if not lane.local]
    else:
        aimed = lanes
    return aimed or lanes or [SearchLane(None, tuple(providers))]


def _named(lane: SearchLane, names: Sequence[str]) -> SearchLane:
    """The user's own lane narrowed to the sources ``names`` (none of them in it: unchanged)."""
    if not lane.local or not names:
        return lane
    kept = tuple(p for p in lane.providers if p.name in names)
    return SearchLane(lane.source_type, kept) if kept else lane


async def search_lane(
    lane: SearchLane,
    ask: Ask,
    local_providers: frozenset[str],
    *,
    strategy: str = PRIORITY,
    spent: set[str] | None = None,
) -> LaneAnswer:
    """Search one lane under ``strategy``; ``spent`` (updated) names providers to pass over."""

    def kind_for(provider: SearchProvider) -> SourceType | None:
        # Only a provider serving several kinds is told which one (Tavily: web or news).
        several = len(kinds_of(provider, local_providers)) > 1
        return cast("SourceType | None", lane.source_type) if several else None

    if strategy == ALL:
        answers: dict[int, Attempt] = {}

        async def one(entry: tuple[int, SearchProvider]) -> None:
            position, provider = entry
            answers[position] = await ask(provider, kind_for(provider))

        await fan_out(one, enumerate(lane.providers))
        attempts = [answers[position] for position in range(len(lane.providers))]
        return LaneAnswer(attempts, interleave([a.results for a in attempts]))

    spent = set() if spent is None else spent
    candidates = [p for p in lane.providers if p.name not in spent] or list(lane.providers)
    attempts = []
    for provider in candidates:
        attempt = await ask(provider, kind_for(provider))
        attempts.append(attempt)
        if attempt.error is None and attempt.results:
            return LaneAnswer(attempts, attempt.results)
        if attempt.error is not None and used_up(attempt.error):
            spent.add(provider.name)
    return LaneAnswer(attempts, [])


def used_up(error: ProviderError) -> bool:
    """Whether a failure will last the research: a refused key, a spent quota or plan limit."""
    return error.kind == "auth" or (error.kind == "rate_limit" and not error.retryable)


def interleave(lists: Sequence[Sequence[SearchResult]]) -> list[SearchResult]:
    """The first result of each list, then the second of each, and so on."""
    merged: list[SearchResult] = []
    for rank in range(max((len(found) for found in lists), default=0)):
        merged.extend(found[rank] for found in lists if rank < len(found))
    return merged
