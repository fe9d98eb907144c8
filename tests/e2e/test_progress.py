"""Live status over MCP: progress notifications while a status call waits."""

from __future__ import annotations

import pytest
from mcp import Client

from foundry_mcp.config import Settings
from foundry_mcp.server import create_server
from tests.e2e.conftest import call
from tests.fakes import FakeHTTPServer

pytestmark = pytest.mark.anyio


async def test_a_waiting_status_call_sends_progress_notifications(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 3.0  # planning stays in flight for the whole wait
    received: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append((progress, total, message))

    async with Client(create_server(lambda: settings), mode="legacy") as client:
        started = await call(client, action="deep-research", query="What is a rope data type?")
        result = await client.call_tool(
            "research",
            {
                "action": "deep-research-status",
                "research_id": started["data"]["research_id"],
                "wait": True,
                "wait_timeout": 2.2,
            },
            progress_callback=on_progress,
        )
    assert result.structured_content is not None
    assert result.structured_content["data"]["phase"] == "planning"
    assert len(received) >= 2
    progress = [p for p, _, _ in received]
    assert progress == sorted(progress)  # progress only moves forward
    assert all(message and "planning" in message for _, _, message in received)
