"""The notes fake answers over stdio as the SDK's own server answers: the MCP source tests talk
to it believing it is an SDK server (tests/fakes/notes_mcp_server.py)."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.fakes.notes_mcp_server import sdk_server

pytestmark = pytest.mark.anyio

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_notes", {"query": "Which store does the team server use?"}),
    ("search_notes", {"query": "nothing of the kind"}),
    ("list_notes", {}),
    ("read_note", {"path": "howto/release.md"}),
    ("read_note", {"path": "no/such/note.md"}),
]


def _stdio_fake(env: dict[str, str] | None = None) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tests.fakes.notes_mcp_server"], env=env
    )
    return Client(params, mode="legacy")


async def _answers(client: Client) -> dict[str, Any]:
    tools = await client.list_tools()
    calls = [
        (await client.call_tool(name, arguments)).model_dump(mode="json")
        for name, arguments in CALLS
    ]
    return {
        "server": client.server_info.model_dump(mode="json"),
        "capabilities": client.server_capabilities.model_dump(mode="json"),
        "protocol": client.protocol_version,
        "tools": [tool.model_dump(mode="json") for tool in tools.tools],
        "calls": calls,
    }


async def test_the_stdio_fake_answers_as_the_sdks_server_does() -> None:
    async with Client(sdk_server(), mode="legacy") as sdk, _stdio_fake() as fake:
        expected, answered = await _answers(sdk), await _answers(fake)
    assert answered == expected
    assert [tool["name"] for tool in answered["tools"]] == [
        "search_notes",
        "list_notes",
        "read_note",
        "delete_note",
    ]


async def test_a_cancelled_call_is_dropped_and_the_fake_keeps_answering(
    tmp_path: Any,
) -> None:
    calls = tmp_path / "calls.jsonl"
    env = {"NOTES_HANG": "call", "NOTES_CALL_LOG": str(calls), "PATH": ""}
    async with _stdio_fake(env) as fake:
        with anyio.move_on_after(0.5) as waited:
            await fake.call_tool("list_notes", {})
        assert waited.cancelled_caught  # the call hangs, as NOTES_HANG=call asks
        # The cancelled call's task is gone; the server still answers.
        assert len((await fake.list_tools()).tools) == 4
    assert calls.read_text().count("list_notes") == 1
