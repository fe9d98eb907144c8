"""The trace of a research's provider calls: each call names the one it came after, and the
critical path walks back from the last call along those links."""

from __future__ import annotations

import time

import anyio
import pytest

from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.llm.routing import CallLog
from foundry_mcp.research.llm.trace import critical_path

pytestmark = pytest.mark.anyio


async def test_a_call_after_a_fan_out_comes_after_the_child_that_ended_last() -> None:
    calls = CallLog()
    events: list[dict[str, object]] = []

    async def llm(purpose: str, seconds: float) -> None:
        ticket = calls.depart(purpose, time.perf_counter())
        await anyio.sleep(seconds)
        events.append({**calls.land(ticket), "phase": purpose})

    async def search(seconds: float) -> None:
        with calls.waiting("search") as traced:
            await anyio.sleep(seconds)
        events.append({**traced, "phase": "gathering"})

    async def flow() -> None:
        await llm("planning", 0.01)
        await fan_out(search, [0.01, 0.08, 0.03])
        await llm("synthesis", 0.01)

    async with anyio.create_task_group() as group:  # beside it, a flow of its own
        group.start_soon(flow)
        group.start_soon(llm, "other", 0.005)

    by_phase = {e["phase"]: e for e in events if e["phase"] != "gathering"}
    searches = sorted((e for e in events if e["phase"] == "gathering"), key=lambda e: e["end_s"])
    assert by_phase["planning"]["after"] is None and by_phase["other"]["after"] is None
    assert all(e["after"] == by_phase["planning"]["step"] for e in searches)
    assert by_phase["synthesis"]["after"] == searches[-1]["step"]  # the slowest child
    path = critical_path(events)
    assert [p.phase for p in path] == ["planning", "gathering", "synthesis"]
    assert [p.kind for p in path] == ["llm", "search", "llm"]
    assert path[1].end_s - path[1].start_s >= 0.07
