"""A stateless team server answers a plain tool call (a status poll, a start, a report) and the
handshake without an MCP session (``server.team.quick_answers``): the same answer as the SDK's path,
as JSON, for the same callers. Everything else, and every request the SDK would refuse, still
goes through the SDK.

A ``foundry-mcp serve --http`` subprocess in stateless mode, with two principals' tokens (one
per test where the test must be its first caller, else one for the module); raw HTTP requests
show which path answered (``application/json`` here, an event stream from
the SDK), the SDK's client shows that its answers are valid results.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from tests.e2e.conftest import call, run_to_end
from tests.e2e.teamserver import TeamServer, add_to_config, bearer, mcp_client
from tests.fakes import FakeHTTPServer

pytestmark = pytest.mark.anyio

ALICE = "alice-token-quick-3f9a1c7e5b"
BOB = "bob-token-quick-8e2d4a6c0f"
QUESTION = "How does WAL mode work in SQLite?"
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}
# Fields of a status that move between two reads of the same research.
MOVING = {"elapsed_s", "stale", "next_action"}


def status_request(research_id: str, **more: Any) -> dict[str, Any]:
    arguments = {"action": "deep-research-status", "research_id": research_id, **more}
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "research", "arguments": arguments},
    }


def post(
    server: TeamServer, body: dict[str, Any], token: str | None = ALICE, **headers: str
) -> httpx.Response:
    return server.http.post(
        server.url, content=json.dumps(body), headers={**HEADERS, **bearer(token), **headers}
    )


def sse_result(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an event-stream answer."""
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1]))


def still(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in MOVING}


def stateless_server(research_env: dict[str, str]) -> TeamServer:
    """A stateless server with two principals' tokens (not yet started: enter it)."""
    add_to_config(research_env, "[server]\nstateless = true\n")
    return TeamServer({**research_env, "FOUNDRY_MCP_TOKENS": f"alice:{ALICE},bob:{BOB}"})


@pytest.fixture
def server(research_env: dict[str, str], tavily_server: FakeHTTPServer) -> Iterator[TeamServer]:
    """A stateless server of this test alone: its first request is the test's own."""
    with stateless_server(research_env) as team_server:
        yield team_server


@pytest.fixture(scope="module")
def shared_server(module_research_env: dict[str, str]) -> Iterator[TeamServer]:
    """A stateless server for the tests that do not need to be its first caller: each makes a
    research of its own (or only asks to be let in)."""
    with stateless_server(module_research_env) as team_server:
        yield team_server


async def _completed_research(server: TeamServer) -> str:
    async with mcp_client(server.url, ALICE) as client:
        started = await call(client, action="deep-research", query=QUESTION, effort="quick")
        assert started["success"], started
        research_id = str(started["data"]["research_id"])
        final = await run_to_end(client, research_id)
        assert final["status"] == "completed", final
        answered = await call(client, action="deep-research-status", research_id=research_id)
        assert answered["success"] and answered["data"]["research_id"] == research_id
    return research_id


async def test_a_plain_status_poll_is_answered_as_json_with_the_sdks_answer(
    shared_server: TeamServer,
) -> None:
    team_server = shared_server
    research_id = await _completed_research(team_server)
    quick = post(team_server, status_request(research_id))
    assert quick.status_code == 200
    assert quick.headers["content-type"] == "application/json"
    answer = quick.json()
    assert answer["jsonrpc"] == "2.0" and answer["id"] == 7
    # The same call with a progress token goes through the SDK (it may send notifications).
    through_sdk = status_request(research_id)
    through_sdk["params"]["_meta"] = {"progressToken": "p1"}
    slow = post(team_server, through_sdk)
    assert slow.headers["content-type"].startswith("text/event-stream")
    expected = sse_result(slow)["result"]
    result = answer["result"]
    assert result["isError"] is False and expected["isError"] is False
    assert still(result["structuredContent"]["data"]) == still(
        expected["structuredContent"]["data"]
    )
    assert json.loads(result["content"][0]["text"])["data"]["research_id"] == research_id


async def test_calls_that_need_a_session_go_to_the_sdk(
    shared_server: TeamServer,
) -> None:
    team_server = shared_server
    research_id = await _completed_research(team_server)
    waiting = post(team_server, status_request(research_id, wait=True, wait_timeout=0))
    assert waiting.headers["content-type"].startswith("text/event-stream")
    with_progress = status_request(research_id)
    with_progress["params"]["_meta"] = {"progressToken": "p1"}
    assert post(team_server, with_progress).headers["content-type"].startswith("text/event-stream")
    not_json = post(team_server, status_request(research_id), Accept="application/json")
    assert not_json.status_code == 406  # the SDK's own refusal: an event stream must be accepted


async def test_a_plain_start_and_report_are_answered_as_json(server: TeamServer) -> None:
    start = status_request("unused")
    start["params"]["arguments"] = {"action": "deep-research", "query": QUESTION, "effort": "quick"}
    started = post(server, start)
    assert started.headers["content-type"] == "application/json"
    envelope = started.json()["result"]["structuredContent"]
    assert envelope["success"], envelope
    research_id = envelope["data"]["research_id"]
    async with mcp_client(server.url, ALICE) as client:
        final = await run_to_end(client, research_id)
    assert final["status"] == "completed", final

    report = status_request(research_id)
    report["params"]["arguments"] = {"action": "deep-research-report", "research_id": research_id}
    quick = post(server, report)
    assert quick.headers["content-type"] == "application/json"
    report["params"]["_meta"] = {"progressToken": "p2"}  # the SDK's path, for comparison
    through_sdk = post(server, report)
    assert through_sdk.headers["content-type"].startswith("text/event-stream")
    quick_result, sdk_result = quick.json()["result"], sse_result(through_sdk)["result"]
    assert quick_result["isError"] is sdk_result["isError"] is False
    assert quick_result["structuredContent"]["data"] == sdk_result["structuredContent"]["data"]
    # Another principal's research is unknown to bob here too.
    refused = post(server, report, token=BOB)
    assert sse_result(refused)["result"]["structuredContent"]["data"]["error_code"] == (
        "RESEARCH_NOT_FOUND"
    )


async def test_the_quick_path_serves_only_whom_the_sdk_serves(
    shared_server: TeamServer,
) -> None:
    team_server = shared_server
    research_id = await _completed_research(team_server)
    assert post(team_server, status_request(research_id), token=None).status_code == 401
    assert post(team_server, status_request(research_id), token="wrong").status_code == 401
    assert post(team_server, status_request(research_id), Host="evil.example").status_code == 421
    # Another principal's research is unknown to bob, as on the SDK's path.
    refused = post(team_server, status_request(research_id), token=BOB).json()["result"]
    assert refused["isError"] is True
    assert refused["structuredContent"]["data"]["error_code"] == "RESEARCH_NOT_FOUND"


async def test_a_bad_status_call_gets_the_sdks_error(server: TeamServer) -> None:
    team_server = server
    unknown = post(team_server, status_request("deepres-000000000000")).json()["result"]
    assert unknown["isError"] is True
    assert unknown["structuredContent"]["data"]["error_code"] == "RESEARCH_NOT_FOUND"
    escaping = post(team_server, status_request("../../etc/passwd")).json()["result"]
    assert escaping["isError"] is True
    assert escaping["structuredContent"]["data"]["error_code"] == "INVALID_RESEARCH_ID"
    malformed = post(team_server, status_request("deepres-000000000000", wait_timeout="soon"))
    assert malformed.headers["content-type"].startswith("text/event-stream")  # not parsed here
    assert sse_result(malformed)["result"]["isError"] is True


def initialize_request(request_id: int, client: str, version: str = "2025-06-18") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1.0"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def post_initialize(server: TeamServer, body: dict[str, Any], token: str | None) -> httpx.Response:
    """An ``initialize`` without a protocol version header, as a client sends it."""
    headers = {**HEADERS, **bearer(token)}
    del headers["MCP-Protocol-Version"]
    return server.http.post(server.url, content=json.dumps(body), headers=headers)


def initialize(server: TeamServer, body: dict[str, Any], token: str | None = ALICE) -> Any:
    """The JSON-RPC answer to an ``initialize``, and the response's content type."""
    response = post_initialize(server, body, token)
    assert response.status_code == 200, response.text
    kind = response.headers["content-type"]
    return (response.json() if kind == "application/json" else sse_result(response)), kind


async def test_the_handshake_is_answered_with_the_sdks_own_answer(server: TeamServer) -> None:
    first, first_kind = initialize(server, initialize_request(1, "editor-one"))
    again, again_kind = initialize(server, initialize_request(2, "editor-two"), token=BOB)

    assert first_kind.startswith("text/event-stream")  # the SDK answered the first
    assert again_kind == "application/json"  # the next one like it, here
    assert again == {**first, "id": 2}
    assert first["result"]["serverInfo"]["name"] == "foundry-mcp"
    # Another protocol version is another kind: the SDK answers it, and picks its version.
    older, older_kind = initialize(server, initialize_request(3, "editor-one", "2025-03-26"))
    assert older_kind.startswith("text/event-stream")
    assert older["result"]["protocolVersion"] == "2025-03-26"
    accepted = post(server, INITIALIZED)
    assert accepted.status_code == 202 and accepted.content == b""
    # The SDK's client connects through it and works.
    async with mcp_client(server.url, ALICE) as client:
        listed = await call(client, action="deep-research-list")
        assert listed["success"], listed


async def test_a_crowd_connecting_at_once_builds_one_sdk_session(server: TeamServer) -> None:
    """Twenty editors sending ``initialize`` together: the SDK answers the first, the rest wait
    for its answer and get it (with their own ids) instead of each building a session."""
    headers = {**HEADERS, **bearer(ALICE)}
    del headers["MCP-Protocol-Version"]
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        responses: list[httpx.Response] = []

        async def connect(index: int) -> None:
            body = json.dumps(initialize_request(index, f"editor-{index}"))
            responses.append(await client.post(server.url, content=body, headers=headers))

        async with anyio.create_task_group() as crowd:
            for index in range(1, 21):
                crowd.start_soon(connect, index)
    assert all(response.status_code == 200 for response in responses)
    kinds = [response.headers["content-type"] for response in responses]
    assert sum(kind.startswith("text/event-stream") for kind in kinds) == 1, kinds
    answers = [
        r.json() if r.headers["content-type"] == "application/json" else sse_result(r)
        for r in responses
    ]
    assert sorted(answer["id"] for answer in answers) == list(range(1, 21))
    assert len({json.dumps(answer["result"], sort_keys=True) for answer in answers}) == 1


async def test_the_handshake_is_answered_only_to_whom_the_sdk_serves(
    shared_server: TeamServer,
) -> None:
    server = shared_server
    initialize(server, initialize_request(1, "editor-one"))  # remembered from here on

    for token in (None, "wrong"):
        refused = post_initialize(server, initialize_request(2, "editor-two"), token)
        assert refused.status_code == 401
        assert post(server, INITIALIZED, token=token).status_code == 401
    assert post(server, INITIALIZED, Host="evil.example").status_code == 421
