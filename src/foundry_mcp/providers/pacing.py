"""When a provider request may go: even spacing under a rate limit, and the backoff of a retry.

Time is injected (``Clock``, ``Sleep``) so that the policy's tests and benchmarks run on a fake
clock.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

import anyio

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 20.0


class RateLimiter:
    """Spaces requests evenly: at most one every ``60 / requests_per_minute`` seconds.

    A token bucket holding one token: no bursts, so no 1-second window ever holds more than
    rpm/60 grants (the per-second limits providers enforce, not only the per-minute ones).
    Grants are first come, first served.
    """

    def __init__(self, requests_per_minute: float, clock: Clock, sleep: Sleep) -> None:
        self.interval = 60.0 / requests_per_minute
        self._clock = clock
        self._sleep = sleep
        self._next = float("-inf")
        self._lock = anyio.Lock()

    async def acquire(self) -> None:
        """Wait for this caller's turn."""
        async with self._lock:
            wait = self._next - self._clock()
            if wait > 0:
                await self._sleep(wait)
            # From the actual time of the grant: a late wake-up never lets the next one in early.
            self._next = max(self._clock(), self._next) + self.interval


def backoff_delay(
    attempt: int,
    retry_after: float | None,
    *,
    base: float = BACKOFF_BASE_SECONDS,
    cap: float = BACKOFF_CAP_SECONDS,
    rand: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0).

    Without ``retry_after``: "equal jitter" over ``min(cap, base * 2**attempt)``, i.e. between
    half of it and all of it. With ``retry_after``: that delay plus up to 10% (at most 1 s) of
    jitter, so callers told the same delay do not all come back at the same instant.
    """
    if retry_after is not None:
        return retry_after + min(1.0, 0.1 * retry_after) * rand()
    ceiling = min(cap, base * 2.0**attempt)
    return ceiling / 2 + (ceiling / 2) * rand()
