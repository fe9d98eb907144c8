"""foundry-mcp as an editor starts it: a subprocess speaking MCP over stdio."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextResourceContents

from tests.e2e.conftest import call, run_to_end
from tests.fakes import FakeHTTPServer
from tests.support import assert_citations_resolve, served_urls

pytestmark = [pytest.mark.anyio, pytest.mark.stdio]


def _stdio(env: dict[str, str], elicitation_callback: Any = None) -> Client:
    # Like an editor: only a few variables of the shell, plus the config's env block.
    base = {key: os.environ[key] for key in ("PATH", "LANG", "SYSTEMROOT") if key in os.environ}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "foundry_mcp"], env={**base, **env}
    )
    return Client(params, mode="legacy", elicitation_callback=elicitation_callback)


async def test_whole_research_over_stdio(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    async with _stdio(research_env) as client:
        started = await call(
            client, action="deep-research", query="How does WAL mode work in SQLite?"
        )
        assert started["success"], started
        research_id = started["data"]["research_id"]
        final = await run_to_end(client, research_id)
        assert final["status"] == "completed", final

        report = await call(client, action="deep-research-report", research_id=research_id)
        assert_citations_resolve(report["data"]["report"], served_urls(tavily_server))

        resource = await client.read_resource(f"research://{research_id}/report")
        content = resource.contents[0]
        assert isinstance(content, TextResourceContents)
        assert content.text == report["data"]["report"]


async def test_a_new_server_process_sees_earlier_research(
    research_env: dict[str, str],
) -> None:
    async with _stdio(research_env) as client:
        started = await call(client, action="deep-research", query="What is a bloom filter?")
        research_id = started["data"]["research_id"]
        await run_to_end(client, research_id)
    # The editor restarts: a fresh process reads the same store.
    async with _stdio(research_env) as client:
        status = await call(client, action="deep-research-status", research_id=research_id)
        assert status["data"]["status"] == "completed"
        listed = await call(client, action="deep-research-list", completed_only=True)
        assert [i["research_id"] for i in listed["data"]["items"]] == [research_id]


async def test_research_left_running_by_a_stopped_server_is_interrupted_and_resumable(
    research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 3.0
    async with _stdio(research_env) as client:
        started = await call(client, action="deep-research", query="How do B+ trees split?")
        research_id = started["data"]["research_id"]
    # Closing stdin ends the server; the running research must not be lost.
    openai_server.latency = 0
    async with _stdio(research_env) as client:
        status = await call(client, action="deep-research-status", research_id=research_id)
        assert status["data"]["status"] == "interrupted"
        resumed = await call(client, action="deep-research-resume", research_id=research_id)
        assert resumed["success"], resumed
        final = await run_to_end(client, research_id)
        assert final["status"] == "completed"
