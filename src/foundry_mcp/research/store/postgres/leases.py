"""Who runs a research, in a shared PostgreSQL store: the lease columns and their operations.

The same contract as :class:`foundry_mcp.research.store.sqlite.leases.Leases`, with one difference
that matters across hosts: ``lease_until`` is set and compared on the database's clock
(``now()``), so hosts whose clocks disagree still agree on whose lease ran out. A claim is one
conditional UPDATE (compare and swap on the owner token, from a lease that has run out): of
two servers claiming at once, the second waits for the first's row lock, sees the new token and
changes nothing. :attr:`Ownership.lease_until` is handed back on this host's clock (now plus
what the database says is left), for :meth:`Ownership.is_alive`.

Renewals have a connection of their own, outside the pool (:class:`RenewalConnection`): the
pool may have no connection to give for a while (the writer's and the patient reads' waiting
out an outage hold them), and a lease must not wait for that.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from foundry_mcp.research.models import Status
from foundry_mcp.research.store.owners import (
    Owner,
    Ownership,
    split_host,
)
from foundry_mcp.research.store.postgres.database import Database, unavailable

_ACTIVE = [status.value for status in Status if status.is_active]
_LEASE_UNTIL = "now() + make_interval(secs => %s::float8)"
# A lease nobody runs any more: released, or run out on the database's clock.
_LAPSED = "(lease_until IS NULL OR lease_until < now())"
# The lease columns of a research row, in the order ``ownership_of`` reads them (the lease as
# the seconds it has left on the database's clock).
OWNERSHIP_COLUMNS = (
    "owner_token, owner_pid, owner_host, extract(epoch FROM lease_until - now())::float8, "
    "cancel_requested, owner_started"
)


def lease_columns(owner: Owner, lease_seconds: float) -> list[tuple[str, str, object]]:
    """(column, SQL value, parameter) of each column recording ``owner`` holding a research."""
    return [
        ("owner_token", "%s", owner.token),
        ("owner_pid", "%s", owner.pid),
        ("owner_host", "%s", owner.stored_host),
        ("owner_started", "%s", owner.started),
        ("lease_until", _LEASE_UNTIL, lease_seconds),
    ]


def ownership_of(row: Sequence[Any]) -> Ownership:
    """The ownership in the ``OWNERSHIP_COLUMNS`` of a row, its lease on this host's clock."""
    token, pid, stored_host, left, cancel_requested, started = row
    lease_until = None if left is None else time.time() + left
    host, node = split_host(stored_host)
    return Ownership(token, pid, host, lease_until, bool(cancel_requested), started, node)


class RenewalConnection:
    """A connection to the database for the renewals alone, outside the pool: opened on first
    use, and again after it was lost."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()  # one statement at a time on it

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection (autocommit); a lost database is ``StoreUnavailableError``, and the
        store learns of the outage as from any other call."""
        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._db.connect()
                yield self._conn
            except psycopg.OperationalError as exc:
                self._drop()
                self._db.found_lost(exc)
                raise unavailable(exc, self._db.url) from None

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class PgLeases:
    """The lease columns of the research table, on the store's connection pool (renewals on a
    connection of their own)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._renewals = RenewalConnection(db)

    def close(self) -> None:
        self._renewals.close()

    def ownership(self, research_id: str) -> Ownership | None:
        with self._db.connection() as conn:
            row = conn.execute(
                f"SELECT {OWNERSHIP_COLUMNS} FROM research WHERE id = %s", (research_id,)
            ).fetchone()
        return None if row is None else ownership_of(row)

    def claim(
        self,
        research_id: str,
        owner: Owner,
        lease_seconds: float,
        expected_token: str | None,
        *,
        process_gone: bool = False,
    ) -> bool:
        """Take the research if it is already ``owner``'s (a claim made again after its
        connection was lost), or if its owner token is still ``expected_token`` (compare and
        swap) and that lease has run out or was released; ``process_gone``: its holder's
        process is known gone, its lease may still run."""
        lease = lease_columns(owner, lease_seconds)
        assignments = ", ".join(f"{column}={value}" for column, value, _ in lease)
        lapsed = "" if process_gone else f" AND {_LAPSED}"
        with self._db.connection() as conn:
            cursor = conn.execute(
                f"UPDATE research SET {assignments}, cancel_requested=false WHERE id=%s AND "
                f"(owner_token = %s OR (owner_token IS NOT DISTINCT FROM %s{lapsed}))",
                (
                    *(parameter for _, _, parameter in lease),
                    research_id,
                    owner.token,
                    expected_token,
                ),
            )
            return cursor.rowcount == 1

    def release(self, research_id: str, owner: Owner) -> None:
        """Give up the lease (the run ended)."""
        with self._db.connection() as conn:
            conn.execute(
                "UPDATE research SET owner_token=NULL, lease_until=NULL "
                "WHERE id=%s AND owner_token=%s",
                (research_id, owner.token),
            )

    def renew(self, owner: Owner, research_ids: Iterable[str], lease_seconds: float) -> set[str]:
        """Extend this owner's leases, on the renewals' own connection; returns the ids another
        process asked to cancel."""
        ids = list(research_ids)
        if not ids:
            return set()
        with self._renewals.connection() as conn:
            rows = conn.execute(
                f"UPDATE research SET lease_until={_LEASE_UNTIL} "
                "WHERE owner_token=%s AND id = ANY(%s) RETURNING id, cancel_requested",
                (lease_seconds, owner.token, ids),
            ).fetchall()
        return {row[0] for row in rows if row[1]}

    def cancel_requests(self, owner: Owner, research_ids: Iterable[str]) -> set[str]:
        """The ids among ``research_ids`` (owned by ``owner``) that someone asked to cancel."""
        ids = list(research_ids)
        if not ids:
            return set()
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT id FROM research WHERE owner_token=%s AND cancel_requested "
                "AND id = ANY(%s)",
                (owner.token, ids),
            ).fetchall()
        return {row[0] for row in rows}

    def request_cancel(self, research_id: str) -> None:
        """Ask the owner to stop; a trigger NOTIFYs its listening heartbeat."""
        with self._db.connection() as conn:
            conn.execute("UPDATE research SET cancel_requested=true WHERE id=%s", (research_id,))

    def disown(
        self, research_id: str, expected_token: str | None, *, process_gone: bool = False
    ) -> bool:
        """Clear a dead owner's lease so that a late write by it is refused: only while its
        token is still ``expected_token`` and its lease has run out on the database's clock,
        or, with ``process_gone``, whatever the lease says (its process is known gone)."""
        lapsed = "" if process_gone else f" AND {_LAPSED}"
        with self._db.connection() as conn:
            cursor = conn.execute(
                "UPDATE research SET owner_token=NULL, lease_until=NULL "
                f"WHERE id=%s AND owner_token IS NOT DISTINCT FROM %s{lapsed}",
                (research_id, expected_token),
            )
            return cursor.rowcount == 1

    def takeover_candidates(
        self, me: Owner, window_seconds: float, limit: int
    ) -> list[tuple[str, Ownership]]:
        """Active research whose lease ran out (on the database's clock) or was released,
        research interrupted within ``window_seconds`` that nobody holds, and research held on
        ``me``'s node; not asked to cancel; ids and ownership only, newest update first."""
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT id, {OWNERSHIP_COLUMNS} FROM research "
                "WHERE NOT cancel_requested AND (status = ANY(%s) OR (status = %s AND "
                "updated_at >= now() - make_interval(secs => %s::float8))) "
                "AND (owner_token IS NULL OR lease_until IS NULL OR lease_until < now() "
                "OR owner_host = %s) ORDER BY updated_at DESC LIMIT %s",
                (_ACTIVE, Status.INTERRUPTED.value, window_seconds, me.stored_host, limit),
            ).fetchall()
        return [(row[0], ownership_of(row[1:])) for row in rows]
