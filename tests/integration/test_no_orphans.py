"""A run that fails mid-gathering takes its children with it: no request starts after it ended.

One sub-query's search raises an unexpected exception (a bug, not a provider failure) while the
other sub-queries are slow, queued, or about to be hedged. The research ends ``failed``; from
the moment its status is terminal, the fake providers receive nothing more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.providers.search.base import SearchResult
from foundry_mcp.providers.search.tavily import TavilySearch
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, FakeResponse, RecordedRequest
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUIET_SECONDS = 1.5  # how long after the end no request may arrive


def _settings(env: dict[str, str], tavily: str) -> Settings:
    config = Path(env["FOUNDRY_MCP_CONFIG"])
    config.write_text(
        "[research.fetch]\nenabled = false\n\n[providers.openai]\nmax_retries = 0\n\n"
        f"[providers.tavily]\n{tavily}\n"
    )
    home = Path(env["HOME"])
    return load_settings(env=env, cwd=home, home=home)


def _first_search_crashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the first Tavily search raise a plain RuntimeError after 0.2 s; the rest go on."""
    queries: list[str] = []
    search = TavilySearch.search

    async def crashing(self: TavilySearch, query: str, max_results: int) -> list[SearchResult]:
        queries.append(query)
        if len(queries) == 1:
            await anyio.sleep(0.2)
            raise RuntimeError("an unexpected bug in one search")
        found: list[SearchResult] = await search(self, query, max_results)
        return found

    monkeypatch.setattr(TavilySearch, "search", crashing)
    return queries


async def _run_until_failed(
    settings: Settings, servers: list[FakeHTTPServer], **limits: Any
) -> None:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(
            "How do heat pumps work in winter?", max_iterations=1, **limits
        )
        status = await wait_until(service, started["research_id"], TERMINAL)
        at_the_end = [len(server.requests) for server in servers]
        assert status["status"] == "failed"
        assert "internal error" in status["error"]
        await anyio.sleep(QUIET_SECONDS)
        assert [len(server.requests) for server in servers] == at_the_end
    assert [len(server.requests) for server in servers] == at_the_end


async def test_queued_sub_queries_never_start_after_a_crash(
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queries = _first_search_crashes(monkeypatch)
    tavily_server.latency = 0.8
    settings = _settings(research_env, "max_retries = 0")
    # One sub-query at a time: the other two wait their turn when the first crashes.
    await _run_until_failed(settings, [tavily_server, openai_server], max_concurrent=1)
    assert len(queries) == 1


async def test_slow_searches_are_not_hedged_or_retried_after_a_crash(
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _first_search_crashes(monkeypatch)

    def hang(request: RecordedRequest, response: FakeResponse) -> float:
        return 30.0  # never answers while the test runs (released when the server stops)

    tavily_server.delay = hang
    # Hedges would start 0.5 s into each hung search, retries after its 1 s timeout.
    settings = _settings(research_env, "timeout = 1.0\nmax_retries = 2")
    await _run_until_failed(settings, [tavily_server, openai_server], max_concurrent=3)
    assert len(tavily_server.requests_to("/search")) == 2  # the two slow first attempts
