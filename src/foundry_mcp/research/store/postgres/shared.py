"""What the servers of a team share besides research: keys, and the lock of admissions.

A key (the one task ids are signed with) is a row of ``foundry_keys``, made by the first server
that needs it; every server reads the same one, so a task id issued by one worker is honoured
by the others. Admission of a principal's research (counting what it runs, then saving the new
one) holds a transaction-scoped advisory lock named after the principal, so two workers
admitting research of one principal at the same moment take turns, and a limit on concurrent
research holds across hosts.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.store.postgres.database import Database

ADMISSION_LOCK_TIMEOUT = "5s"  # an admission holds the lock for milliseconds


def shared_key(db: Database, name: str) -> bytes:
    """The team's key ``name``: made by the first server that asks, the same for all."""
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO foundry_keys (name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
            (name, secrets.token_bytes(32)),
        )
        row = conn.execute("SELECT value FROM foundry_keys WHERE name = %s", (name,)).fetchone()
    if row is None:  # deleted between the two statements by hand: make it again
        return shared_key(db, name)
    return bytes(row[0])


@contextmanager
def admission(db: Database, principal: str) -> Iterator[None]:
    """Hold the admission lock of ``principal`` on every server of the store.

    The lock lives in a transaction of its own connection, held open while the caller counts
    and saves on others; it is released at the end, or by the server if this one dies.
    """
    with db.connection() as conn, conn.transaction():
        try:
            conn.execute(f"SET LOCAL lock_timeout = '{ADMISSION_LOCK_TIMEOUT}'")
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"foundry-admission:{principal}",),
            )
        except psycopg.errors.LockNotAvailable:
            raise StoreUnavailableError(
                f"Another server has been admitting research of {principal} for over "
                f"{ADMISSION_LOCK_TIMEOUT}; the research store may be overloaded.",
                remediation="Try again in a moment; if it persists, check the database's load.",
            ) from None
        yield
