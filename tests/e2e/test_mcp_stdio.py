"""foundry-mcp as an editor starts it: a subprocess speaking MCP over stdio."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.types import TextResourceContents

from tests.e2e.conftest import Since, call, editor_stdio, run_to_end
from tests.fakes import FakeHTTPServer
from tests.support import assert_citations_resolve, served_urls

pytestmark = [pytest.mark.anyio, pytest.mark.stdio]


async def test_whole_research_over_stdio(editor: Client, shared_tavily: FakeHTTPServer) -> None:
    searches = Since(shared_tavily)
    started = await call(editor, action="deep-research", query="How does WAL mode work in SQLite?")
    assert started["success"], started
    research_id = started["data"]["research_id"]
    final = await run_to_end(editor, research_id)
    assert final["status"] == "completed", final

    report = await call(editor, action="deep-research-report", research_id=research_id)
    assert_citations_resolve(report["data"]["report"], served_urls(searches))

    resource = await editor.read_resource(f"research://{research_id}/report")
    content = resource.contents[0]
    assert isinstance(content, TextResourceContents)
    assert content.text == report["data"]["report"]


async def test_a_new_server_process_sees_earlier_research(
    research_env: dict[str, str],
) -> None:
    async with editor_stdio(research_env) as client:
        started = await call(client, action="deep-research", query="What is a bloom filter?")
        research_id = started["data"]["research_id"]
        await run_to_end(client, research_id)
    # The editor restarts: a fresh process reads the same store.
    async with editor_stdio(research_env) as client:
        status = await call(client, action="deep-research-status", research_id=research_id)
        assert status["data"]["status"] == "completed"
        listed = await call(client, action="deep-research-list", completed_only=True)
        assert [i["research_id"] for i in listed["data"]["items"]] == [research_id]


async def test_research_left_running_by_a_stopped_server_is_interrupted_and_resumable(
    research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 3.0
    async with editor_stdio(research_env) as client:
        started = await call(client, action="deep-research", query="How do B+ trees split?")
        research_id = started["data"]["research_id"]
    # Closing stdin ends the server; the running research must not be lost.
    openai_server.latency = 0
    async with editor_stdio(research_env) as client:
        status = await call(client, action="deep-research-status", research_id=research_id)
        assert status["data"]["status"] == "interrupted"
        resumed = await call(client, action="deep-research-resume", research_id=research_id)
        assert resumed["success"], resumed
        final = await run_to_end(client, research_id)
        assert final["status"] == "completed"
