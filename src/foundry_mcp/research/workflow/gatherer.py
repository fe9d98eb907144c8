"""The gatherer: runs the pending sub-queries concurrently and collects new sources."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.search.base import SearchProvider, SearchResult
from foundry_mcp.research.models import (
    GathererOutput,
    ResearchState,
    Source,
    SubQuery,
    SubQueryStatus,
)
from foundry_mcp.research.workflow.calls import CallLog

log = logging.getLogger(__name__)

Checkpoint = Callable[[], Awaitable[None]]


def normalise_url(url: str) -> str:
    """A URL reduced to what identifies the page: no fragment, scheme/host lower-cased."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/") or "/"
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


async def gather(
    state: ResearchState,
    providers: list[SearchProvider],
    calls: CallLog,
    checkpoint: Checkpoint,
) -> GathererOutput:
    """Search every pending sub-query; each finished one is saved before the next starts.

    A failing sub-query is marked failed with its error and does not stop the others.
    """
    output = GathererOutput()
    seen = {normalise_url(s.url) for s in state.sources if s.url}
    semaphore = asyncio.Semaphore(state.limits.max_concurrent)

    async def run(sub_query: SubQuery) -> None:
        async with semaphore:
            results, errors = await _search_all(providers, sub_query.query, state, calls)
        if not results and errors:
            sub_query.status = SubQueryStatus.FAILED
            sub_query.error = "; ".join(errors)
            output.stats.queries_failed += 1
        else:
            sub_query.status = SubQueryStatus.COMPLETED
            sub_query.error = None
            output.stats.queries_executed += 1
        for result in results:
            if len(sub_query.source_ids) >= state.limits.max_sources_per_query:
                break
            key = normalise_url(result.url) if result.url else None
            if key is not None and key in seen:
                output.stats.duplicates_skipped += 1
                continue
            if key is not None:
                seen.add(key)
            source = _source(result, sub_query, state.iteration)
            state.sources.append(source)
            sub_query.source_ids.append(source.id)
            output.sources.append(source)
            output.stats.sources_collected += 1
        sub_query.providers = [p.name for p in providers]
        await checkpoint()

    await asyncio.gather(*(run(sq) for sq in state.pending_sub_queries()))
    return output


async def _search_all(
    providers: list[SearchProvider], query: str, state: ResearchState, calls: CallLog
) -> tuple[list[SearchResult], list[str]]:
    results: list[SearchResult] = []
    errors: list[str] = []
    for provider in providers:
        started = time.perf_counter()
        event: dict[str, object] = {"provider": provider.name, "query": query}
        try:
            found = await provider.search(query, state.limits.max_sources_per_query)
            results.extend(found)
            event["results"] = len(found)
        except ProviderError as exc:
            log.warning("search on %s failed: %s", provider.name, exc.message)
            errors.append(exc.message)
            event["error"] = exc.message
            if exc.status_code in (401, 403):
                state.warn(f"{exc.message} {exc.remediation}")
        finally:
            ended = time.perf_counter()
            calls.add("search", started, ended)
            state.search_calls += 1
            event["latency_s"] = round(ended - started, 3)
        state.emit("search", event)
    return results, errors


def _source(result: SearchResult, sub_query: SubQuery, iteration: int) -> Source:
    return Source(
        sub_query_id=sub_query.id,
        title=result.title,
        url=result.url,
        snippet=result.snippet,
        content=result.content,
        provider=result.provider,
        score=result.score,
        iteration=iteration,
    )
