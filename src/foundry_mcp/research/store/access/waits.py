"""Waiting for another process's write by reading the store again and again.

The SQLite store waits this way (a read costs microseconds there); the PostgreSQL store does
while its listening connection is down (:mod:`foundry_mcp.research.store.postgres.notify`).
Each read runs on a worker thread: a read that waits on the disk or a lock never holds up the
event loop.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Protocol

import anyio

from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.records import Fingerprint

POLL_SECONDS = 0.05


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
