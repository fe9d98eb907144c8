"""The web search with no key (``ddgs``) against a loopback fake of the engines it scrapes.

ddgs's DuckDuckGo and Bing News engines are pointed at ``tests.fakes.ddgs_server`` (their
``search_url``); everything else is the real library: its payloads, its ``primp`` client and its
parsers. Other engines stay on their real addresses, which the network guard refuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.keyless_notice import MARKER_FILE
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.providers.resilience import ResilienceRegistry
from foundry_mcp.providers.search.keyless import KeylessSearch
from tests.fakes import FakeHTTPServer, article_html, fake_pages, fake_tavily, html_page
from tests.fakes.ddgs_server import (
    AD_URL,
    BING_NEWS_PATH,
    FakeEngines,
    Hit,
    fake_engines,
    point_ddgs_at,
)
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

# The engines this file's fake answers for; tests that want a backend to fail name another.
FAKED = '[providers.ddgs]\nbackends = ["duckduckgo"]\nnews_backends = ["bing"]\n'


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> Any:
    with fake_engines() as server:
        point_ddgs_at(server, monkeypatch)
        yield server


def _settings(tmp_path: Path, toml: str = FAKED, **env: str) -> Settings:
    config = tmp_path / "foundry-mcp.toml"
    config.write_text(toml)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    full_env = {
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp_path / "research"),
        **env,
    }
    return load_settings(env=full_env, cwd=tmp_path, home=home)


async def _search(settings: Settings, *args: Any) -> list[Any]:
    registry = ProviderRegistry(settings)
    try:
        return await registry.search("ddgs").search(*args)
    finally:
        await registry.aclose()


# --------------------------------------------------------------------------- the adapter


async def test_results_become_search_results_without_page_text(
    engines: FakeEngines, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, FAKED + 'region = "de-de"\nsafesearch = "off"\n')
    results = await _search(settings, "heat pumps in cold climates", 4)
    assert [r.title for r in results] == [
        f"Heat pumps in cold climates - page {n}" for n in range(1, 5)
    ]
    first = results[0]
    assert first.url == "https://web.example.net/heat-pumps-in-cold-climates/1"
    assert first.snippet == "Page 1 on heat pumps in cold climates: what it says in brief."
    assert first.content is None  # the page fetcher reads the page
    assert first.provider == "ddgs" and first.publication is None
    assert AD_URL not in {r.url for r in results}  # ddgs's own filter drops the ad
    (request,) = engines.requests_to("/html/")
    assert engines.queries() == ["heat pumps in cold climates"]
    assert b"l=de-de" in request.body  # the configured region


async def test_news_results_carry_the_day_they_were_published(
    engines: FakeEngines, tmp_path: Path
) -> None:
    results = await _search(_settings(tmp_path), "grid batteries", 2, "news")
    assert [r.url for r in results] == [
        f"https://web.example.net/grid-batteries/{n}" for n in (1, 2)
    ]
    assert all(r.publication and r.publication.published for r in results)
    assert engines.queries(BING_NEWS_PATH) == ["grid batteries"]
    assert not engines.requests_to("/html/")


async def test_the_next_backend_fills_in_when_one_cannot_be_reached(
    engines: FakeEngines, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ddgs.engines import ENGINES

    monkeypatch.setattr(ENGINES["text"]["mojeek"], "search_url", "http://127.0.0.1:1/search")
    settings = _settings(tmp_path, '[providers.ddgs]\nbackends = ["mojeek", "duckduckgo"]\n')
    results = await _search(settings, "tidal power", 3)
    assert len(results) == 3 and engines.queries() == ["tidal power"]

    engines.corpus = lambda query: []  # nothing found anywhere is an empty answer, no error
    assert await _search(settings, "tidal power", 3) == []


async def test_only_a_search_that_reached_an_engine_counts_as_sent(
    engines: FakeEngines, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ddgs.engines import ENGINES

    monkeypatch.setattr(ENGINES["text"]["mojeek"], "search_url", "http://127.0.0.1:1/search")
    sent: list[str] = []

    def adapter(backends: list[str]) -> KeylessSearch:
        return KeylessSearch("ddgs", 10, backends=backends, on_sent=lambda: sent.append("x"))

    with pytest.raises(ProviderError):  # refused at the door: the question never left
        await adapter(["mojeek"]).search("tidal power", 3)
    assert sent == []
    engines.rate_limit_next(1)  # an engine that answers, even to refuse, has the question
    with pytest.raises(ProviderError):
        await adapter(["duckduckgo"]).search("tidal power", 3)
    assert sent == ["x"]


async def test_a_rate_limit_answer_is_a_retryable_rate_limit_error(
    engines: FakeEngines, tmp_path: Path
) -> None:
    engines.rate_limit_next(1)
    with pytest.raises(ProviderError) as caught:
        await _search(_settings(tmp_path), "heat pumps", 3)
    error = caught.value
    assert (error.kind, error.status_code, error.retryable) == ("rate_limit", 202, True)
    assert "duckduckgo" in error.message and "rate-limiting" in error.message
    assert "TAVILY_API_KEY" in error.remediation

    engines.rate_limit_next(1)  # Bing News says 429
    with pytest.raises(ProviderError) as caught:
        await _search(_settings(tmp_path), "heat pumps", 3, "news")
    assert (caught.value.kind, caught.value.status_code) == ("rate_limit", 429)


async def test_the_policy_backs_off_and_retries_a_rate_limit(
    engines: FakeEngines, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, FAKED + "requests_per_minute = 6000\n")
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    policies = ResilienceRegistry(settings, sleep=sleep)
    search = policies.wrap_search(KeylessSearch("ddgs", 5.0, backends=["duckduckgo"]))
    policy = policies.policy("ddgs", "search")
    engines.rate_limit_next(1)
    results = await search.search("heat pumps", 2)
    assert len(results) == 2
    assert policy.retries == 1 and max(waits) > 0  # it backed off before the retry
    assert len(engines.requests_to("/html/")) == 2

    engines.rate_limit_next(10)
    with pytest.raises(ProviderError) as caught:
        await search.search("heat pumps", 2)
    assert caught.value.kind == "rate_limit"
    assert policy.retries == 1 + settings.provider("ddgs").max_retries


def test_a_scraper_is_not_hedged_and_goes_slowly_unless_its_table_says_so(
    tmp_path: Path,
) -> None:
    policy = ResilienceRegistry(_settings(tmp_path, "")).policy("ddgs", "search")
    assert (policy.settings.hedge, policy.settings.requests_per_minute) == (False, 30.0)
    assert policy.settings.max_in_flight == 2
    toml = "[providers.ddgs]\nhedge_requests = true\nrequests_per_minute = 6\n"
    policy = ResilienceRegistry(_settings(tmp_path, toml)).policy("ddgs", "search")
    assert (policy.settings.hedge, policy.settings.requests_per_minute) == (True, 6.0)
    assert policy.settings.max_in_flight == 2


async def test_unknown_backends_leave_a_clear_error(tmp_path: Path) -> None:
    settings = _settings(tmp_path, '[providers.ddgs]\nbackends = ["altavista"]\n')
    with pytest.raises(ProviderError) as caught:
        await _search(settings, "heat pumps", 3)
    assert caught.value.kind == "bad_request"
    assert "[providers.ddgs] backends" in caught.value.remediation


# --------------------------------------------------------------------------- selection


def test_with_no_key_the_keyless_search_is_used(tmp_path: Path) -> None:
    registry = ProviderRegistry(_settings(tmp_path, ""))
    assert registry.search_providers(announce=False) == (["ddgs"], [])
    assert registry.search_providers(["news"])[0] == ["ddgs"]
    assert registry.search_types("ddgs") == ("web", "news")
    docs = tmp_path / "docs"
    docs.mkdir()
    local = ProviderRegistry(_settings(tmp_path, f'[research.local]\npaths = ["{docs}"]\n'))
    assert local.search_providers()[0] == ["ddgs", "local"]


@pytest.mark.parametrize(
    ("env", "chosen"),
    [
        ({"TAVILY_API_KEY": "tv"}, ["tavily"]),
        ({"GOOGLE_API_KEY": "g", "GOOGLE_CSE_ID": "cx"}, ["google"]),
        ({"SEMANTIC_SCHOLAR_API_KEY": "s2"}, ["semantic_scholar"]),
    ],
)
def test_with_a_key_the_default_order_is_unchanged_and_keyless_sits_out(
    tmp_path: Path, env: dict[str, str], chosen: list[str]
) -> None:
    registry = ProviderRegistry(_settings(tmp_path, "", **env))
    assert registry.search_providers() == (chosen, [])


def test_named_explicitly_it_is_used_next_to_a_keyed_provider(tmp_path: Path) -> None:
    toml = '[research]\ndeep_research_providers = ["tavily", "ddgs"]\n'
    registry = ProviderRegistry(_settings(tmp_path, toml, TAVILY_API_KEY="tv"))
    assert registry.search_providers()[0] == ["tavily", "ddgs"]
    assert registry.search_providers(["news"])[0] == ["tavily", "ddgs"]


# --------------------------------------------------------------------------- whole researches


def _pages() -> FakeHTTPServer:
    web = fake_pages()
    for n in range(1, 4):
        web.route(
            "GET",
            f"/article/{n}",
            lambda _r, n=n: html_page(
                article_html(
                    f"Article {n} on tidal energy",
                    [f"Tidal turbines in trial {n} ran at a capacity factor of {20 + n} percent."],
                )
            ),
        )
    return web


def _research_env(tmp_path: Path, openai_server: FakeHTTPServer, toml: str, **env: str) -> Settings:
    return _settings(
        tmp_path,
        toml,
        OPENAI_API_KEY="sk-test-secret-openai",
        OPENAI_BASE_URL=openai_server.base_url + "/v1",
        **env,
    )


async def test_a_research_with_only_the_keyless_search_reads_the_pages(
    engines: FakeEngines, tmp_path: Path, openai_server: FakeHTTPServer
) -> None:
    from foundry_mcp.runtime import research_runtime

    with _pages() as web:
        engines.corpus = lambda query: [
            Hit(f"Article {n}: {query}", f"{web.base_url}/article/{n}", f"Snippet {n}")
            for n in range(1, 4)
        ]
        toml = (
            FAKED + "requests_per_minute = 6000\n\n"
            "[research.fetch]\nallow_private_networks = true\n"
        )
        settings = _research_env(tmp_path, openai_server, toml)
        async with research_runtime(settings, warm=False) as service:
            started = await service.start("Is tidal energy reliable?", max_iterations=1)
            status = await wait_until(service, started["research_id"], TERMINAL)
            state = service.store.load(started["research_id"])
            service.store.load_pages(state)
            events = service.store.events(started["research_id"], after=0, limit=1000)
        page_requests = [r.path for r in web.requests]
    assert status["status"] == "completed", status["error"]
    assert state.search_providers == ["ddgs"]
    assert engines.queries()  # every search went to the fake DuckDuckGo
    assert state.sources and {s.provider for s in state.sources} == {"ddgs"}
    assert all("capacity factor" in (s.content or "") for s in state.sources)
    assert sorted(set(page_requests)) == [f"/article/{n}" for n in range(1, 4)]
    assert all(e.data["ok"] for e in events if e.kind == "fetch")
    # The start said where the questions would go; once they went, it has been said.
    assert any("public search engines" in w for w in started["search"]["warnings"])
    assert (settings.research.research_dir / MARKER_FILE).is_file()
    registry = ProviderRegistry(settings)
    assert not any("public search" in w for w in registry.search_providers()[1])


async def test_a_rate_limited_keyless_search_falls_through_to_the_next_provider(
    engines: FakeEngines, tmp_path: Path, openai_server: FakeHTTPServer
) -> None:
    from foundry_mcp.runtime import research_runtime

    engines.rate_limit_next(1000)
    toml = (
        '[research]\ndeep_research_providers = ["ddgs", "tavily"]\n\n'
        + FAKED
        + "requests_per_minute = 6000\nmax_retries = 1\n\n"
        "[providers.tavily]\nmax_retries = 0\n\n[research.fetch]\nenabled = false\n"
    )
    with fake_tavily() as tavily:
        settings = _research_env(
            tmp_path,
            openai_server,
            toml,
            TAVILY_API_KEY="tvly-test-secret",
            TAVILY_BASE_URL=tavily.base_url,
        )
        async with research_runtime(settings, warm=False) as service:
            started = await service.start("Is tidal energy reliable?", max_iterations=1)
            status = await wait_until(service, started["research_id"], TERMINAL)
            state = service.store.load(started["research_id"])
            events = service.store.events(started["research_id"], after=0, limit=1000)
        assert tavily.requests_to("/search")
    assert status["status"] == "completed", status["error"]
    assert state.sources and {s.provider for s in state.sources} == {"tavily"}
    failed = [e.data for e in events if e.kind == "search" and e.data["provider"] == "ddgs"]
    assert failed and any("rate-limiting" in e["error"] for e in failed)
    assert len(engines.requests_to("/html/")) >= 2  # retried before falling through
