"""Disk-backed memory of every research: one SQLite database in WAL mode under research_dir.

Each save is one transaction, so a killed process leaves either the previous state or the new
one, never a torn file. Readers in other processes see committed states without blocking the
writer. Never put ``research_dir`` on a network file system (SQLite's locking needs a local one).

Ownership: the process that runs a research holds a lease on it (owner token, pid, host and
``lease_until``), renewed by a heartbeat. A claim is a compare-and-swap on the owner token, and
every save by a run is fenced: it only lands while the run still owns the research. Another
process asks a run to stop by setting ``cancel_requested``, which the owner's heartbeat reads.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from foundry_mcp.errors import (
    ConfigError,
    InputError,
    InvalidResearchIdError,
    ResearchNotFoundError,
)
from foundry_mcp.research.migrations import migrate_state
from foundry_mcp.research.models import RESEARCH_ID_PATTERN, ResearchState, Status, utcnow

log = logging.getLogger(__name__)

DB_NAME = "research.db"
DB_VERSION = 3

_TABLES = """
CREATE TABLE IF NOT EXISTS research (
    id                TEXT PRIMARY KEY,
    status            TEXT NOT NULL,
    phase             TEXT NOT NULL,
    iteration         INTEGER NOT NULL,
    query             TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    state             TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS research_by_created ON research (created_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS branches (
    research_id       TEXT NOT NULL,
    branch_id         TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    state             TEXT NOT NULL,
    PRIMARY KEY (research_id, branch_id)
);
CREATE TABLE IF NOT EXISTS events (
    research_id       TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    at                TEXT NOT NULL,
    kind              TEXT NOT NULL,
    data              TEXT NOT NULL,
    PRIMARY KEY (research_id, seq)
);
"""

# Columns added by version 2 (ownership and cross-process cancel); older files are migrated.
_V2_COLUMNS = {
    "owner_token": "TEXT",
    "owner_pid": "INTEGER",
    "owner_host": "TEXT",
    "lease_until": "REAL",
    "cancel_requested": "INTEGER NOT NULL DEFAULT 0",
}
_V2_INDEXES = (
    "CREATE INDEX IF NOT EXISTS research_by_status ON research (status, created_at DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS research_by_owner ON research (owner_token)",
)


def validate_research_id(research_id: object) -> str:
    """The id if it is well formed; ``InvalidResearchIdError`` otherwise."""
    if not isinstance(research_id, str) or not research_id.strip():
        raise InvalidResearchIdError("research_id is required for this action.")
    if not RESEARCH_ID_PATTERN.fullmatch(research_id):
        shown = research_id if len(research_id) <= 40 else research_id[:40] + "..."
        raise InvalidResearchIdError(f"research_id {shown!r} is not a valid research id.")
    return research_id


@dataclass(frozen=True)
class Owner:
    """This process, as the owner of the research it runs."""

    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    pid: int = field(default_factory=os.getpid)
    host: str = field(default_factory=socket.gethostname)


@dataclass(frozen=True)
class Ownership:
    """Who holds a research, as stored."""

    token: str | None
    pid: int | None
    host: str | None
    lease_until: float | None
    cancel_requested: bool

    def is_alive(self, me: Owner, running_here: bool, now: float | None = None) -> bool:
        """Whether a live process holds this research."""
        if self.token is None:
            return False
        if self.token == me.token:
            return running_here
        if self.lease_until is None or self.lease_until < (now or time.time()):
            return False
        if self.host == me.host and self.pid is not None:
            return _pid_alive(self.pid)
        return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class ResearchSummary:
    """One row of the research list."""

    research_id: str
    query: str
    status: Status
    phase: str
    iteration: int
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class Event:
    """One entry of a research's audit trail."""

    seq: int
    at: str
    kind: str
    data: dict[str, Any]


class LeaseLostError(Exception):
    """A run tried to save a research that another process now owns."""


class ResearchStore:
    """Sessions of research, saved atomically and readable from any process."""

    def __init__(self, research_dir: Path) -> None:
        self.research_dir = research_dir
        try:
            research_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise ConfigError(
                f"Cannot create research_dir {research_dir}: {exc.strerror}.",
                remediation="Set [research] research_dir or FOUNDRY_MCP_RESEARCH_DIR to a "
                "writable local folder.",
            ) from None
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                research_dir / DB_NAME, timeout=30, check_same_thread=False, isolation_level=None
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"The research database {research_dir / DB_NAME} cannot be opened: {exc}.",
                remediation="Move the file aside (it may belong to a newer foundry-mcp or be "
                "damaged) or point research_dir elsewhere.",
            ) from None
        # Research text may be private: the database and its WAL side files are owner-only.
        for suffix in ("", "-wal", "-shm"):
            path = research_dir / f"{DB_NAME}{suffix}"
            if path.exists():
                os.chmod(path, 0o600)

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > DB_VERSION:
            raise sqlite3.DatabaseError(
                f"schema version {version} is newer than this foundry-mcp ({DB_VERSION})"
            )
        with self._transaction():
            for statement in _TABLES.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            present = {row[1] for row in self._db.execute("PRAGMA table_info(research)")}
            for column, kind in _V2_COLUMNS.items():
                if column not in present:
                    self._db.execute(f"ALTER TABLE research ADD COLUMN {column} {kind}")
            for statement in _V2_INDEXES:
                self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {DB_VERSION}")

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------------ states

    def save(self, state: ResearchState, owner: Owner | None = None) -> None:
        """Write the whole state in one transaction (insert or replace).

        With ``owner`` the write is fenced: it raises ``LeaseLostError`` unless ``owner`` still
        holds the research.
        """
        state.updated_at = utcnow()
        values = (
            state.status.value,
            state.phase.value,
            state.iteration,
            state.updated_at.isoformat(),
            state.model_dump_json(),
        )
        with self._lock:
            if owner is not None:
                cursor = self._db.execute(
                    "UPDATE research SET status=?, phase=?, iteration=?, updated_at=?, state=? "
                    "WHERE id=? AND owner_token=?",
                    (*values, state.id, owner.token),
                )
                if cursor.rowcount == 0:
                    raise LeaseLostError(state.id)
                return
            self._db.execute(
                "INSERT INTO research (id, status, phase, iteration, updated_at, state, query, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET status=excluded.status, phase=excluded.phase, "
                "iteration=excluded.iteration, updated_at=excluded.updated_at, "
                "state=excluded.state",
                (state.id, *values, state.query, state.created_at.isoformat()),
            )

    def save_branch(self, branch: ResearchState, owner: Owner) -> None:
        """Write the state of one researcher of a research (a sub-question's), fenced.

        ``branch.id`` is the research's id and ``branch.branch`` the researcher's.
        """
        if branch.branch is None:
            raise ValueError("a branch state needs its branch id")
        branch.updated_at = utcnow()
        with self._lock, self._transaction():
            held = self._db.execute(
                "SELECT 1 FROM research WHERE id=? AND owner_token=?", (branch.id, owner.token)
            ).fetchone()
            if held is None:
                raise LeaseLostError(branch.id)
            self._db.execute(
                "INSERT INTO branches (research_id, branch_id, updated_at, state) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(research_id, branch_id) DO UPDATE SET "
                "updated_at=excluded.updated_at, state=excluded.state",
                (branch.id, branch.branch, branch.updated_at.isoformat(), branch.model_dump_json()),
            )

    def load_branches(self, research_id: str) -> dict[str, ResearchState]:
        """The saved researcher states of a research, by branch id (unreadable ones left out)."""
        validate_research_id(research_id)
        with self._lock:
            rows = self._db.execute(
                "SELECT branch_id, state FROM branches WHERE research_id = ?", (research_id,)
            ).fetchall()
        branches: dict[str, ResearchState] = {}
        for branch_id, text in rows:
            try:
                branches[branch_id] = ResearchState.model_validate(migrate_state(json.loads(text)))
            except (ValidationError, ValueError):
                log.warning("the saved state of %s/%s cannot be read", research_id, branch_id)
        return branches

    def create(self, state: ResearchState, owner: Owner, lease_seconds: float) -> None:
        """Insert a new research, already leased to ``owner``."""
        state.updated_at = utcnow()
        with self._lock:
            self._db.execute(
                "INSERT INTO research (id, status, phase, iteration, query, created_at, "
                "updated_at, state, owner_token, owner_pid, owner_host, lease_until) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    state.id,
                    state.status.value,
                    state.phase.value,
                    state.iteration,
                    state.query,
                    state.created_at.isoformat(),
                    state.updated_at.isoformat(),
                    state.model_dump_json(),
                    owner.token,
                    owner.pid,
                    owner.host,
                    time.time() + lease_seconds,
                ),
            )

    def load(self, research_id: str) -> ResearchState:
        """The saved state; ``ResearchNotFoundError`` if there is none."""
        validate_research_id(research_id)
        with self._lock:
            found = self._db.execute(
                "SELECT state FROM research WHERE id = ?", (research_id,)
            ).fetchone()
        if found is None:
            raise ResearchNotFoundError(f"No research with id {research_id}.")
        try:
            return ResearchState.model_validate(migrate_state(json.loads(found[0])))
        except (ValidationError, ValueError):
            raise ResearchNotFoundError(
                f"The stored state of {research_id} cannot be read.",
                remediation="Delete it with action='deep-research-delete' and start again.",
            ) from None

    def fingerprint(self, research_id: str) -> tuple[str, str, int, str] | None:
        """(status, phase, iteration, updated_at) without loading the whole state."""
        with self._lock:
            found = self._db.execute(
                "SELECT status, phase, iteration, updated_at FROM research WHERE id = ?",
                (research_id,),
            ).fetchone()
        return None if found is None else (found[0], found[1], found[2], found[3])

    def delete(self, research_id: str) -> bool:
        validate_research_id(research_id)
        with self._lock, self._transaction():
            cursor = self._db.execute("DELETE FROM research WHERE id = ?", (research_id,))
            self._db.execute("DELETE FROM events WHERE research_id = ?", (research_id,))
            self._db.execute("DELETE FROM branches WHERE research_id = ?", (research_id,))
        return cursor.rowcount > 0

    def list_page(
        self,
        limit: int,
        cursor: str | None = None,
        completed_only: bool = False,
        statuses: Iterable[Status] = (),
    ) -> tuple[list[ResearchSummary], str | None]:
        """Newest first, ``limit`` at a time; the second value is the next page's cursor."""
        clauses: list[str] = []
        params: list[Any] = []
        if cursor:
            created_at, research_id = decode_cursor(cursor)
            clauses.append("(created_at < ? OR (created_at = ? AND id < ?))")
            params += [created_at, created_at, research_id]
        wanted = {Status.COMPLETED} if completed_only else set(statuses)
        if wanted:
            clauses.append(f"status IN ({','.join('?' * len(wanted))})")
            params += sorted(s.value for s in wanted)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, substr(query, 1, 400), status, phase, iteration, created_at, "
                f"updated_at FROM research {where} ORDER BY created_at DESC, id DESC LIMIT ?",
                (*params, limit + 1),
            ).fetchall()
        items = [
            ResearchSummary(row[0], row[1], Status(row[2]), row[3], row[4], row[5], row[6])
            for row in rows[:limit]
        ]
        next_cursor = None
        if len(rows) > limit:
            last = items[-1]
            next_cursor = encode_cursor(last.created_at, last.research_id)
        return items, next_cursor

    def active_ids(self) -> list[str]:
        """Ids of researches whose stored status says someone is working on them."""
        active = [s.value for s in Status if s.is_active]
        with self._lock:
            rows = self._db.execute(
                f"SELECT id FROM research WHERE status IN ({','.join('?' * len(active))})",
                active,
            ).fetchall()
        return [row[0] for row in rows]

    def delete_older_than(self, days: float) -> int:
        """Delete research not active and untouched for ``days``; returns how many."""
        cutoff = (utcnow() - timedelta(days=days)).isoformat()
        active = [s.value for s in Status if s.is_active]
        marks = ",".join("?" * len(active))
        with self._lock, self._transaction():
            ids = [
                row[0]
                for row in self._db.execute(
                    f"SELECT id FROM research WHERE updated_at < ? AND status NOT IN ({marks})",
                    (cutoff, *active),
                )
            ]
            for research_id in ids:
                self._db.execute("DELETE FROM research WHERE id = ?", (research_id,))
                self._db.execute("DELETE FROM events WHERE research_id = ?", (research_id,))
                self._db.execute("DELETE FROM branches WHERE research_id = ?", (research_id,))
        return len(ids)

    # ------------------------------------------------------------------ ownership

    def ownership(self, research_id: str) -> Ownership | None:
        with self._lock:
            row = self._db.execute(
                "SELECT owner_token, owner_pid, owner_host, lease_until, cancel_requested "
                "FROM research WHERE id = ?",
                (research_id,),
            ).fetchone()
        if row is None:
            return None
        return Ownership(row[0], row[1], row[2], row[3], bool(row[4]))

    def claim(
        self, research_id: str, owner: Owner, lease_seconds: float, expected_token: str | None
    ) -> bool:
        """Take the research if its owner token is still ``expected_token`` (compare and swap)."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE research SET owner_token=?, owner_pid=?, owner_host=?, lease_until=?, "
                "cancel_requested=0 WHERE id=? AND owner_token IS ?",
                (
                    owner.token,
                    owner.pid,
                    owner.host,
                    time.time() + lease_seconds,
                    research_id,
                    expected_token,
                ),
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
            rows = self._db.execute(
                f"SELECT id FROM research WHERE owner_token=? AND cancel_requested=1 "
                f"AND id IN ({marks})",
                (owner.token, *ids),
            ).fetchall()
        return {row[0] for row in rows}

    def cancel_requests(self, owner: Owner, research_ids: Iterable[str]) -> set[str]:
        """The ids among ``research_ids`` (owned by ``owner``) that someone asked to cancel."""
        ids = list(research_ids)
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        with self._lock:
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

    # ------------------------------------------------------------------ events

    def append_event(self, research_id: str, kind: str, data: dict[str, Any]) -> int:
        """Append to the research's audit trail; returns the event's sequence number."""
        at = utcnow().isoformat()
        payload = json.dumps(data, default=_json_default, ensure_ascii=False)
        with self._lock, self._transaction():
            seq = self._db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE research_id = ?",
                (research_id,),
            ).fetchone()[0]
            self._db.execute(
                "INSERT INTO events (research_id, seq, at, kind, data) VALUES (?, ?, ?, ?, ?)",
                (research_id, seq, at, kind, payload),
            )
        return int(seq)

    def events(self, research_id: str, after: int, limit: int) -> list[Event]:
        """Events with ``seq > after``, oldest first, at most ``limit``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, at, kind, data FROM events WHERE research_id = ? AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (research_id, after, limit),
            ).fetchall()
        return [Event(row[0], row[1], row[2], json.loads(row[3])) for row in rows]

    def last_event_at(self, research_id: str) -> str | None:
        with self._lock:
            row = self._db.execute(  # the newest event, found through the primary key
                "SELECT at FROM events WHERE research_id = ? ORDER BY seq DESC LIMIT 1",
                (research_id,),
            ).fetchone()
        return None if row is None else row[0]


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def encode_cursor(created_at: str, research_id: str) -> str:
    raw = json.dumps([created_at, research_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, research_id = json.loads(base64.urlsafe_b64decode(padded))
        return str(created_at), str(research_id)
    except (ValueError, TypeError):
        raise InputError(
            "cursor is not a cursor returned by deep-research-list.",
            remediation="Pass next_cursor from the previous page unchanged, or omit cursor.",
            details={"field": "cursor"},
        ) from None
