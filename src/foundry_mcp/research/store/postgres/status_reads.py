"""Status reads of a PostgreSQL store on the event loop, through psycopg's async pool.

A status (and a long poll's fingerprint) is the call a team server answers most. The rest of
the store runs on worker threads behind ``AsyncStore`` (writes in order on one writer thread;
the run's reads beside them); these two read on the event loop itself, from an
``AsyncConnectionPool`` of their own: no thread to hand the call to and back, and no reader
thread's decoding to wait for the interpreter lock. ``benchmarks/status_reads.py`` measures
both ways, same statement, same decoding: half the CPU per status read when the state is
unchanged (the row's state is then neither sent nor decoded), and half the p99 latency with
sixteen callers at once.

The pool opens on the first read, in the event loop that reads (a pool belongs to one loop).
Its failures are the store's: the same outage state (:class:`Database`: once a call found the
database lost, status reads fail at once for a few seconds), the same errors, no password in
them. A state too large to decode in a few milliseconds is decoded in a worker thread.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import psycopg
from psycopg_pool import AsyncConnectionPool

from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.store.postgres.database import (
    POOL_TIMEOUT_SECONDS,
    Database,
    connection_options,
    iso,
    readable,
)
from foundry_mcp.research.store.postgres.leases import OWNERSHIP_COLUMNS, ownership_of
from foundry_mcp.research.store.records import (
    Fingerprint,
    StatusRead,
    research_not_found,
    validate_research_id,
)
from foundry_mcp.research.store.states import decode_state

POOL_MAX_SIZE = 4
DECODE_ON_LOOP_BYTES = 256 * 1024  # larger states are decoded in a worker thread
FINGERPRINT_QUERY = "SELECT status, phase, iteration, updated_at FROM research WHERE id = %s"

# A status in one statement: the state unless it is the one the caller read (same updated_at),
# whose it is, who holds it, and when its newest event was recorded.
STATUS_QUERY = (
    "SELECT CASE WHEN updated_at = %s THEN NULL ELSE state END, principal, "
    f"{OWNERSHIP_COLUMNS}, (SELECT at FROM events WHERE research_id = research.id "
    "ORDER BY seq DESC LIMIT 1) FROM research WHERE id = %s"
)


def status_parameters(research_id: str, known: ResearchState | None) -> tuple[Any, ...]:
    """The parameters of ``STATUS_QUERY``."""
    return (known.updated_at if known else None, research_id)


def status_read(found: Any, research_id: str, known: ResearchState | None) -> StatusRead:
    """The status in a row of ``STATUS_QUERY`` (``known`` when unchanged)."""
    if found is None:
        raise research_not_found(research_id)
    last_event = None if found[8] is None else iso(found[8])
    state = known if found[0] is None and known else decode_state(found[0], research_id)
    return StatusRead(state, ownership_of(found[2:8]), found[1], last_event)


class AsyncStatusReads:
    """``load_status`` and ``fingerprint`` of a PostgreSQL store, awaited on the event loop."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening = anyio.Lock()  # the first reads at once open one pool

    async def load_status(self, research_id: str, known: ResearchState | None = None) -> StatusRead:
        """As ``Store.load_status``: one statement, ``known`` given back when unchanged."""
        validate_research_id(research_id)
        found = await self._fetch(STATUS_QUERY, status_parameters(research_id, known))
        if found is not None and found[0] is not None and len(found[0]) > DECODE_ON_LOOP_BYTES:
            return await anyio.to_thread.run_sync(status_read, found, research_id, known)
        return status_read(found, research_id, known)

    async def fingerprint(self, research_id: str) -> Fingerprint | None:
        """As ``Store.fingerprint``: (status, phase, iteration, updated_at), or None."""
        found = await self._fetch(FINGERPRINT_QUERY, (research_id,))
        return fingerprint_of(found)

    async def aclose(self) -> None:
        """Close the pool (its connections); a later read opens a new one."""
        async with self._opening:
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close(timeout=5.0)

    async def _fetch(self, query: str, parameters: tuple[Any, ...]) -> Any:
        """The first row of ``query``, or None; the store's errors when the database is out
        of reach (at once during an outage)."""
        self._db.check_outage()
        began = time.monotonic()
        try:
            pool = await self._opened()
            async with pool.connection() as conn:
                cursor = await conn.execute(query, parameters)
                found = await cursor.fetchone()
        except psycopg.OperationalError as exc:  # includes the pool's timeout
            raise self._db.failed(exc, began) from None
        self._db.reached()
        return found

    async def _opened(self) -> AsyncConnectionPool[Any]:
        async with self._opening:
            if self._pool is not None:
                return self._pool
            url = self._db.url
            pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                url,
                kwargs=connection_options(url),
                min_size=1,
                max_size=POOL_MAX_SIZE,
                timeout=POOL_TIMEOUT_SECONDS,
                check=_check_idle,
                name="foundry-mcp-status",
                open=False,
            )
            await pool.open()
            self._pool = pool
            return pool


async def _check_idle(conn: psycopg.AsyncConnection[Any]) -> None:
    """The pool's check of a connection it hands out, as the store's own pool does it
    (``database.check_idle``): a statement only when the server wrote to an idle connection."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    if readable(conn.pgconn.socket):
        await AsyncConnectionPool.check_connection(conn)


def fingerprint_of(found: Any) -> Fingerprint | None:
    """The fingerprint in a row of ``FINGERPRINT_QUERY``."""
    return None if found is None else (found[0], found[1], found[2], iso(found[3]))
