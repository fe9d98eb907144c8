"""The lease columns of the SQLite research table: claim, renew, release, cancel requests.

Who owns a research, and whether that owner lives, is decided in
:mod:`foundry_mcp.research.store.owners`; this module reads and writes it in SQLite.

A renewal runs on a connection of its own, not on the store's: the writer may hold the store's
connection (and its lock) for as long as a long write takes, and a lease must not wait for
that. A lease that runs is never taken from its holder by a claim or a disown, unless its
process is known gone (``process_gone``): the expiry is judged in the same statement.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

from foundry_mcp.research.models import Status, utcnow
from foundry_mcp.research.store.owners import Owner, Ownership, fenced, split_host
from foundry_mcp.research.store.sqlite.database import connect

_ACTIVE = [status.value for status in Status if status.is_active]
# A lease nobody runs any more: released, or run out (compared with the time given after it).
_LAPSED = "(lease_until IS NULL OR lease_until < ?)"
# The lease columns of a research row, in the order ``ownership_of`` reads them.
OWNERSHIP_COLUMNS = (
    "owner_token, owner_pid, owner_host, lease_until, cancel_requested, owner_started"
)


def lease_columns(owner: Owner, lease_seconds: float) -> dict[str, Any]:
    """The research row's columns that record ``owner`` holding it for ``lease_seconds``."""
    return {
        "owner_token": owner.token,
        "owner_pid": owner.pid,
        "owner_host": owner.stored_host,
        "owner_started": owner.started,
        "lease_until": time.time() + lease_seconds,
    }


class Leases:
    """The lease columns of the research table, read and written on the store's connection
    (renewals on one of their own, to the database at ``path``)."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock, path: Path) -> None:
        self._db = db
        self._lock = lock  # the store's: one statement at a time on the shared connection
        self._path = path

    def ownership(self, research_id: str) -> Ownership | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {OWNERSHIP_COLUMNS} FROM research WHERE id = ?", (research_id,)
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
        """Take the research if it is already ``owner``'s, or if its owner token is still
        ``expected_token`` (compare and swap) and that lease has run out or was released;
        ``process_gone``: its holder's process is known gone, its lease may still run."""
        lapsed, now = _lapsed_unless(process_gone)
        with self._lock:
            lease = lease_columns(owner, lease_seconds)
            assignments = ", ".join(f"{column}=?" for column in lease)
            cursor = self._db.execute(
                f"UPDATE research SET {assignments}, cancel_requested=0 "
                f"WHERE id=? AND (owner_token = ? OR (owner_token IS ?{lapsed}))",
                (*lease.values(), research_id, owner.token, expected_token, *now),
            )
        return cursor.rowcount == 1

    def release(self, research_id: str, owner: Owner) -> None:
        """Give up the lease (the run ended)."""
        with self._lock:
            self._db.execute(
                "UPDATE research SET owner_token=NULL, lease_until=NULL WHERE id=? "
                "AND owner_token=?",
                (research_id, owner.token),
            )

    def renew(self, owner: Owner, research_ids: Iterable[str], lease_seconds: float) -> set[str]:
        """Extend this owner's leases; returns the ids another process asked to cancel.

        On a connection opened for it (a few hundred microseconds, every few seconds), never on
        the store's: a write holding that one does not hold up the lease."""
        ids = list(research_ids)
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        with closing(connect(self._path)) as db:
            db.execute(
                f"UPDATE research SET lease_until=? WHERE owner_token=? AND id IN ({marks})",
                (time.time() + lease_seconds, owner.token, *ids),
            )
            return _asked_to_cancel(db, owner, ids)

    def cancel_requests(self, owner: Owner, research_ids: Iterable[str]) -> set[str]:
        """The ids among ``research_ids`` (owned by ``owner``) that someone asked to cancel."""
        ids = list(research_ids)
        if not ids:
            return set()
        with self._lock:
            return _asked_to_cancel(self._db, owner, ids)

    def request_cancel(self, research_id: str) -> None:
        with self._lock:
            self._db.execute("UPDATE research SET cancel_requested=1 WHERE id=?", (research_id,))

    def disown(
        self, research_id: str, expected_token: str | None, *, process_gone: bool = False
    ) -> bool:
        """Clear a dead owner's lease so that a late write by it is refused: only while its
        token is still ``expected_token`` and its lease has run out, or, with
        ``process_gone``, whatever the lease says (its process is known gone)."""
        lapsed, now = _lapsed_unless(process_gone)
        with self._lock:
            cursor = self._db.execute(
                "UPDATE research SET owner_token=NULL, lease_until=NULL WHERE id=? "
                f"AND owner_token IS ?{lapsed}",
                (research_id, expected_token, *now),
            )
        return cursor.rowcount == 1

    def takeover_candidates(
        self, me: Owner, window_seconds: float, limit: int
    ) -> list[tuple[str, Ownership]]:
        """Active research whose lease ran out or was released, research interrupted within
        ``window_seconds`` that nobody holds, and research held on ``me``'s node; not asked to
        cancel; ids and ownership only, most recently updated first."""
        since = (utcnow() - timedelta(seconds=window_seconds)).isoformat()
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, {OWNERSHIP_COLUMNS} FROM research "
                f"WHERE cancel_requested=0 AND (status IN ({','.join('?' * len(_ACTIVE))}) "
                "OR (status=? AND updated_at >= ?)) "
                "AND (owner_token IS NULL OR lease_until IS NULL OR lease_until < ? "
                "OR owner_host=?) ORDER BY updated_at DESC LIMIT ?",
                (*_ACTIVE, Status.INTERRUPTED.value, since, time.time(), me.stored_host, limit),
            ).fetchall()
        return [(row[0], ownership_of(row[1:])) for row in rows]


def _lapsed_unless(process_gone: bool) -> tuple[str, tuple[float, ...]]:
    """The condition (to follow an ``AND``) that the lease no longer runs, and its parameter;
    nothing when the holder's process is known gone."""
    return ("", ()) if process_gone else (f" AND {_LAPSED}", (time.time(),))


def _asked_to_cancel(db: sqlite3.Connection, owner: Owner, ids: list[str]) -> set[str]:
    marks = ",".join("?" * len(ids))
    rows = db.execute(
        f"SELECT id FROM research WHERE owner_token=? AND cancel_requested=1 AND id IN ({marks})",
        (owner.token, *ids),
    ).fetchall()
    return {row[0] for row in rows}


def ownership_of(row: Sequence[Any]) -> Ownership:
    """The ownership in the ``OWNERSHIP_COLUMNS`` of a row."""
    host, node = split_host(row[2])
    return Ownership(row[0], row[1], host, row[3], bool(row[4]), row[5], node)


def check_held(db: sqlite3.Connection, research_id: str, owner: Owner) -> None:
    """``LeaseLostError`` unless ``owner`` still holds the research (checked inside the caller's
    transaction, so the write that follows is fenced)."""
    held = db.execute(
        "SELECT 1 FROM research WHERE id=? AND owner_token=?", (research_id, owner.token)
    ).fetchone()
    fenced(0 if held is None else 1, research_id)
