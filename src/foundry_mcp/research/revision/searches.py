"""A revision's searches: its own sub-queries, run by the research's gatherer.

A deepen and a refresh search as the research did (:func:`gather`: the lanes and providers, the
dedupe against every page the research knows, the new pages fetched), with sub-queries of their
own that carry the revision's iteration. Two things differ, and the providers are wrapped for
them (:class:`RevisionSearch`) rather than the research's saved options changed, which an
interrupted revision would leave changed: a refresh asks only for what was published since the
version it revises (a ``published_after`` bound, sent where the service applies it; elsewhere
the dedupe keeps only pages not known), and every search asks for a few more results than the
research takes, so the known pages the dedupe skips leave room for new ones.

What was found is recorded in the revision (``changes.new_source_ids``); in a hierarchical
research each new page belongs to the sub-question its search was for (``Source.branches``), so
the report's section for that part gets it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from foundry_mcp.providers.search.base import (
    SearchProvider,
    SearchResult,
    SourceType,
    search_as_asked,
)
from foundry_mcp.providers.search.bounds import SourceBounds
from foundry_mcp.research.models import ResearchState, Revision, SubQuery, SubQueryStatus
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.workflow.agents.gatherer import gather

MAX_MORE_RESULTS = 10  # known pages a search may skip and still return its share of new ones
MAX_RESULTS = 20  # what the search services take at most
SET_ASIDE = "set aside while a revision of the report searched"


class RevisionSearch:
    """A search provider asked for ``more`` results than the gatherer wants, within ``bounds``
    (None: the bounds the gatherer passes, the research's). Anything else passes through."""

    def __init__(
        self, inner: SearchProvider, *, more: int = 0, bounds: SourceBounds | None = None
    ) -> None:
        self.name = inner.name
        self.inner = inner
        self.more = more
        self.bounds = bounds

    async def search(
        self,
        query: str,
        max_results: int,
        source_type: SourceType | None = None,
        *,
        bounds: SourceBounds | None = None,
    ) -> list[SearchResult]:
        limit = max(max_results, min(MAX_RESULTS, max_results + self.more))
        return await search_as_asked(self.inner, query, limit, source_type, self.bounds or bounds)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)


def since_bounds(state: ResearchState, since: date) -> SourceBounds:
    """The research's bounds, published no earlier than ``since`` (nor than they said)."""
    bounds = state.options.search.bounds or SourceBounds()
    after = bounds.published_after
    return bounds.model_copy(update={"published_after": max(after, since) if after else since})


def query_key(query: str) -> str:
    """A query as searches are compared: its words, lower-cased."""
    return " ".join(query.casefold().split())


def revision_sub_query(revision: Revision, number: int, query: str, **fields: Any) -> SubQuery:
    """The revision's ``number``-th search: its id names the revision, so a resumed revision
    knows the searches it planned (:func:`revision_sub_queries`)."""
    return SubQuery(
        id=f"{revision.id}-sq{number}", query=query, iteration=revision.iteration, **fields
    )


def revision_sub_queries(state: ResearchState, revision: Revision) -> list[SubQuery]:
    """The sub-queries this revision planned (an interrupted one planned them already)."""
    return [sq for sq in state.sub_queries if sq.id.startswith(f"{revision.id}-sq")]


async def search_for_revision(
    kit: ResearchKit,
    state: ResearchState,
    revision: Revision,
    planned: Sequence[SubQuery],
    parts: Mapping[str, str] | None = None,
    *,
    since: date | None = None,
) -> None:
    """Search ``planned`` (made by :func:`revision_sub_query`; added to the research unless
    the revision planned its searches already: a resumed one runs those still pending) and
    record the new pages. ``parts``: the sub-question each query's pages belong to, by
    :func:`query_key`. ``since``: only what was published since that day, where the service
    can tell."""
    state.iteration = revision.iteration
    mine = revision_sub_queries(state, revision)
    if not mine:
        state.sub_queries.extend(planned)
        mine = list(planned)
    pending = [sq for sq in mine if sq.status is SubQueryStatus.PENDING]
    if pending:
        more = min(MAX_MORE_RESULTS, len(state.sources))
        dated = since_bounds(state, since) if since is not None else None
        providers: list[SearchProvider] = [
            RevisionSearch(
                provider,
                more=more,
                # The user's own sources are never bounded.
                bounds=None if provider.name in kit.local_providers else dated,
            )
            for provider in kit.search
        ]
        # The gatherer runs every pending sub-query: the research's own (a next round it
        # planned and never ran) wait, marked, until the revision's are searched.
        ours = {sq.id for sq in pending}
        waiting = [sq for sq in state.pending_sub_queries() if sq.id not in ours]
        for sub_query in waiting:
            sub_query.status, sub_query.error = SubQueryStatus.FAILED, SET_ASIDE
        try:
            await gather(
                state,
                providers,
                kit.calls,
                kit.checkpoint,
                kit.fetcher,
                pool=kit.pool,
                local_providers=kit.local_providers,
                private=kit.private,
            )
        finally:
            restore_set_aside(state)
    record_new_sources(state, revision, mine, parts or {})
    await kit.checkpoint()


def restore_set_aside(state: ResearchState) -> None:
    """The research's own searches a revision set aside, pending again (also after a revision
    that stopped while they were set aside)."""
    for sub_query in state.sub_queries:
        if sub_query.status is SubQueryStatus.FAILED and sub_query.error == SET_ASIDE:
            sub_query.status, sub_query.error = SubQueryStatus.PENDING, None


def record_new_sources(
    state: ResearchState,
    revision: Revision,
    sub_queries: Sequence[SubQuery],
    parts: Mapping[str, str],
) -> None:
    """The pages ``sub_queries`` found, in the revision's changes and under their parts."""
    known = {s.id: s for s in state.sources}
    new = revision.changes.new_source_ids
    for sub_query in sub_queries:
        part = parts.get(query_key(sub_query.query))
        for source_id in sub_query.source_ids:
            source = known.get(source_id)
            if source is None:
                continue
            if source_id not in new:
                new.append(source_id)
            if part is not None and part not in source.branches:
                source.branches.append(part)
