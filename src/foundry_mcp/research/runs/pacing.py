"""How fast a server begins new runs: a few at once, then a steady rate.

A team server can be handed dozens of research in the same second: every client of a team
starting at nine o'clock, or a worker taking over the runs of one that died. Begun together,
their first steps (planning, the first LLM calls, the first saves) all fall into the same few
hundred milliseconds of the event loop, and every status poll answered meanwhile waits behind
them; begun together, they also stay in step, and their later phases collide again. So
:class:`Pacer` lets ``burst`` runs begin at once and the rest at ``rate`` a second, in the order
they arrived (the generic cell rate algorithm: each caller reserves the next slot before it
sleeps). A research waiting for its turn is already saved and claimed; its status says
``running``, and a cancel stops it before it begins.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio

RUNS_PER_SECOND = 20.0  # after the burst; a research runs for minutes, so this costs little
RUN_BURST = 4  # begun at once: a user's few research never wait


class Pacer:
    """At most ``burst`` callers pass at once, then one every ``1 / rate`` seconds, in order."""

    def __init__(
        self,
        rate: float = RUNS_PER_SECOND,
        burst: int = RUN_BURST,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a pacer needs a positive rate and a burst of at least one")
        self._interval = 1.0 / rate
        self._burst_span = (burst - 1) * self._interval
        self._clock = clock
        self._sleep = sleep
        self._next_slot = float("-inf")  # the theoretical time of the next caller

    async def turn(self) -> float:
        """Wait for this caller's slot; the seconds it waited."""
        now = self._clock()
        slot = max(self._next_slot, now)
        self._next_slot = slot + self._interval
        wait = slot - self._burst_span - now
        if wait <= 0:
            return 0.0
        await self._sleep(wait)
        return wait
