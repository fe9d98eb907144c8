"""The gatherer: runs the pending sub-queries concurrently and collects new sources.

Each sub-query is searched lane by lane (see :mod:`.search_lanes`): one lane per kind of
sources it asks for, each searched by the first usable provider in priority order and by the
next one when that fails or finds nothing (``priority``, the default), or by all of them at once
(``all``; ``[research] deep_research_search_strategy``). The answers are merged rank by rank
(the first hit of each lane or provider, then the second, ...), de-duplicated against the whole
research by normalised URL and by normalised title (the copy kept takes a duplicate's text when
it has none, and its publication details when they say more), and cut to
``max_sources_per_query``. A sub-query fails only when every provider it asked failed.

Then the pages of the new sources that came without text are fetched (``[research.fetch]``;
with ``follow_links`` every new source's page is fetched) and their text becomes the source's
content. A failed fetch is recorded, never fails the sub-query. Each finished sub-query is
saved before the gatherer moves on; with ``on_sources`` its new sources are then handed on
(simple mode analyses them while the other searches run), once the searches out with it have
returned too or :data:`SETTLE_SECONDS` have passed: a reading's share of the round's reading
budget counts the pages still expected, and the searches of one part of a question often find
the same pages, so a reading that waited a moment knows the round's pages and reads them in
one go, instead of a first reading and, once it is back, a further one of what the budget has
left (:mod:`foundry_mcp.research.workflow.reading.budget`). Searches and page reads run in
task groups (see :mod:`.fanout`): an unexpected error ends them all, and nothing outlives the
run.
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.search.base import SearchProvider, SearchResult, SourceType, richer
from foundry_mcp.providers.search.bounds import apply_bounds
from foundry_mcp.research.llm.calls import CallLog
from foundry_mcp.research.llm.fanout import fan_out, together
from foundry_mcp.research.models import (
    GathererOutput,
    ResearchState,
    Source,
    SubQuery,
    SubQueryStatus,
)
from foundry_mcp.research.workflow.agents.pool import SourcePool, normalise_url
from foundry_mcp.research.workflow.agents.privacy import WARNING as PRIVATE_WARNING
from foundry_mcp.research.workflow.agents.privacy import PrivateWords
from foundry_mcp.research.workflow.agents.search_lanes import (
    Attempt,
    LaneAnswer,
    interleave,
    search_lane,
    search_lanes,
)

if TYPE_CHECKING:
    from foundry_mcp.providers.pages.fetch import FetchResult, PageFetcher

log = logging.getLogger(__name__)

Checkpoint = Callable[[], Awaitable[None]]
SourcesFound = Callable[[list[Source]], Awaitable[object]]

# A title must be this specific before two sources are taken to be one page by it.
MIN_TITLE_CHARS = 20
MIN_TITLE_WORDS = 3
FETCH_ERRORS_KEY = "fetch_errors"  # state.metadata: source id -> why its page was not read
SETTLE_SECONDS = 0.5  # a search's new sources wait at most this for the searches out with it


class _Searching:
    """The sub-queries of one gathering whose search is out now (begun, not yet saved)."""

    def __init__(self) -> None:
        self._out: set[str] = set()
        self._none_out = anyio.Event()
        self._none_out.set()

    def begin(self, sub_query: SubQuery) -> None:
        if not self._out:
            self._none_out = anyio.Event()
        self._out.add(sub_query.id)

    def returned(self, sub_query: SubQuery) -> None:
        self._out.discard(sub_query.id)
        if not self._out:
            self._none_out.set()

    async def settle(self, seconds: float) -> None:
        """Until no search is out, or ``seconds`` have passed."""
        with anyio.move_on_after(seconds):
            await self._none_out.wait()


def normalise_title(title: str) -> str | None:
    """A title reduced to its words, or None when it is too short or generic to identify a page."""
    text = unicodedata.normalize("NFKC", title).casefold()
    text = " ".join(re.findall(r"\w+", text))
    if len(text) < MIN_TITLE_CHARS or len(text.split()) < MIN_TITLE_WORDS:
        return None
    return text


def _title_key(title: str, url: str | None) -> str | None:
    # Passages of one local document share its title: only web pages are matched by title.
    if url is not None and urlsplit(url.strip()).scheme.lower() == "file":
        return None
    return normalise_title(title)


async def gather(
    state: ResearchState,
    providers: list[SearchProvider],
    calls: CallLog,
    checkpoint: Checkpoint,
    fetcher: PageFetcher | None = None,
    pool: SourcePool | None = None,
    local_providers: frozenset[str] = frozenset(),
    on_sources: SourcesFound | None = None,
    private: PrivateWords | None = None,
) -> GathererOutput:
    """Search every pending sub-query; each one is saved as its search returns.

    ``fetcher`` reads the pages of sources without text (none: pages are not read). With a
    ``pool`` (shared by the researchers of one research) a URL keeps one id across them all and
    its page is read once. ``local_providers`` names the providers of the user's documents (a
    sub-query whose ``target`` is ``local`` or ``web`` is searched by them, or by the others,
    only). ``on_sources`` receives each sub-query's new sources while they are saved (not
    called when it found none): a failed save cancels it. With ``private`` (the research's), a
    query sent to a public service goes without the words only the user's own sources hold
    (:mod:`.privacy`), and what is found is learnt.
    """
    output = GathererOutput()
    seen_urls = {normalise_url(s.url) for s in state.sources if s.url}
    seen_titles = {k for s in state.sources if (k := _title_key(s.title, s.url))}
    semaphore = anyio.Semaphore(state.limits.max_concurrent)
    failures: dict[str, list[str]] = {}  # provider -> errors, for the partial-failure warning
    answered: set[str] = set()
    search = state.options.search
    spent: set[str] = set()  # providers whose key or quota failed: passed over this round
    searching = _Searching()

    async def run(sub_query: SubQuery) -> None:
        try:
            sources = await find(sub_query)
        finally:
            searching.returned(sub_query)
        if on_sources is None or not sources:
            await checkpoint()
            return
        analyse = on_sources

        async def analyse_when_settled() -> None:
            await searching.settle(SETTLE_SECONDS)
            await analyse(sources)

        # The sub-query's sources are read while they are saved: the reading only reads them,
        # and what the analysis makes of them goes in a later save, queued behind this one.
        await together(checkpoint, analyse_when_settled)

    async def find(sub_query: SubQuery) -> list[Source]:
        """Search ``sub_query``, fetch its new pages, record them (``run`` saves them)."""
        lanes = search_lanes(sub_query, providers, local_providers, search.source_types)
        answers: dict[int, LaneAnswer] = {}

        async def ask(provider: SearchProvider, kind: SourceType | None) -> Attempt:
            query = sub_query.query
            if private is not None and provider.name not in local_providers:
                query = _public_query(query, provider, private, state)
                if not query:
                    return Attempt(provider.name)  # nothing of it may go out: nothing found
            attempt = await _ask(provider, kind, query, state, calls)
            if attempt.error is None:
                answered.add(provider.name)
            else:
                error = attempt.error
                failures.setdefault(provider.name, []).append(
                    " ".join(filter(None, (error.message, error.remediation)))
                )
            return attempt

        async def one_lane(position: int) -> None:
            answers[position] = await search_lane(
                lanes[position], ask, local_providers, strategy=search.strategy, spent=spent
            )

        async with semaphore:
            searching.begin(sub_query)
            await fan_out(one_lane, range(len(lanes)))
        by_lane = [answers[position] for position in range(len(lanes))]
        attempts = [attempt for answer in by_lane for attempt in answer.attempts]
        chosen: list[SearchResult] = []
        for result in interleave([answer.results for answer in by_lane]):
            if len(chosen) >= state.limits.max_sources_per_query:
                break
            url_key = normalise_url(result.url) if result.url else None
            title_key = _title_key(result.title, result.url)
            duplicate = (url_key is not None and url_key in seen_urls) or (
                title_key is not None and title_key in seen_titles
            )
            if duplicate:
                output.stats.duplicates_skipped += 1
                _merge_into(chosen, state.sources, result, url_key, title_key)
                continue
            if url_key is not None:
                seen_urls.add(url_key)
            if title_key is not None:
                seen_titles.add(title_key)
            chosen.append(result)

        sources = [_source(result, sub_query, state.iteration) for result in chosen]
        if pool is not None:
            for source in sources:
                pool.identify(source)
        if fetcher is not None and fetcher.enabled:
            await _fetch_pages(fetcher, sources, state, calls, pool)
        # From here on nothing awaits: a cancel cannot leave the sub-query marked done
        # without its sources.
        if all(answer.failed for answer in by_lane):
            sub_query.status = SubQueryStatus.FAILED
            sub_query.error = "; ".join(a.error.message for a in attempts if a.error is not None)
            output.stats.queries_failed += 1
        else:
            sub_query.status = SubQueryStatus.COMPLETED
            sub_query.error = None
            output.stats.queries_executed += 1
        for source in sources:
            state.sources.append(source)
            sub_query.source_ids.append(source.id)
            output.sources.append(source)
            output.stats.sources_collected += 1
        if private is not None:
            private.learn(sources)
        sub_query.providers = list(dict.fromkeys(attempt.provider for attempt in attempts))
        return sources

    await fan_out(run, state.pending_sub_queries())
    for name, errors in failures.items():
        if answered - {name}:
            state.warn(
                f"Search provider '{name}' failed on {len(errors)} search(es); the other "
                f"providers' results were used. The last failure: {errors[-1]}"
            )
    return output


def _merge_into(
    chosen: list[SearchResult],
    known: list[Source],
    result: SearchResult,
    url_key: str | None,
    title_key: str | None,
) -> None:
    """Give the kept copy of a duplicate what it brought: its text, to a result kept without
    any, and its publication details, when richer, to a kept result or an earlier source."""

    def same(kept: SearchResult | Source) -> bool:
        same_url = url_key is not None and kept.url and normalise_url(kept.url) == url_key
        same_title = title_key is not None and _title_key(kept.title, kept.url) == title_key
        return bool(same_url or same_title)

    matches = [kept for kept in chosen if same(kept)]
    if result.content:
        lacking = next((kept for kept in matches if not kept.content), None)
        if lacking is not None:
            lacking.content = result.content
    # An earlier source keeps its text (quotes point into it); only its metadata may improve.
    target = matches[0] if matches else next((s for s in known if same(s)), None)
    if target is not None:
        target.publication = richer(target.publication, result.publication)


def _public_query(
    query: str, provider: SearchProvider, private: PrivateWords, state: ResearchState
) -> str:
    """``query`` as a public service may get it: without the user's own words."""
    public, left_out = private.redact(query)
    if left_out:
        state.emit(
            "query_redacted",
            {"provider": provider.name, "words": left_out, "sent": bool(public)},
        )
        state.warn(PRIVATE_WARNING)
    return public


async def _ask(
    provider: SearchProvider,
    kind: SourceType | None,
    query: str,
    state: ResearchState,
    calls: CallLog,
) -> Attempt:
    """One search by one provider, timed, counted and reported as a ``search`` event."""
    started = time.perf_counter()
    event: dict[str, object] = {"provider": provider.name, "query": query}
    if kind is not None:
        event["source_type"] = kind
    attempt = Attempt(provider.name)
    limit = state.limits.max_sources_per_query
    bounds = state.options.search.bounds
    # Only a bounded research tells its providers the bounds (each in its service's terms).
    bounded: dict[str, Any] = {"bounds": bounds} if bounds is not None else {}
    if kind is not None:  # an adapter serving one kind is not told which
        bounded["source_type"] = kind
    try:
        with calls.waiting("search") as traced:
            found = await provider.search(query, limit, **bounded)
        # Checked again here, whatever the adapter did: nothing outside the bounds is read.
        attempt.results = apply_bounds(found, bounds) if bounds is not None else found
        if len(attempt.results) < len(found):
            event["outside_bounds"] = len(found) - len(attempt.results)
        event["results"] = len(attempt.results)
    except ProviderError as exc:
        log.warning("search on %s failed: %s", provider.name, exc.message)
        attempt.error = exc
        event["error"] = exc.message
        if exc.kind == "auth" or exc.status_code in (401, 403):
            state.warn(f"{exc.message} {exc.remediation}")
    finally:
        state.search_calls += 1
        event["latency_s"] = round(time.perf_counter() - started, 3)
    state.emit("search", {**event, "phase": state.phase.value, **traced})
    return attempt


async def _fetch_pages(
    fetcher: PageFetcher,
    sources: list[Source],
    state: ResearchState,
    calls: CallLog,
    pool: SourcePool | None,
) -> None:
    """Read the pages of ``sources`` that need it; their text becomes the source content."""
    follow = fetcher.settings.follow_links
    bounds = state.options.search.bounds
    wanted = [
        s
        for s in sources
        if s.url
        and urlsplit(s.url).scheme.lower() in ("http", "https")
        and (follow or not s.content)
        and (bounds is None or bounds.allows_url(s.url))
    ]
    if not wanted:
        return
    allowed = bounds.allows_url if bounds is not None else None

    def fetch(url: str) -> Awaitable[FetchResult]:
        # A redirect out of the bounds is not followed either.
        return fetcher.fetch(url, allowed) if allowed is not None else fetcher.fetch(url)

    async def one(source: Source) -> None:
        assert source.url is not None
        with calls.waiting("fetch") as traced:
            result: FetchResult = await (
                pool.read(source.url, fetch) if pool is not None else fetch(source.url)
            )
        state.emit(
            "fetch",
            {
                **traced,
                "phase": state.phase.value,
                "url": source.url,
                "ok": result.ok,
                "bytes": result.bytes,
                "error": result.error,
                "latency_s": result.latency_s,
            },
        )
        if result.ok and result.text:
            if not source.content or len(result.text) > len(source.content):
                source.content = result.text
        elif not source.content:
            state.metadata.setdefault(FETCH_ERRORS_KEY, {})[source.id] = result.error

    await fan_out(one, wanted)


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
        publication=result.publication,
    )
