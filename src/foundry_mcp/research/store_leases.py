"""Who runs a research: this process as an owner, the lease it holds, and the lease operations.

The process that runs a research holds a lease on it (owner token, pid, process start time,
host and ``lease_until``), renewed by a heartbeat. A claim is a compare-and-swap on the owner token, and
every save by a run is fenced (``LeaseLostError``): it only lands while the run still owns the
research. Another process asks a run to stop by setting ``cancel_requested``, which the owner's
heartbeat reads.

Whether an owner is still alive is decided in one place: :meth:`Ownership.is_alive`. On the
owner's own host the answer is immediate: a process that is gone, a zombie (killed but not yet
reaped by its parent), or another process that reuses its pid (its start time differs) is dead,
whatever its lease says. Across hosts the lease decides.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psutil


@dataclass(frozen=True)
class Owner:
    """This process, as the owner of the research it runs."""

    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    pid: int = field(default_factory=os.getpid)
    host: str = field(default_factory=socket.gethostname)
    started: float | None = field(default_factory=lambda: process_started(os.getpid()))


@dataclass(frozen=True)
class Ownership:
    """Who holds a research, as stored."""

    token: str | None
    pid: int | None
    host: str | None
    lease_until: float | None
    cancel_requested: bool
    started: float | None = None  # the owner's process start time (None: recorded before v4)

    def is_alive(self, me: Owner, running_here: bool, now: float | None = None) -> bool:
        """Whether a live process holds this research."""
        if self.token is None:
            return False
        if self.token == me.token:
            return running_here
        if self.host == me.host and self.pid and not process_alive(self.pid, self.started):
            return False  # dead at once: no need to wait for the lease to run out
        return self.lease_until is not None and self.lease_until >= (now or time.time())


START_TOLERANCE_SECONDS = 1.0  # start times are read from the OS with a clock tick's precision


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None if it cannot be read."""
    try:
        return round(float(psutil.Process(pid).create_time()), 2)
    except (psutil.Error, OSError):
        return None


def process_alive(pid: int, started: float | None) -> bool:
    """Whether ``pid`` is a live process and, when ``started`` is known, the same one.

    A zombie (exited, not yet reaped) is dead; so is a process that reuses the pid, which
    started at another time.
    """
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        if started is not None and abs(process.create_time() - started) > START_TOLERANCE_SECONDS:
            return False
    except psutil.NoSuchProcess:
        return False
    except (psutil.AccessDenied, OSError):
        return True  # another user's process: it exists, and we cannot tell more
    return True


class LeaseLostError(Exception):
    """A run tried to save a research that another process now owns."""


def lease_columns(owner: Owner, lease_seconds: float) -> dict[str, Any]:
    """The research row's columns that record ``owner`` holding it for ``lease_seconds``."""
    return {
        "owner_token": owner.token,
        "owner_pid": owner.pid,
        "owner_host": owner.host,
        "owner_started": owner.started,
        "lease_until": time.time() + lease_seconds,
    }


class Leases:
    """The lease columns of the research table, read and written on the store's connection."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self._db = db
        self._lock = lock  # the store's: one statement at a time on the shared connection

    def ownership(self, research_id: str) -> Ownership | None:
        with self._lock:
            row = self._db.execute(
                "SELECT owner_token, owner_pid, owner_host, lease_until, cancel_requested, "
                "owner_started FROM research WHERE id = ?",
                (research_id,),
            ).fetchone()
        if row is None:
            return None
        return Ownership(row[0], row[1], row[2], row[3], bool(row[4]), row[5])

    def claim(
        self, research_id: str, owner: Owner, lease_seconds: float, expected_token: str | None
    ) -> bool:
        """Take the research if its owner token is still ``expected_token`` (compare and swap)."""
        with self._lock:
            lease = lease_columns(owner, lease_seconds)
            assignments = ", ".join(f"{column}=?" for column in lease)
            cursor = self._db.execute(
                f"UPDATE research SET {assignments}, cancel_requested=0 "
                "WHERE id=? AND owner_token IS ?",
                (*lease.values(), research_id, expected_token),
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
        """Extend this owner's leases; returns the ids another process asked to cancel."""
        ids = list(research_ids)
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        with self._lock:
            self._db.execute(
                f"UPDATE research SET lease_until=? WHERE owner_token=? AND id IN ({marks})",
                (time.time() + lease_seconds, owner.token, *ids),
            )
            return self._asked_to_cancel(owner, ids)

    def cancel_requests(self, owner: Owner, research_ids: Iterable[str]) -> set[str]:
        """The ids among ``research_ids`` (owned by ``owner``) that someone asked to cancel."""
        ids = list(research_ids)
        if not ids:
            return set()
        with self._lock:
            return self._asked_to_cancel(owner, ids)

    def _asked_to_cancel(self, owner: Owner, ids: list[str]) -> set[str]:
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(
            f"SELECT id FROM research WHERE owner_token=? AND cancel_requested=1 "
            f"AND id IN ({marks})",
            (owner.token, *ids),
        ).fetchall()
        return {row[0] for row in rows}

    def request_cancel(self, research_id: str) -> None:
        with self._lock:
            self._db.execute("UPDATE research SET cancel_requested=1 WHERE id=?", (research_id,))

    def disown(self, research_id: str, expected_token: str | None) -> bool:
        """Clear a dead owner's lease so that a late write by it is refused."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE research SET owner_token=NULL, lease_until=NULL WHERE id=? "
                "AND owner_token IS ?",
                (research_id, expected_token),
            )
        return cursor.rowcount == 1
