"""Runs begin at a paced rate: a few at once, then one by one; a research waiting for its turn
is cancelled, or interrupted by a stopping server, as at any other step."""

from __future__ import annotations

import contextlib

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import InvalidStateError
from foundry_mcp.research.runs.pacing import Pacer
from foundry_mcp.runtime import research_runtime
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


class FakeTime:
    """A clock that moves only when the pacer sleeps; the sleeps asked are recorded."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))


async def test_a_burst_passes_at_once_and_the_rest_one_slot_apart() -> None:
    time = FakeTime()
    pacer = Pacer(rate=10, burst=3, clock=time.clock, sleep=time.sleep)

    waits = [await pacer.turn() for _ in range(6)]

    assert waits == pytest.approx([0, 0, 0, 0.1, 0.2, 0.3])
    assert time.slept == pytest.approx([0.1, 0.2, 0.3])


async def test_the_burst_is_whole_again_after_a_quiet_spell() -> None:
    time = FakeTime()
    pacer = Pacer(rate=10, burst=2, clock=time.clock, sleep=time.sleep)
    for _ in range(4):
        await pacer.turn()

    time.now += 10.0
    waits = [await pacer.turn() for _ in range(3)]

    assert waits == pytest.approx([0, 0, 0.1])


def test_a_pacer_needs_a_rate_and_a_burst() -> None:
    with pytest.raises(ValueError):
        Pacer(rate=0)
    with pytest.raises(ValueError):
        Pacer(burst=0)


async def test_a_research_cancelled_while_waiting_its_turn_is_recorded_cancelled(
    settings: Settings,
) -> None:
    async with research_runtime(settings, warm=False, serving=False) as service:
        service.jobs._pacer = Pacer(rate=0.1, burst=1)  # the second run waits 10 s
        first = await service.start("What is a rope data type?", max_iterations=1)
        second = await service.start("What is a skip list?", max_iterations=1)
        await anyio.sleep(0.3)
        assert service.jobs.is_running(second["research_id"])

        with anyio.fail_after(5):  # long before its turn
            await service.cancel(second["research_id"])
            final = await wait_until(service, second["research_id"], TERMINAL)
        events = await service.io.read(lambda store: store.events(second["research_id"], 0, 100))
        with contextlib.suppress(InvalidStateError):  # unless it has finished meanwhile
            await service.cancel(first["research_id"])

    assert final["status"] == "cancelled", final
    assert "run_started" not in [event.kind for event in events]


async def test_a_research_waiting_its_turn_when_the_server_stops_is_interrupted(
    settings: Settings,
) -> None:
    with anyio.fail_after(5):  # the stop does not wait for the turn (10 s away)
        async with research_runtime(settings, warm=False, serving=False) as service:
            service.jobs._pacer = Pacer(rate=0.1, burst=1)
            await service.start("What is a rope data type?", max_iterations=1)
            waiting = await service.start("What is a skip list?", max_iterations=1)
            await anyio.sleep(0.3)
    async with research_runtime(settings, warm=False, serving=False) as service:
        status = await service.status(waiting["research_id"])

    assert status["status"] == "interrupted", status
