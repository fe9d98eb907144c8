"""The team benchmark's load clients (``benchmarks/team/raw.py``) send what the SDK's client
sends: against a stateless team server, their handshake succeeds and their calls get the answers
the SDK's client gets, through the same path (so the benchmark's load is what real clients'
would be, without the SDK's CPU in the benchmark's process)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from benchmarks.team.raw import RawCallFailed, raw_client
from tests.e2e.conftest import call
from tests.e2e.teamserver import TeamServer, add_to_config, mcp_client
from tests.fakes import FakeHTTPServer

pytestmark = pytest.mark.anyio

ALICE = "alice-token-raw-5b8e2c4a1d"


@pytest.fixture
def server(research_env: dict[str, str], tavily_server: FakeHTTPServer) -> Iterator[TeamServer]:
    add_to_config(research_env, "[server]\nstateless = true\n")
    with TeamServer({**research_env, "FOUNDRY_MCP_TOKENS": f"alice:{ALICE}"}) as team_server:
        yield team_server


async def test_the_raw_client_gets_the_answers_the_sdks_client_gets(server: TeamServer) -> None:
    transport = httpx2.AsyncHTTPTransport()
    async with raw_client(server.url, ALICE, transport=transport) as raw:
        started = await raw.call_research(
            action="deep-research", query="How does a B-tree split a page?", effort="quick"
        )
        assert started["success"], started
        research_id = started["data"]["research_id"]
        by_raw = await raw.call_research(action="deep-research-status", research_id=research_id)
    async with mcp_client(server.url, ALICE) as sdk:
        by_sdk = await call(sdk, action="deep-research-status", research_id=research_id)
    assert by_raw["success"] and by_sdk["success"]
    assert by_raw["data"]["research_id"] == by_sdk["data"]["research_id"] == research_id
    assert by_raw["data"]["query"] == by_sdk["data"]["query"]
    assert set(by_raw["data"]) == set(by_sdk["data"])


async def test_the_raw_client_says_when_the_server_refuses_it(server: TeamServer) -> None:
    with pytest.raises(RawCallFailed, match="HTTP 401"):
        async with raw_client(server.url, "not-a-token", transport=httpx2.AsyncHTTPTransport()):
            pass
