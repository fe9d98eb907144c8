"""Refreshing a completed research: what was published since its report, and what changed.

Two things are asked, neither of a model:

* **the searches again**: the research's completed searches (its own, or in a hierarchical
  research its sub-questions' researchers'), at most ``Revision.max_searches``, asked for what
  was published since the version revised (:mod:`.searches`: a date bound where the service
  takes one; everywhere, only pages the research does not know are kept), the new pages under
  the sub-question whose search found them;
* **the cited pages again**: the pages the latest version cites, read again (at most
  ``MAX_REREAD_PAGES``, concurrently within the fetcher's own limit) and judged
  (:mod:`.pages`): a page whose text changed gets its new text (the old one is kept in memory
  for the analysis, which reads only what was added, and judges the findings resting on what
  went), a page gone or redirected is recorded, never dropped, and a page that could not be
  read is noted, not reported as a change.

What was found is in ``revision.changes``; the analysis (:mod:`.analysis`) reads it.
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.models import ResearchState, Revision, Source, SubQuery
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.revision.pages import PageCheck, PageState, check_page
from foundry_mcp.research.revision.searches import (
    query_key,
    revision_sub_queries,
    revision_sub_query,
    search_for_revision,
)

if TYPE_CHECKING:
    from foundry_mcp.providers.pages.fetch import FetchResult

REFRESH_SEARCHES = 10  # a refresh's searches at most when the caller names no number
MAX_REFRESH_SEARCHES = 30
MAX_REREAD_PAGES = 20


async def refresh_gather(kit: ResearchKit, state: ResearchState, revision: Revision) -> None:
    """Ask the research's searches again and read its cited pages again (see the module)."""
    since = refresh_since(state, revision)
    earlier = await earlier_searches(kit, state, revision)
    limit = revision.max_searches or REFRESH_SEARCHES
    chosen = earlier[: max(1, min(limit, MAX_REFRESH_SEARCHES))]
    planned = revision_sub_queries(state, revision) or [
        revision_sub_query(
            revision,
            number,
            sub_query.query,
            rationale="Refresh: asked again for what was published since.",
            priority=sub_query.priority,
            target=sub_query.target,
            source_types=list(sub_query.source_types),
            sources=list(sub_query.sources),
            hypothesis_id=sub_query.hypothesis_id,
        )
        for number, (sub_query, _) in enumerate(chosen, start=1)
    ]
    parts = {query_key(sub_query.query): part for sub_query, part in chosen if part is not None}
    await search_for_revision(
        kit, state, revision, planned, parts, since=since.date() if since else None
    )
    await reread_cited(kit, state, revision)
    await kit.checkpoint()


def refresh_since(state: ResearchState, revision: Revision) -> datetime | None:
    """What is new is what came after this: the revision's, else its version's, else the
    research's completion."""
    if revision.since is not None:
        return revision.since
    if state.versions:
        return state.versions[-1].created_at
    return state.completed_at


async def earlier_searches(
    kit: ResearchKit, state: ResearchState, revision: Revision
) -> list[tuple[SubQuery, str | None]]:
    """The research's completed searches, each once, the first round's first (by priority),
    each with the sub-question it was made for (None: the research's own)."""
    found: list[tuple[SubQuery, str | None]] = [
        (sq, None)
        for sq in state.completed_sub_queries()
        if not sq.id.startswith(f"{revision.id}-")
    ]
    if kit.branches is not None and state.sub_questions:
        branches = await kit.branches.load()
        for sub_question in state.sub_questions:
            branch = branches.get(sub_question.id)
            if branch is not None:
                found += [(sq, sub_question.id) for sq in branch.completed_sub_queries()]
    found.sort(key=lambda pair: (pair[0].iteration, pair[0].priority))
    seen: set[str] = set()
    unique = []
    for sub_query, part in found:
        key = query_key(sub_query.query)
        if key and key not in seen:
            seen.add(key)
            unique.append((sub_query, part))
    return unique


def cited_sources(state: ResearchState, revision: Revision) -> list[Source]:
    """The web pages the latest version cites (in its order; its findings' sources when it
    records none), those this revision found or already judged aside, at most
    ``MAX_REREAD_PAGES``."""
    version = state.versions[-1] if state.versions else None
    cited = version.cited_source_ids if version else []
    if not cited and state.report_metadata:
        cited = list(state.report_metadata.cited_source_ids)
    if not cited:
        cited = list(dict.fromkeys(sid for f in state.findings for sid in f.source_ids))
    changes = revision.changes
    judged = {*changes.new_source_ids, *changes.changed_source_ids, *changes.moved_source_ids}
    by_id = state.source_by_id()
    bounds = state.options.search.bounds
    pages = [
        by_id[sid]
        for sid in dict.fromkeys(cited)
        if sid in by_id and sid not in judged and _is_web(by_id[sid].url)
    ]
    if bounds is not None:
        pages = [source for source in pages if bounds.allows_url(source.url)]
    return pages[:MAX_REREAD_PAGES]


def _is_web(url: str | None) -> bool:
    return bool(url) and urlsplit(url or "").scheme.lower() in ("http", "https")


async def reread_cited(kit: ResearchKit, state: ResearchState, revision: Revision) -> None:
    """Read the cited pages again and record what changed (see the module)."""
    fetcher = kit.fetcher
    pages = cited_sources(state, revision)
    if not pages:
        return
    if fetcher is None or not fetcher.enabled:
        state.warn(
            "The refresh did not read the cited pages again: page fetching is off "
            "([research.fetch] enabled); only new pages were looked for."
        )
        return
    bounds = state.options.search.bounds
    checks: dict[str, PageCheck] = {}

    async def one(source: Source) -> None:
        assert source.url is not None
        with kit.calls.waiting("fetch") as traced:
            reading: Awaitable[FetchResult] = (
                fetcher.fetch(source.url, bounds.allows_url)
                if bounds is not None
                else fetcher.fetch(source.url)
            )
            result = await reading
        check = check_page(source.url, source.content, result)
        checks[source.id] = check
        state.emit(
            "page_reread",
            {
                **traced,
                "source_id": source.id,
                "url": source.url,
                "found": check.state.value,
                "error": result.error,
            },
        )

    # The fetcher bounds the downloads in flight ([research.fetch] max_concurrent).
    await fan_out(one, pages)
    apply_checks(state, revision, pages, checks)


def apply_checks(
    state: ResearchState,
    revision: Revision,
    pages: list[Source],
    checks: dict[str, PageCheck],
) -> None:
    """Record what reading ``pages`` again found, in their order."""
    changes = revision.changes
    unread: list[str] = []
    for source in pages:
        check = checks.get(source.id)
        if check is None or check.state is PageState.SAME:
            continue
        if check.state is PageState.UNREAD:
            unread.append(f"{source.url} ({check.reason})")
        elif check.state is PageState.CHANGED and check.text is not None:
            if source.content is not None:
                revision.earlier_texts[source.id] = source.content
            source.content = check.text
            # Read again: what it says now is read, and the findings resting on it judged.
            source.analyzed = False
            state.readings.pop(source.id, None)
            changes.changed_source_ids.append(source.id)
        else:  # moved or gone: the source stays, as it was read
            changes.moved_source_ids.append(source.id)
            if check.moved_to is not None:
                changes.moved_to[source.id] = check.moved_to
    if unread:
        listed = "; ".join(unread[:3]) + ("; ..." if len(unread) > 3 else "")
        state.warn(
            f"The refresh could not read {len(unread)} cited page(s) again, so it cannot say "
            f"whether they changed; they are kept as they were: {listed}."
        )
