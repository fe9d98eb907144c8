"""Kinds of sources and the order of the search providers, through whole researches.

Tavily, Google and Semantic Scholar are their loopback fakes, reached by the real clients; the
research runs over an in-process MCP session or through the service.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.research.models import ResearchState
from foundry_mcp.runtime import research_runtime
from foundry_mcp.server import create_server
from tests.e2e.conftest import call, run_to_end
from tests.fakes import (
    FakeHTTPServer,
    ResearchBrain,
    fake_google,
    fake_semantic_scholar,
    google_error,
)
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How do cover crops change soil carbon?"
TAVILY_PATH = "/search"
GOOGLE_PATH = "/customsearch/v1"
SCHOLAR_PATH = "/graph/v1/paper/search"
USAGE_LIMIT = "This request exceeds your plan's set usage limit. Please upgrade your plan."


@pytest.fixture
def google_server() -> Iterator[FakeHTTPServer]:
    with fake_google(api_key="g-test-key", cse_id="cx-test") as server:
        yield server


@pytest.fixture
def scholar_server() -> Iterator[FakeHTTPServer]:
    with fake_semantic_scholar() as server:
        yield server


@pytest.fixture
def three(
    research_env: dict[str, str],
    google_server: FakeHTTPServer,
    scholar_server: FakeHTTPServer,
) -> dict[str, str]:
    """The environment of a server with Tavily, Google and Semantic Scholar (keyless)."""
    config = Path(research_env["FOUNDRY_MCP_CONFIG"])
    config.write_text(
        config.read_text()
        + "\n[providers.google]\nmax_retries = 0\n"
        + "\n[providers.semantic_scholar]\nmax_retries = 0\n"
    )
    return {
        **research_env,
        "GOOGLE_API_KEY": "g-test-key",
        "GOOGLE_CSE_ID": "cx-test",
        "GOOGLE_CSE_BASE_URL": google_server.base_url,
        "SEMANTIC_SCHOLAR_BASE_URL": scholar_server.base_url,
    }


def _settings(env: dict[str, str], tmp_path: Path, research: str = "") -> Settings:
    if research:
        config = Path(env["FOUNDRY_MCP_CONFIG"])
        config.write_text(config.read_text() + f"\n[research]\n{research}\n")
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


def _client(settings: Settings) -> Client:
    return Client(create_server(lambda: settings), mode="legacy")


async def _research(settings: Settings, **options: Any) -> ResearchState:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, max_iterations=1, **options)
        status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        return service.store.load(started["research_id"])


def _searched(state: ResearchState) -> list[list[str]]:
    """The providers each sub-query asked, in the order it asked them."""
    return [sub_query.providers for sub_query in state.sub_queries]


# --------------------------------------------------------------------------- source_types


async def test_an_academic_research_searches_semantic_scholar_only(
    three: dict[str, str],
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
    google_server: FakeHTTPServer,
    scholar_server: FakeHTTPServer,
) -> None:
    settings = _settings(three, tmp_path)
    async with _client(settings) as client:
        started = await call(
            client, action="deep-research", query=QUESTION, source_types=["academic"]
        )
        assert started["success"], started
        search = started["data"]["search"]
        assert search["providers"] == ["semantic_scholar"]
        assert search["source_types"] == ["academic"] and search["strategy"] == "priority"
        final = await run_to_end(client, started["data"]["research_id"])
        assert final["status"] == "completed", final
        report = await call(
            client, action="deep-research-report", research_id=started["data"]["research_id"]
        )
    assert scholar_server.requests_to(SCHOLAR_PATH)
    assert tavily_server.requests_to(TAVILY_PATH) == []
    assert google_server.requests_to(GOOGLE_PATH) == []
    assert "doi.org/10.1234/example.1" in json.dumps(report)  # a paper is cited


async def test_source_types_are_stored_and_kept_when_the_research_resumes(
    three: dict[str, str],
    tmp_path: Path,
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
    scholar_server: FakeHTTPServer,
) -> None:
    openai_server.delay = lambda request, response: 0.2  # still planning when cancelled
    settings = _settings(three, tmp_path)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, max_iterations=1, source_types=["academic"])
        research_id = started["research_id"]
        await service.cancel(research_id)
        stopped = service.store.load(research_id)
        assert stopped.status.value == "cancelled"
        assert stopped.options.search.source_types == ["academic"]
        openai_server.delay = None  # the delay was for the cancel: the resumed run needs none
        await service.resume(research_id)
        status = await wait_until(service, research_id, TERMINAL)
        state = service.store.load(research_id)
    assert status["status"] == "completed", status["error"]
    assert state.options.search.source_types == ["academic"]
    assert state.sources and {s.provider for s in state.sources} == {"semantic_scholar"}
    assert tavily_server.requests_to(TAVILY_PATH) == []


async def test_news_is_searched_with_tavily_news_topic(
    three: dict[str, str],
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
    google_server: FakeHTTPServer,
) -> None:
    state = await _research(_settings(three, tmp_path), source_types=["news"])
    requests = tavily_server.requests_to(TAVILY_PATH)
    assert requests and all((r.json or {}).get("topic") == "news" for r in requests)
    assert google_server.requests_to(GOOGLE_PATH) == []
    assert all(providers == ["tavily"] for providers in _searched(state))


async def test_each_kind_is_searched_in_its_own_lane(
    three: dict[str, str],
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
    google_server: FakeHTTPServer,
    scholar_server: FakeHTTPServer,
) -> None:
    state = await _research(_settings(three, tmp_path), source_types=["web", "academic"])
    # Web: Tavily answers, so Google is never asked; academic: Semantic Scholar.
    assert all(providers == ["tavily", "semantic_scholar"] for providers in _searched(state))
    assert google_server.requests_to(GOOGLE_PATH) == []
    web = [r for r in tavily_server.requests_to(TAVILY_PATH) if "topic" not in (r.json or {})]
    assert len(web) == len(state.sub_queries)
    assert {s.provider for s in state.sources} == {"tavily", "semantic_scholar"}


async def test_the_planner_aims_sub_queries_at_some_of_the_kinds(
    three: dict[str, str],
    tmp_path: Path,
    brain: ResearchBrain,
    google_server: FakeHTTPServer,
) -> None:
    def planner(system: str, user: str) -> str:
        assert '"source_types"' in system and '"academic": academic papers' in system
        return json.dumps(
            {
                "research_brief": "Papers for the mechanism, the web for practice.",
                "sub_queries": [
                    {"query": "cover crops soil organic carbon meta-analysis", "priority": 1,
                     "source_types": ["academic"]},
                    {"query": "cover crop seed mix costs for farmers", "priority": 2,
                     "source_types": "web"},
                    {"query": "cover crops carbon credits news", "priority": 3,
                     "source_types": ["news", "blogs"]},
                ],
            }
        )  # fmt: skip

    brain.overrides["planner"] = planner
    state = await _research(_settings(three, tmp_path), source_types=["web", "academic"])
    first_round = [sq for sq in state.sub_queries if sq.iteration == 1]
    assert [sq.source_types for sq in first_round] == [["academic"], ["web"], []]
    assert _searched(state)[:3] == [
        ["semantic_scholar"],
        ["tavily"],
        ["tavily", "semantic_scholar"],  # no kind it may ask for: the research's kinds
    ]
    assert google_server.requests_to(GOOGLE_PATH) == []


async def test_a_kind_no_usable_provider_serves_fails_at_start(
    three: dict[str, str], tmp_path: Path
) -> None:
    env = {key: value for key, value in three.items() if key != "TAVILY_API_KEY"}
    settings = _settings(env, tmp_path)
    async with _client(settings) as client:
        refused = await call(client, action="deep-research", query=QUESTION, source_types=["news"])
        assert refused["data"]["error_code"] == "PROVIDER_NOT_CONFIGURED", refused
        assert "news" in refused["error"] and "tavily" in refused["error"]
        assert "TAVILY_API_KEY" in refused["data"]["remediation"]
        listed = await call(client, action="deep-research-list")
        assert listed["data"]["items"] == []


async def test_local_without_documents_names_the_setting(
    three: dict[str, str], tmp_path: Path
) -> None:
    async with _client(_settings(three, tmp_path)) as client:
        refused = await call(client, action="deep-research", query=QUESTION, source_types="local")
    assert refused["data"]["error_code"] == "PROVIDER_NOT_CONFIGURED"
    assert "[research.local] paths" in refused["data"]["remediation"]


async def test_an_unknown_kind_is_refused_naming_the_allowed_ones(
    three: dict[str, str], tmp_path: Path
) -> None:
    async with _client(_settings(three, tmp_path)) as client:
        refused = await call(
            client, action="deep-research", query=QUESTION, source_types=["academic", "papers"]
        )
        assert refused["data"]["error_code"] == "VALIDATION_ERROR"
        assert refused["data"]["field"] == "source_types"
        assert "'papers'" in refused["error"]
        for kind in ("web", "academic", "news", "local"):
            assert kind in refused["data"]["remediation"]
        listed = await call(client, action="deep-research-list")
        assert listed["data"]["items"] == []


async def test_the_service_refuses_an_unknown_kind_too(
    three: dict[str, str], tmp_path: Path
) -> None:
    from foundry_mcp.errors import InputError

    async with research_runtime(_settings(three, tmp_path), warm=False) as service:
        with pytest.raises(InputError) as caught:
            await service.start(QUESTION, source_types="web, journals")
    assert caught.value.details["field"] == "source_types"
    assert "'journals'" in caught.value.message
    assert "academic" in (caught.value.remediation or "")


# --------------------------------------------------------------------------- search order


async def test_by_default_the_first_usable_provider_searches_alone(
    three: dict[str, str],
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
    google_server: FakeHTTPServer,
    scholar_server: FakeHTTPServer,
) -> None:
    state = await _research(_settings(three, tmp_path))
    # The default list: Tavily and Google have keys; Semantic Scholar has none and nobody
    # asked for papers, so it does not take part.
    assert state.search_providers == ["tavily", "google"]
    assert state.options.search.strategy == "priority"
    assert all(providers == ["tavily"] for providers in _searched(state))
    assert len(tavily_server.requests_to(TAVILY_PATH)) == len(state.sub_queries)
    assert google_server.requests_to(GOOGLE_PATH) == []
    assert scholar_server.requests_to(SCHOLAR_PATH) == []
    assert state.warnings == []  # nothing to say about the providers left out


async def test_spent_quotas_fall_back_in_the_specified_order(
    three: dict[str, str],
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
    google_server: FakeHTTPServer,
    scholar_server: FakeHTTPServer,
) -> None:
    tavily_server.fail_next(432, times=50, json={"detail": {"error": USAGE_LIMIT}})
    daily = google_error(403, "Quota exceeded for quota metric 'Queries per day'.", "")
    daily["error"]["errors"][0]["reason"] = "dailyLimitExceeded"
    google_server.fail_next(403, times=50, json=daily)
    settings = _settings(
        three, tmp_path, 'deep_research_providers = ["tavily", "google", "semantic_scholar"]'
    )
    state = await _research(settings)
    for providers in _searched(state):  # each search went down the list to the one that works
        assert providers in (
            ["semantic_scholar"],
            ["google", "semantic_scholar"],
            ["tavily", "google", "semantic_scholar"],
        )
    assert _searched(state)[0][0] == "tavily"  # the first search started at the top
    assert {s.provider for s in state.sources} == {"semantic_scholar"}
    # A spent quota is not asked again in the same round.
    assert len(tavily_server.requests_to(TAVILY_PATH)) < len(state.sub_queries) + 1
    assert any("usage limit" in w for w in state.warnings)


async def test_the_all_strategy_asks_every_provider_for_every_search(
    three: dict[str, str],
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
    google_server: FakeHTTPServer,
    scholar_server: FakeHTTPServer,
) -> None:
    settings = _settings(
        three,
        tmp_path,
        'deep_research_providers = ["tavily", "google", "semantic_scholar"]\n'
        'deep_research_search_strategy = "all"',
    )
    state = await _research(settings)
    everyone = ["tavily", "google", "semantic_scholar"]
    assert state.options.search.strategy == "all"
    assert all(providers == everyone for providers in _searched(state))
    count = len(state.sub_queries)
    assert len(tavily_server.requests_to(TAVILY_PATH)) == count
    assert len(google_server.requests_to(GOOGLE_PATH)) == count
    assert len(scholar_server.requests_to(SCHOLAR_PATH)) == count
    assert {s.provider for s in state.sources} == set(everyone)
