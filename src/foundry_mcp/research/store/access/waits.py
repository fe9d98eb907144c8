"""Waiting for another process's write by reading the store again and again.

The SQLite store waits this way (a read costs microseconds there); the PostgreSQL store does
while its listening connection is down (:mod:`foundry_mcp.research.store.postgres.notify`).
Each read runs on a worker thread: a read that waits on the disk or a lock never holds up the
event loop. The SQLite store's status waits share one poll (:class:`SharedChangePoll`): one
read of every waited research's fingerprint each :data:`POLL_SECONDS`, however many wait.

A poll only finds other processes' writes: a save of this process ends the waits on its
research at once (:meth:`SharedChangePoll.wake`), and a cancel asked here stops the run here at
once. So the poll is slow enough to cost a server nothing it would notice (each read is a hop
to a worker thread and back, a fifth of a millisecond of the event loop) and quick enough for
a person watching another process's research.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import anyio

from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.records import Fingerprint

POLL_SECONDS = 0.25

log = logging.getLogger(__name__)


class _Readable(Protocol):
    def fingerprint(self, research_id: str) -> Fingerprint | None: ...

    def cancel_requests(self, owner: Owner, research_ids: Iterable[str]) -> set[str]: ...


async def poll_for_change(
    store: _Readable, research_id: str, timeout: float, since: Fingerprint | None = None
) -> bool:
    """True once the research's fingerprint differs from ``since`` (default: the one it has
    now), False after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    seen = (
        await anyio.to_thread.run_sync(store.fingerprint, research_id) if since is None else since
    )
    while True:
        if await anyio.to_thread.run_sync(store.fingerprint, research_id) != seen:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        await anyio.sleep(min(POLL_SECONDS, left))


async def poll_for_cancel(
    store: _Readable, owner: Owner, research_ids: Iterable[str], timeout: float
) -> set[str]:
    """The ids of ``research_ids`` someone asked to cancel, once there are any; empty after
    ``timeout`` seconds."""
    ids = list(research_ids)
    deadline = time.monotonic() + timeout
    while True:
        asked = await anyio.to_thread.run_sync(store.cancel_requests, owner, ids)
        if asked:
            return asked
        left = deadline - time.monotonic()
        if left <= 0:
            return set()
        await anyio.sleep(min(POLL_SECONDS, left))


class SharedChangePoll:
    """The waits for a research's change (``Store.wait_for_change``) of one store, answered by
    one poll: each :data:`POLL_SECONDS`, one ``read`` of the fingerprints of every research
    waited on (on a worker thread) wakes the waits whose research moved. Thirty-two status
    long polls cost one read a poll, not thirty-two thread hops."""

    def __init__(self, read: Callable[[Sequence[str]], dict[str, Fingerprint]]) -> None:
        self._read = read
        self._waits: dict[asyncio.Future[bool], tuple[str, Fingerprint | None]] = {}
        self._poller: asyncio.Task[None] | None = None

    async def wait(
        self, research_id: str, timeout: float, since: Fingerprint | None = None
    ) -> bool:
        """True once the research's fingerprint differs from ``since`` (default: the one it
        has now), or may (a read failed: the caller reads it again); False after ``timeout``."""
        if since is None:
            since = (await anyio.to_thread.run_sync(self._read, [research_id])).get(research_id)
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[bool] = loop.create_future()
        self._waits[woken] = (research_id, since)
        poller = self._poller
        if poller is None or poller.done() or poller.get_loop() is not loop:
            self._poller = loop.create_task(self._poll(), name="store-change-poll")
        try:
            with anyio.move_on_after(timeout):
                return await woken
        finally:
            self._waits.pop(woken, None)
        return False

    def wake(self, research_id: str) -> None:
        """This process saved the research: its waits end now, not at the next poll (call on
        the loop)."""
        for woken, (waited, _) in list(self._waits.items()):
            if waited == research_id and not woken.done():
                woken.set_result(True)

    async def _poll(self) -> None:
        while self._waits:
            waits = dict(self._waits)
            ids = sorted({research_id for research_id, _ in waits.values()})
            try:
                now: dict[str, Fingerprint] | None = await anyio.to_thread.run_sync(self._read, ids)
            except Exception:  # the waits read again, and find out for themselves
                log.warning("could not read the research store's fingerprints", exc_info=True)
                now = None
            for woken, (research_id, seen) in waits.items():
                if not woken.done() and (now is None or now.get(research_id) != seen):
                    woken.set_result(True)
            await anyio.sleep(POLL_SECONDS)
        self._poller = None
