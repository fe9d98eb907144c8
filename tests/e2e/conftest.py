"""Helpers for driving foundry-mcp through a real MCP client session."""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo
from typing import Any

import anyio
import pytest
from mcp import Client

from foundry_mcp.research.models import base as model_base
from foundry_mcp.server.envelope import compact_text

TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted", "waiting"}


async def call(client: Client, **arguments: Any) -> dict[str, Any]:
    """Call the research tool and return its envelope (checked to match the text content)."""
    result = await client.call_tool("research", arguments)
    envelope = result.structured_content
    assert envelope is not None, result
    text = result.content[0].text  # type: ignore[union-attr]
    assert text == compact_text(envelope)  # the same JSON, compact: one line, no nulls
    assert result.is_error == (not envelope["success"])
    return envelope


async def run_to_end(client: Client, research_id: str, timeout: float = 60) -> dict[str, Any]:
    """Long-poll status until the research ends."""
    with anyio.fail_after(timeout):
        while True:
            envelope = await call(
                client,
                action="deep-research-status",
                research_id=research_id,
                wait=True,
                wait_timeout=2,
            )
            assert envelope["success"], envelope
            if envelope["data"]["status"] in TERMINAL:
                return envelope["data"]


class MovedClock(datetime):
    """The research's clock (``utcnow``), ``ahead`` of the real one."""

    ahead = timedelta()

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        return datetime.now(tz) + cls.ahead


@pytest.fixture
def research_clock(monkeypatch: pytest.MonkeyPatch) -> type[MovedClock]:
    """The research's clock for this test: move it on with ``research_clock.ahead += ...``."""

    class Clock(MovedClock):
        ahead = timedelta()

    monkeypatch.setattr(model_base, "datetime", Clock)
    return Clock
