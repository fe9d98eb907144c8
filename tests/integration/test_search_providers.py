"""Google, Semantic Scholar, the registry's search side and the gatherer's fan-out and dedup,
and the publication details (authors, year, venue, day) the search APIs give for citing a source.

The adapters run against loopback fakes of the real APIs; the gatherer against in-process
providers (timing and failures scripted) and a fake page server.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import anyio
import bibtexparser
import pytest

from foundry_mcp.config import FetchSettings, load_settings
from foundry_mcp.errors import ProviderError, ProviderNotConfiguredError
from foundry_mcp.providers.pages.fetch import PageFetcher
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.providers.search.base import Publication, SearchResult
from foundry_mcp.providers.search.google import GoogleSearch
from foundry_mcp.providers.search.local import LocalDocuments
from foundry_mcp.providers.search.semantic_scholar import SemanticScholarSearch
from foundry_mcp.research.export.document import cited as cited_sources
from foundry_mcp.research.export.document import render
from foundry_mcp.research.models import (
    ResearchLimits,
    ResearchOptions,
    ResearchState,
    SearchOptions,
    SubQuery,
    SubQueryStatus,
)
from tests.fakes import (
    FakeHTTPServer,
    FakeResponse,
    article_html,
    fake_google,
    fake_pages,
    fake_semantic_scholar,
    fake_tavily,
    html_page,
    long_paragraphs,
    paper,
)

pytestmark = pytest.mark.anyio

GOOGLE_KEY = "AIzaSyTEST-secret-google-key-0123456789"
S2_KEY = "s2-test-secret-key-0123"


def _google(server: FakeHTTPServer, key: str = GOOGLE_KEY, timeout: float = 5.0) -> GoogleSearch:
    return GoogleSearch("google", key, "cx-test", server.base_url, timeout)


def _scholar(
    server: FakeHTTPServer, key: str | None = None, timeout: float = 5.0
) -> SemanticScholarSearch:
    return SemanticScholarSearch("semantic_scholar", key, server.base_url, timeout)


def _no_secret(error: ProviderError, secret: str) -> None:
    for text in (error.message, error.remediation, str(error), repr(error.details)):
        assert secret not in text


# --------------------------------------------------------------------------- Google


async def _search_error(provider: Any) -> ProviderError:
    """The ProviderError a search for "q" raises (the provider is closed afterwards)."""
    try:
        with pytest.raises(ProviderError) as caught:
            await provider.search("q", 5)
    finally:
        await provider.aclose()
    return caught.value


async def test_google_returns_titles_links_and_snippets() -> None:
    with fake_google(api_key=GOOGLE_KEY, cse_id="cx-test") as server:
        provider = _google(server)
        try:
            results = await provider.search("heat pumps in winter", 3)
        finally:
            await provider.aclose()
    assert len(results) == 3
    first = results[0]
    assert first.title == "Heat pumps in winter - result 1"
    assert first.url == "https://web.example.net/heat-pumps-in-winter/1"
    assert first.snippet == "Result 1 about heat pumps in winter: what the page says, in two lines."
    assert first.content is None  # the gatherer fetches the page
    assert first.provider == "google"
    (request,) = server.requests_to("/customsearch/v1", "GET")
    assert request.query["q"] == ["heat pumps in winter"]
    assert request.query["cx"] == ["cx-test"]
    assert request.query["num"] == ["3"]
    assert request.query["key"] == [GOOGLE_KEY]


async def test_google_asks_for_at_most_ten_results() -> None:
    with fake_google() as server:
        provider = _google(server)
        try:
            results = await provider.search("many", 25)
        finally:
            await provider.aclose()
    assert server.requests_to("/customsearch/v1")[0].query["num"] == ["10"]
    assert len(results) == 5  # all the fake has


async def test_google_without_items_is_an_empty_answer() -> None:
    with fake_google({"nothing": []}) as server:
        provider = _google(server)
        try:
            assert await provider.search("nothing", 5) == []
        finally:
            await provider.aclose()


async def test_google_429_is_a_rate_limit_with_retry_after() -> None:
    with fake_google() as server:
        server.fail_next(429, headers={"Retry-After": "7"})
        provider = _google(server)
        error = await _search_error(provider)
    assert error.kind == "rate_limit"
    assert error.retryable
    assert error.retry_after == pytest.approx(7.0)
    assert error.status_code == 429
    _no_secret(error, GOOGLE_KEY)


async def test_google_daily_quota_is_a_rate_limit_that_retrying_does_not_fix() -> None:
    body = {
        "error": {
            "code": 403,
            "message": "Quota exceeded for quota metric 'Queries' per day.",
            "errors": [{"reason": "dailyLimitExceeded"}],
        }
    }
    with fake_google() as server:
        server.fail_next(403, json=body)
        provider = _google(server)
        error = await _search_error(provider)
    assert error.kind == "rate_limit"
    assert not error.retryable
    assert "quota" in error.message


async def test_google_500_is_transient() -> None:
    with fake_google() as server:
        server.fail_next(500)
        provider = _google(server)
        error = await _search_error(provider)
    assert error.kind == "transient"
    assert error.retryable
    assert error.status_code == 500


async def test_google_malformed_body_is_a_clear_error() -> None:
    with fake_google() as server:
        server.route("GET", "/customsearch/v1", lambda r: FakeResponse(body="<html>portal</html>"))
        provider = _google(server)
        error = await _search_error(provider)
    assert error.kind == "transient"
    assert "could not be read" in error.message


@pytest.mark.parametrize("status", [401, 403])
async def test_google_auth_failure_names_the_variables_and_hides_the_key(status: int) -> None:
    with fake_google() as server:
        server.fail_next(status, json={"error": {"code": status, "message": f"key {GOOGLE_KEY}"}})
        provider = _google(server)
        error = await _search_error(provider)
    assert error.kind == "auth"
    assert not error.retryable
    assert "GOOGLE_API_KEY" in error.remediation
    assert "GOOGLE_CSE_ID" in error.remediation
    _no_secret(error, GOOGLE_KEY)


async def test_google_invalid_key_answered_as_400_is_an_auth_failure() -> None:
    with fake_google(api_key="the-right-key") as server:
        provider = _google(server, key=GOOGLE_KEY)
        error = await _search_error(provider)
    assert error.kind == "auth"
    assert error.status_code == 400
    _no_secret(error, GOOGLE_KEY)


async def test_google_hang_times_out_within_the_provider_timeout() -> None:
    with fake_google() as server:
        server.latency = 5.0
        provider = _google(server, timeout=0.5)
        started = time.perf_counter()
        error = await _search_error(provider)
    assert time.perf_counter() - started < 2.0
    assert error.kind == "transient"
    assert error.retryable
    assert "0.5 s" in error.message


async def test_google_unreachable_is_transient_without_the_url() -> None:
    with fake_google() as server:
        base = server.base_url
    provider = GoogleSearch("google", GOOGLE_KEY, "cx", base, 2.0)  # the server is gone
    error = await _search_error(provider)
    assert error.kind == "transient"
    _no_secret(error, GOOGLE_KEY)
    assert base not in error.message


async def test_google_key_never_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with fake_google() as server:
        provider = _google(server)
        try:
            await provider.search("q", 2)
            server.fail_next(500)
            with pytest.raises(ProviderError):
                await provider.search("q", 2)
        finally:
            await provider.aclose()
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "customsearch" in logged  # httpx did log the requests...
    assert GOOGLE_KEY not in logged  # ...without the key


# --------------------------------------------------------------------------- Semantic Scholar


async def test_semantic_scholar_builds_content_and_prefers_doi_then_arxiv() -> None:
    with fake_semantic_scholar() as server:
        provider = _scholar(server)
        try:
            results = await provider.search("soil carbon", 4)
        finally:
            await provider.aclose()
    assert [r.url for r in results] == [
        "https://doi.org/10.1234/example.1",
        "https://arxiv.org/abs/2401.00002",
        f"https://www.semanticscholar.org/paper/{3:040x}",
        f"https://www.semanticscholar.org/paper/{4:040x}",
    ]
    first = results[0]
    assert first.title == "A study of soil carbon (1)"
    assert first.content is not None
    assert "We study soil carbon." in first.content
    assert "TL;DR: Soil carbon matters, finding 1." in first.content
    assert "2016 · Journal of Examples · Author 1, Author 2 · 10 citations" in first.content
    assert first.snippet == "Soil carbon matters, finding 1."
    assert first.provider == "semantic_scholar"
    assert first.publication == Publication(
        authors=["Author 1", "Author 2"],
        year=2016,
        venue="Journal of Examples",
        doi="10.1234/example.1",
    )
    assert results[1].publication is not None
    assert results[1].publication.arxiv_id == "2401.00002"
    assert results[1].publication.doi is None and results[1].publication.year == 2017
    assert results[2].publication is not None
    assert results[2].publication.authors == ["Author 1", "Author 2", "Author 3", "Author 4"]
    (request,) = server.requests_to("/graph/v1/paper/search")
    assert request.query["limit"] == ["4"]
    assert "tldr" in request.query["fields"][0] and "externalIds" in request.query["fields"][0]
    assert "x-api-key" not in request.headers  # keyless by default


async def test_semantic_scholar_sends_the_key_and_hyphen_free_queries() -> None:
    with fake_semantic_scholar(api_key=S2_KEY) as server:
        provider = _scholar(server, key=S2_KEY)
        try:
            await provider.search("long-term  soil-carbon", 2)
        finally:
            await provider.aclose()
    (request,) = server.requests_to("/graph/v1/paper/search")
    assert request.headers["x-api-key"] == S2_KEY
    assert request.query["query"] == ["long term soil carbon"]


async def test_semantic_scholar_paper_without_abstract_has_no_content() -> None:
    bare = paper(1, "q", doi="10.1/x", abstract=None, tldr=None)
    many_authors = paper(9, "q", abstract="Abstract only.", tldr=None)
    with fake_semantic_scholar({"q": [bare, many_authors]}) as server:
        provider = _scholar(server)
        try:
            results = await provider.search("q", 5)
        finally:
            await provider.aclose()
    assert results[0].content is None  # the gatherer will fetch the DOI page
    assert results[0].snippet.startswith("2016 · Journal of Examples")
    assert results[1].content is not None
    assert "TL;DR" not in results[1].content
    assert "Author 6 et al." in results[1].content


async def test_semantic_scholar_records_only_the_details_the_api_gave() -> None:
    sparse = {**paper(1, "q"), "year": None, "venue": " ", "externalIds": {"CorpusId": 1}}
    sparse["authors"] = [{"authorId": "1", "name": "  Jane   Doe "}, {"authorId": "2"}]
    bare = {**sparse, "title": "A paper we know nothing about", "authors": []}
    with fake_semantic_scholar({"q": [sparse, bare]}) as server:
        provider = _scholar(server)
        try:
            first, second = await provider.search("q", 5)
        finally:
            await provider.aclose()
    assert first.publication == Publication(authors=["Jane Doe"])
    assert second.publication is None


async def test_tavily_news_results_carry_the_day_they_were_published() -> None:
    from foundry_mcp.providers.search.tavily import TavilySearch

    dated = [
        {"title": "Rates held", "url": "https://news.example/a", "published_date": when}
        for when in ("Wed, 20 Nov 2024 02:37:41 GMT", "2024-11-21T08:00:00Z", "soon", None)
    ]
    with fake_tavily({"rates": dated}, api_key="tvly-key") as server:
        provider = TavilySearch("tavily", "tvly-key", server.base_url, 5.0)
        try:
            results = await provider.search("rates", 4, "news")
        finally:
            await provider.aclose()
    assert [r.publication for r in results] == [
        Publication(year=2024, published=date(2024, 11, 20)),
        Publication(year=2024, published=date(2024, 11, 21)),
        None,
        None,
    ]


async def test_tavily_keeps_a_400_kb_page_whole_and_cuts_at_max_page_chars(
    tmp_path: Path,
) -> None:
    fact = "The tidal array delivered 3.4 GWh in its first winter."
    raw = "\n\n".join(long_paragraphs(400_000, fact))
    hit = [
        {"title": "Tidal power survey", "url": "https://tides.example/survey", "raw_content": raw}
    ]
    with fake_tavily({"tidal": hit}, api_key="tvly-key") as server:
        env = {"TAVILY_API_KEY": "tvly-key", "TAVILY_BASE_URL": server.base_url}
        whole = _registry(tmp_path, env)
        (tmp_path / "lowered").mkdir()
        lowered = _registry(tmp_path / "lowered", env, "[research.fetch]\nmax_page_chars = 50000\n")
        try:
            (found,) = await whole.search("tavily").search("tidal", 1)
            (cut,) = await lowered.search("tavily").search("tidal", 1)
        finally:
            await whole.aclose()
            await lowered.aclose()
    assert found.content == raw  # the fact at 90% of the page is there
    assert fact in found.content
    assert cut.content == raw[:50_000]


async def test_semantic_scholar_keyless_429_suggests_a_key() -> None:
    with fake_semantic_scholar() as server:
        server.fail_next(429, headers={"Retry-After": "3"}, json={"message": "Too Many Requests"})
        provider = _scholar(server)
        error = await _search_error(provider)
    assert error.kind == "rate_limit"
    assert error.retry_after == pytest.approx(3.0)
    assert "SEMANTIC_SCHOLAR_API_KEY" in error.remediation


async def test_semantic_scholar_rejected_key_is_auth_and_hidden() -> None:
    with fake_semantic_scholar(api_key="the-right-key") as server:
        provider = _scholar(server, key=S2_KEY)
        error = await _search_error(provider)
    assert error.kind == "auth"
    assert error.status_code == 403
    assert "SEMANTIC_SCHOLAR_API_KEY" in error.remediation
    _no_secret(error, S2_KEY)


async def test_semantic_scholar_500_and_malformed_body_are_transient() -> None:
    with fake_semantic_scholar() as server:
        provider = _scholar(server)
        try:
            server.fail_next(503)
            with pytest.raises(ProviderError) as unavailable:
                await provider.search("q", 5)
            server.route(
                "GET", "/graph/v1/paper/search", lambda r: FakeResponse(body='{"data": [1, 2')
            )
            with pytest.raises(ProviderError) as malformed:
                await provider.search("q", 5)
        finally:
            await provider.aclose()
    assert unavailable.value.kind == "transient"
    assert unavailable.value.status_code == 503
    assert malformed.value.kind == "transient"
    assert "could not be read" in malformed.value.message


async def test_semantic_scholar_hang_times_out() -> None:
    with fake_semantic_scholar() as server:
        server.latency = 5.0
        provider = _scholar(server, timeout=0.4)
        started = time.perf_counter()
        error = await _search_error(provider)
    assert time.perf_counter() - started < 2.0
    assert error.kind == "transient"


@pytest.mark.parametrize("api", ["google", "semantic_scholar"])
async def test_a_hang_then_a_503_are_retried_by_the_policy(api: str) -> None:
    from foundry_mcp.providers.resilience import PolicySettings, ProviderPolicy, ResilientSearch

    start, build = (fake_google, _google) if api == "google" else (fake_semantic_scholar, _scholar)
    with start() as server:
        answers = iter([5.0])  # the first request hangs past the timeout, the others answer
        server.delay = lambda request, response: next(answers, 0.0)
        settings = PolicySettings(timeout=0.4, max_retries=2, backoff_base=0.01, backoff_cap=0.02)
        search = ResilientSearch(build(server, timeout=0.4), ProviderPolicy(api, settings))
        server.fail_next(503, times=2)  # the hung request takes the first of these
        try:
            assert await search.search("heat pumps", 2)
        finally:
            await search.aclose()
        requests = len(server.requests)
    assert requests == 3 and search.policy.retries == 2


# --------------------------------------------------------------------------- registry


def _registry(tmp_path: Path, env: dict[str, str], toml: str = "") -> ProviderRegistry:
    config = tmp_path / "foundry-mcp.toml"
    config.write_text(toml)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    full_env = {
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp_path / "research"),
        **env,
    }
    return ProviderRegistry(load_settings(env=full_env, cwd=tmp_path, home=home))


def test_google_needs_a_key_and_an_engine_id(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {"GOOGLE_API_KEY": "g"})
    with pytest.raises(ProviderNotConfiguredError) as caught:
        registry.usable_search_providers(["google"])
    assert "search engine id" in caught.value.message
    assert "GOOGLE_CSE_ID" in caught.value.message
    both = _registry(tmp_path, {"GOOGLE_API_KEY": "g", "GOOGLE_CSE_ID": "cx"})
    assert both.usable_search_providers(["google"]) == (["google"], [])


def test_missing_google_key_warning_says_how_to_enable_it(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {})
    usable, warnings = registry.usable_search_providers(["google", "semantic_scholar"])
    assert usable == ["semantic_scholar"]  # needs no key
    (warning,) = warnings
    assert "GOOGLE_API_KEY" in warning and "GOOGLE_CSE_ID" in warning


def test_every_search_kind_in_configured_order(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    toml = f'[research.local]\npaths = ["{docs}"]\n'
    env = {"TAVILY_API_KEY": "t", "GOOGLE_API_KEY": "g", "GOOGLE_CSE_ID": "cx"}
    registry = _registry(tmp_path, env, toml)
    names = ["semantic_scholar", "local", "google", "tavily"]
    assert registry.usable_search_providers(names) == (names, [])


def test_local_paths_add_the_local_provider(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    registry = _registry(tmp_path, {}, f'[research.local]\npaths = ["{docs}"]\n')
    usable, warnings = registry.usable_search_providers(["tavily"])
    assert usable == ["local"]
    assert len(warnings) == 1 and "TAVILY_API_KEY" in warnings[0]


def test_local_without_paths_is_skipped_with_a_hint(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {"TAVILY_API_KEY": "t"})
    usable, warnings = registry.usable_search_providers(["local", "tavily"])
    assert usable == ["tavily"]
    assert "[research.local] paths" in warnings[0]


def test_no_search_provider_lists_every_way_to_get_one(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {})
    with pytest.raises(ProviderNotConfiguredError) as caught:
        registry.usable_search_providers(["tavily", "google"])
    remediation = caught.value.remediation
    for hint in ("TAVILY_API_KEY", "GOOGLE_CSE_ID", "Semantic Scholar", "[research.local] paths"):
        assert hint in remediation


async def test_registry_builds_each_adapter_once_with_the_shared_fetcher(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    env = {"GOOGLE_API_KEY": "g", "GOOGLE_CSE_ID": "cx", "SEMANTIC_SCHOLAR_API_KEY": "s"}
    registry = _registry(tmp_path, env, f'[research.local]\npaths = ["{docs}"]\n')
    built: list[Any] = []

    def build() -> None:
        built.append(registry.search("google"))

    threads = [threading.Thread(target=build) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(adapter) for adapter in built}) == 1  # one adapter despite the race
    assert isinstance(built[0], GoogleSearch)
    assert isinstance(registry.search("semantic_scholar"), SemanticScholarSearch)
    local = registry.search("local")
    assert isinstance(local, LocalDocuments)
    assert local.index_path == tmp_path / "research" / "local-index.db"
    fetcher = registry.fetcher()
    assert registry.fetcher() is fetcher
    await registry.aclose()
    assert registry.fetcher() is not fetcher  # closed and forgotten
    await registry.aclose()


# --------------------------------------------------------------------------- gatherer


class ScriptedSearch:
    """An in-process provider: fixed results (or an error) after a delay."""

    def __init__(
        self,
        name: str,
        results: list[SearchResult] | None = None,
        *,
        delay: float = 0.0,
        error: ProviderError | None = None,
    ) -> None:
        self.name = name
        self.results = results or []
        self.delay = delay
        self.error = error
        self.queries: list[str] = []

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        self.queries.append(query)
        await anyio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return [r.model_copy() for r in self.results[:max_results]]

    async def aclose(self) -> None:
        pass


def _hit(provider: str, title: str, url: str, content: str | None = "text") -> SearchResult:
    return SearchResult(title=title, url=url, snippet=title, content=content, provider=provider)


def _state(
    *queries: str, max_sources: int = 5, strategy: str = "all"
) -> tuple[ResearchState, list[tuple[str, Any]]]:
    """A research of ``queries``; its providers merged (``all``) unless told otherwise."""
    state = ResearchState(
        query="q",
        llm_provider="openai",
        llm_model="m",
        limits=ResearchLimits(max_sources_per_query=max_sources),
        options=ResearchOptions(search=SearchOptions(strategy=strategy)),  # type: ignore[arg-type]
        sub_queries=[SubQuery(query=q) for q in queries],
    )
    events: list[tuple[str, Any]] = []
    state.attach(lambda kind, data: events.append((kind, data)))
    return state, events


async def _gather(state: ResearchState, providers: list[Any], fetcher: Any = None) -> Any:
    from foundry_mcp.research.llm.calls import CallLog
    from foundry_mcp.research.workflow.agents.gatherer import gather

    saves: list[int] = []

    async def checkpoint() -> None:
        saves.append(len(state.sources))

    output = await gather(state, providers, CallLog(), checkpoint, fetcher)
    return output, saves


async def test_under_all_each_sub_query_asks_every_provider_at_once() -> None:
    slow_a = ScriptedSearch("a", [_hit("a", "Alpha page one", "https://a.example/1")], delay=1.0)
    slow_b = ScriptedSearch("b", [_hit("b", "Beta page one", "https://b.example/1")], delay=1.0)
    state, events = _state("first question")
    started = time.perf_counter()
    output, saves = await _gather(state, [slow_a, slow_b])
    assert time.perf_counter() - started < 1.8  # concurrent, not 2 s in sequence
    assert {s.url for s in output.sources} == {"https://a.example/1", "https://b.example/1"}
    searches = [data for kind, data in events if kind == "search"]
    assert sorted(e["provider"] for e in searches) == ["a", "b"]
    assert all(e["results"] == 1 and "latency_s" in e for e in searches)
    assert state.search_calls == 2
    assert saves == [2]  # checkpoint after the sub-query
    assert state.sub_queries[0].providers == ["a", "b"]


async def test_under_priority_the_next_provider_searches_only_when_one_fails() -> None:
    down = ProviderError("a is down (HTTP 503).", provider="a", retryable=True, kind="transient")
    a = ScriptedSearch("a", error=down, delay=0.2)
    b = ScriptedSearch("b", [_hit("b", "Beta page one", "https://b.example/1")], delay=0.2)
    c = ScriptedSearch("c", [_hit("c", "Gamma page one", "https://c.example/1")])
    state, events = _state("first question", strategy="priority")
    started = time.perf_counter()
    output, _ = await _gather(state, [a, b, c])
    assert time.perf_counter() - started >= 0.4  # one after the other
    assert [s.url for s in output.sources] == ["https://b.example/1"]
    assert (a.queries, b.queries, c.queries) == (["first question"], ["first question"], [])
    assert [data["provider"] for kind, data in events if kind == "search"] == ["a", "b"]
    assert state.search_calls == 2
    (sub_query,) = state.sub_queries
    assert sub_query.status is SubQueryStatus.COMPLETED and sub_query.providers == ["a", "b"]
    assert any("'a' failed on 1 search" in w for w in state.warnings)


async def test_under_priority_a_spent_quota_is_not_asked_again_in_the_round() -> None:
    spent = ProviderError(
        "a refused the search: quota exceeded (HTTP 429).",
        provider="a",
        kind="rate_limit",
        retryable=False,
    )
    a = ScriptedSearch("a", error=spent)
    b = ScriptedSearch("b", [_hit("b", "Beta page one", "https://b.example/1")])
    state, _ = _state("one", "two", "three", strategy="priority")
    state.limits.max_concurrent = 1
    await _gather(state, [a, b])
    assert len(a.queries) == 1 and len(b.queries) == 3
    assert all(sq.status is SubQueryStatus.COMPLETED for sq in state.sub_queries)


async def test_results_are_deduplicated_by_url_and_by_title() -> None:
    a = ScriptedSearch(
        "a",
        [
            _hit("a", "Cold climate heat pump field trial results", "https://a.example/trial"),
            _hit("a", "Shared page", "https://shared.example/page/"),
            _hit("a", "Home", "https://a.example/home"),
        ],
    )
    b = ScriptedSearch(
        "b",
        [
            # The same paper under another URL (a DOI link): same title, other punctuation.
            _hit("b", "Cold-climate heat pump: field trial results!", "https://doi.org/10.1/x"),
            _hit("b", "Shared page (mirror)", "HTTPS://SHARED.example/page#top"),
            _hit("b", "Home", "https://b.example/home"),  # short titles never merge pages
        ],
    )
    state, _ = _state("heat pumps")
    output, _ = await _gather(state, [a, b])
    urls = [s.url for s in state.sources]
    assert urls == [
        "https://a.example/trial",
        "https://shared.example/page/",
        "https://a.example/home",
        "https://b.example/home",
    ]
    assert output.stats.duplicates_skipped == 2
    assert output.stats.sources_collected == 4


async def test_dedup_reaches_across_sub_queries_and_earlier_sources() -> None:
    hit = _hit("a", "An article seen in an earlier iteration", "https://x.example/seen")
    provider = ScriptedSearch("a", [hit])
    state, _ = _state("one", "two")
    state.sources.append(
        _source_like(title="Another title altogether here", url="https://x.example/seen")
    )
    output, _ = await _gather(state, [provider])
    assert output.sources == []
    assert output.stats.duplicates_skipped == 2


def _source_like(title: str, url: str) -> Any:
    from foundry_mcp.research.models import Source

    return Source(title=title, url=url, content="old")


async def test_duplicate_with_text_fills_a_result_without_text() -> None:
    a = ScriptedSearch("a", [_hit("a", "Page", "https://p.example/x", content=None)])
    b = ScriptedSearch("b", [_hit("b", "Page", "https://p.example/x", content="full text")])
    state, _ = _state("q")
    await _gather(state, [a, b])
    (source,) = state.sources
    assert source.content == "full text"


async def test_a_duplicate_gives_the_kept_copy_its_richer_publication_details() -> None:
    web = _hit("a", "Soil carbon under cover crops: a trial", "https://doi.org/10.1/soil")
    academic = _hit("b", "Soil carbon under cover crops: a trial", "https://doi.org/10.1/soil")
    academic.publication = Publication(authors=["Ada Lovelace"], year=2020, venue="Soil")
    thin = _hit("c", "Soil carbon under cover crops: a trial", "https://doi.org/10.1/soil")
    thin.publication = Publication(year=2021)
    state, _ = _state("soil")
    output, _ = await _gather(
        state, [ScriptedSearch(n, [h]) for n, h in zip("abc", [web, academic, thin], strict=True)]
    )
    (source,) = state.sources
    assert source.provider == "a" and output.stats.duplicates_skipped == 2
    assert source.publication == academic.publication  # the thinner record does not replace it

    # Found again in a later round: the saved source keeps its text, gains the details.
    state.sources[0].publication = None
    state.sub_queries.append(SubQuery(query="again"))
    await _gather(state, [ScriptedSearch("b", [academic])])
    (source,) = state.sources
    assert source.publication == academic.publication and source.content == "text"


async def test_a_sub_query_fails_only_when_every_provider_failed() -> None:
    down = ProviderError("b is down (HTTP 503).", provider="b", retryable=True, kind="transient")
    a = ScriptedSearch("a", [_hit("a", "Alpha result page", "https://a.example/1")])
    b = ScriptedSearch("b", error=down)
    state, events = _state("partly")
    output, _ = await _gather(state, [a, b])
    assert state.sub_queries[0].status is SubQueryStatus.COMPLETED
    assert state.sub_queries[0].error is None
    assert output.stats.queries_executed == 1
    assert [data["error"] for kind, data in events if kind == "search" and "error" in data] == [
        "b is down (HTTP 503)."
    ]
    assert any("'b' failed on 1 search" in w for w in state.warnings)

    rejected = ProviderError(
        "a rejected the API key (HTTP 401).", provider="a", kind="auth", status_code=401
    )
    state, _ = _state("all down")
    output, _ = await _gather(
        state, [ScriptedSearch("a", error=rejected), ScriptedSearch("b", error=down)]
    )
    (sub_query,) = state.sub_queries
    assert sub_query.status is SubQueryStatus.FAILED
    assert sub_query.error == "a rejected the API key (HTTP 401).; b is down (HTTP 503)."
    assert output.stats.queries_failed == 1
    assert any("rejected the API key" in w for w in state.warnings)


async def test_results_are_taken_rank_by_rank_across_providers() -> None:
    a = ScriptedSearch("a", [_hit("a", f"Alpha {n}", f"https://a.example/{n}") for n in range(5)])
    b = ScriptedSearch("b", [_hit("b", f"Beta {n}", f"https://b.example/{n}") for n in range(5)])
    state, _ = _state("q", max_sources=3)
    await _gather(state, [a, b])
    assert [s.url for s in state.sources] == [
        "https://a.example/0",
        "https://b.example/0",
        "https://a.example/1",
    ]


async def test_sources_without_text_are_fetched_once_and_failures_only_marked() -> None:
    article = article_html(
        "Ground source heat pumps", ["Boreholes keep a steady 10 C all year round."]
    )
    pages = {"/article": html_page(article), "/gone": FakeResponse(404, body="gone")}
    with fake_pages(pages) as web:
        base = web.base_url
        a = ScriptedSearch(
            "a",
            [
                _hit("a", "Ground source article", f"{base}/article", content=None),
                _hit("a", "A page that is gone now", f"{base}/gone", content=None),
                _hit("a", "Page with text already", f"{base}/has-text", content="given"),
            ],
        )
        fetcher = PageFetcher(FetchSettings(allow_private_networks=True, timeout=5))
        try:
            state, events = _state("heat pumps", "ground source")
            output, _ = await _gather(state, [a], fetcher)
        finally:
            await fetcher.aclose()
        fetched_paths = sorted(r.path for r in web.requests)
    by_url = {s.url: s for s in state.sources}
    assert "steady 10 C" in (by_url[f"{base}/article"].content or "")
    assert by_url[f"{base}/gone"].content is None
    assert by_url[f"{base}/has-text"].content == "given"
    gone_id = by_url[f"{base}/gone"].id
    assert "404" in state.metadata["fetch_errors"][gone_id]
    # The second sub-query got the same URLs: they were neither kept twice nor fetched again.
    assert fetched_paths == ["/article", "/gone"]
    assert len(output.sources) == 3
    fetch_events = [data for kind, data in events if kind == "fetch"]
    assert len(fetch_events) == 2
    ok = next(e for e in fetch_events if e["url"].endswith("/article"))
    assert ok["ok"] is True and ok["bytes"] > 0 and ok["error"] is None and "latency_s" in ok
    failed = next(e for e in fetch_events if e["url"].endswith("/gone"))
    assert failed["ok"] is False and "404" in failed["error"]
    assert state.sub_queries[0].status is SubQueryStatus.COMPLETED


async def test_follow_links_fetches_even_results_with_text() -> None:
    long_text = "Long page text. " * 40
    with fake_pages({"/p": html_page(article_html("Page", [long_text]))}) as web:
        a = ScriptedSearch("a", [_hit("a", "Page", f"{web.base_url}/p", content="short")])
        fetcher = PageFetcher(
            FetchSettings(allow_private_networks=True, follow_links=True, timeout=5)
        )
        try:
            state, _ = _state("q")
            await _gather(state, [a], fetcher)
        finally:
            await fetcher.aclose()
    assert "Long page text." in (state.sources[0].content or "")


async def test_disabled_fetching_reads_nothing() -> None:
    with fake_pages({"/p": html_page(article_html("Page", ["text"]))}) as web:
        a = ScriptedSearch("a", [_hit("a", "Page", f"{web.base_url}/p", content=None)])
        fetcher = PageFetcher(FetchSettings(enabled=False, allow_private_networks=True))
        try:
            state, events = _state("q")
            await _gather(state, [a], fetcher)
        finally:
            await fetcher.aclose()
        assert web.requests == []
    assert state.sources[0].content is None
    assert not [e for e in events if e[0] == "fetch"]


# --------------------------------------------------------------------------- whole researches


def _research_settings(tmp_path: Path, openai_base: str, toml: str, **env: str) -> Any:
    config = tmp_path / "research-config.toml"
    config.write_text("[providers.openai]\nmax_retries = 0\n\n" + toml)
    home = tmp_path / "research-home"
    home.mkdir()
    full_env = {
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp_path / "research"),
        "OPENAI_API_KEY": "sk-test-secret-openai",
        "OPENAI_BASE_URL": openai_base + "/v1",
        **env,
    }
    return load_settings(env=full_env, cwd=tmp_path, home=home)


async def test_research_runs_on_local_documents_alone(
    tmp_path: Path, openai_server: FakeHTTPServer
) -> None:
    from foundry_mcp.runtime import research_runtime
    from tests.support import TERMINAL, wait_until

    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "tides.md").write_text(
        "# Tides\n\nTides form because the Moon's gravity pulls the oceans. The Sun adds a "
        "smaller pull, so spring tides come at new and full moon.\n\nRecent evidence from tide "
        "gauges shows tidal ranges changing as sea level rises.\n"
    )
    (docs / "limits.txt").write_text(
        "Limitations and risks: tide predictions fail during storm surges; criticisms of "
        "harmonic models note that shallow estuaries distort tides on Earth.\n"
    )
    # Listed by the user (else the web search with no key would take part too).
    toml = (
        '[research]\ndeep_research_providers = ["tavily", "local"]\n\n'
        f'[research.local]\npaths = ["{docs}"]\n'
    )
    settings = _research_settings(tmp_path, openai_server.base_url, toml)
    assert settings.providers.get("tavily") is None  # no Tavily key anywhere
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How do tides form on Earth?", max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
        service.store.load_pages(state)
        report = await service.full_report(started["research_id"])
    assert status["status"] == "completed", status["error"]
    assert state.search_providers == ["local"]
    assert any("tavily" in w and "TAVILY_API_KEY" in w for w in state.warnings)
    assert state.sources
    assert all((s.url or "").startswith("file://") for s in state.sources)
    assert all(s.content for s in state.sources)
    assert "file://" in report.split("## Sources", 1)[1]
    assert (tmp_path / "research" / "local-index.db").is_file()


async def test_research_with_google_and_semantic_scholar_reads_the_pages(
    tmp_path: Path, openai_server: FakeHTTPServer
) -> None:
    from foundry_mcp.runtime import research_runtime
    from tests.support import TERMINAL, wait_until

    with fake_pages() as web:
        for n in range(1, 4):
            web.route(
                "GET",
                f"/article/{n}",
                lambda r, n=n: html_page(
                    article_html(
                        f"Article {n} on soil carbon",
                        [f"Cover crops raised soil carbon by {n * 3} percent in trial {n}."],
                    )
                ),
            )

        def items(query: str) -> list[dict[str, Any]]:
            return [
                {
                    "title": f"Article {n}: {query}",
                    "link": f"{web.base_url}/article/{n}",
                    "snippet": f"Snippet {n}",
                }
                for n in range(1, 4)
            ]

        with fake_google(items, api_key=GOOGLE_KEY) as google, fake_semantic_scholar() as s2:
            settings = _research_settings(
                tmp_path,
                openai_server.base_url,
                '[research]\ndeep_research_providers = ["google", "semantic_scholar"]\n',
                GOOGLE_API_KEY=GOOGLE_KEY,
                GOOGLE_CSE_ID="cx-test",
                GOOGLE_CSE_BASE_URL=google.base_url,
                SEMANTIC_SCHOLAR_BASE_URL=s2.base_url,
                FOUNDRY_MCP_FETCH_ALLOW_PRIVATE="1",
            )
            async with research_runtime(settings, warm=False) as service:
                # One lane per kind: Google searches the web, Semantic Scholar the papers.
                started = await service.start(
                    "Do cover crops store soil carbon?",
                    max_iterations=1,
                    max_sources_per_query=4,
                    source_types=["web", "academic"],
                )
                status = await wait_until(service, started["research_id"], TERMINAL)
                state = service.store.load(started["research_id"])
                service.store.load_pages(state)
                events = service.store.events(started["research_id"], after=0, limit=1000)
            assert google.requests_to("/customsearch/v1")
            assert s2.requests_to("/graph/v1/paper/search")
        page_requests = [r.path for r in web.requests]
    assert status["status"] == "completed", status["error"]
    assert state.search_providers == ["google", "semantic_scholar"]
    providers = {s.provider for s in state.sources}
    assert providers == {"google", "semantic_scholar"}
    fetched = [s for s in state.sources if s.provider == "google"]
    assert fetched and all("Cover crops raised soil carbon" in (s.content or "") for s in fetched)
    # Each page was read once for the whole research, although every sub-query found it.
    assert sorted(page_requests) == sorted(set(page_requests))
    fetch_events = [e.data for e in events if e.kind == "fetch"]
    assert len(fetch_events) == len(set(page_requests)) == 3
    assert all(e["ok"] for e in fetch_events)
    # The papers' details survived the store, and the BibTeX export cites them.
    papers = [s for s in state.sources if s.provider == "semantic_scholar"]
    assert papers and all(p.publication and p.publication.authors for p in papers)
    cited = {s.provider for s in cited_sources(state)}
    assert cited == {"google", "semantic_scholar"}, cited
    library = bibtexparser.parse_string(render(state, "bibtex", now=datetime.now(UTC)))
    assert library.failed_blocks == []
    kinds = {entry.entry_type for entry in library.entries}
    assert kinds == {"article", "misc"}
    article = next(e for e in library.entries if e.fields_dict.get("doi"))
    assert article.fields_dict["author"].value == "Author 1 and Author 2"
    assert article.fields_dict["year"].value == "2016"
    assert article.fields_dict["journal"].value == "Journal of Examples"
    assert article.fields_dict["doi"].value == "10.1234/example.1"


async def test_cancel_while_pages_are_read_leaves_the_sub_query_pending() -> None:
    with fake_pages({"/slow": html_page(article_html("Slow", ["text"]))}) as web:
        web.latency = 3.0
        a = ScriptedSearch("a", [_hit("a", "Slow page", f"{web.base_url}/slow", content=None)])
        fetcher = PageFetcher(FetchSettings(allow_private_networks=True, timeout=10))
        state, _ = _state("q")
        try:
            with anyio.move_on_after(0.3):
                await _gather(state, [a], fetcher)
        finally:
            await fetcher.aclose()
    # Resuming searches it again instead of believing it done without its sources.
    assert state.sub_queries[0].status is SubQueryStatus.PENDING
    assert state.sources == []


async def test_passages_of_one_local_file_are_distinct_sources() -> None:
    from foundry_mcp.research.workflow.agents.pool import normalise_url

    assert normalise_url("file:///n/a.md#L1-L9") != normalise_url("file:///n/a.md#L10-L20")
    assert normalise_url("https://x.example/a#L1") == normalise_url("https://x.example/a#L2")
    title = "notes.md — Heat pumps in cold climates"
    local = ScriptedSearch(
        "local",
        [
            _hit("local", title, "file:///n/notes.md#L1-L9"),
            _hit("local", title, "file:///n/notes.md#L10-L20"),
            _hit("local", title, "file:///n/notes.md#L1-L9"),  # the same passage again
        ],
    )
    state, _ = _state("q")
    output, _ = await _gather(state, [local])
    assert [s.url for s in state.sources] == [
        "file:///n/notes.md#L1-L9",
        "file:///n/notes.md#L10-L20",
    ]
    assert output.stats.duplicates_skipped == 1
