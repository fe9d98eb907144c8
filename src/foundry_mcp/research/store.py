"""Disk-backed memory of every research: one SQLite database in WAL mode under research_dir.

Each save is one transaction, so a killed process leaves either the previous state or the new
one, never a torn file. Readers in other processes see committed states without blocking the
writer. Never put ``research_dir`` on a network file system (SQLite's locking needs a local one).
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from foundry_mcp.errors import ConfigError, InvalidResearchIdError, ResearchNotFoundError
from foundry_mcp.research.models import RESEARCH_ID_PATTERN, ResearchState, Status, utcnow

DB_NAME = "research.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS research (
    id          TEXT PRIMARY KEY,
    status      TEXT NOT NULL,
    phase       TEXT NOT NULL,
    iteration   INTEGER NOT NULL,
    query       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    state       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS research_by_created ON research (created_at DESC, id DESC);
"""


def validate_research_id(research_id: object) -> str:
    """The id if it is well formed; ``InvalidResearchIdError`` otherwise."""
    if not isinstance(research_id, str) or not research_id.strip():
        raise InvalidResearchIdError("research_id is required for this action.")
    if not RESEARCH_ID_PATTERN.fullmatch(research_id):
        shown = research_id if len(research_id) <= 40 else research_id[:40] + "..."
        raise InvalidResearchIdError(f"research_id {shown!r} is not a valid research id.")
    return research_id


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
        self._db = sqlite3.connect(
            research_dir / DB_NAME, timeout=30, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        # Research text may be private: the database and its WAL side files are owner-only.
        for suffix in ("", "-wal", "-shm"):
            path = research_dir / f"{DB_NAME}{suffix}"
            if path.exists():
                os.chmod(path, 0o600)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def save(self, state: ResearchState) -> None:
        """Write the whole state in one transaction (insert or replace)."""
        state.updated_at = utcnow()
        row = (
            state.id,
            state.status.value,
            state.phase.value,
            state.iteration,
            state.query,
            state.created_at.isoformat(),
            state.updated_at.isoformat(),
            state.model_dump_json(),
        )
        with self._lock:
            self._db.execute(
                "INSERT INTO research (id, status, phase, iteration, query, created_at, "
                "updated_at, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET status=excluded.status, phase=excluded.phase, "
                "iteration=excluded.iteration, updated_at=excluded.updated_at, "
                "state=excluded.state",
                row,
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
            return ResearchState.model_validate_json(found[0])
        except ValidationError:
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
        with self._lock:
            cursor = self._db.execute("DELETE FROM research WHERE id = ?", (research_id,))
        return cursor.rowcount > 0

    def list_page(
        self, limit: int, cursor: str | None = None, completed_only: bool = False
    ) -> tuple[list[ResearchSummary], str | None]:
        """Newest first, ``limit`` at a time; the second value is the next page's cursor."""
        clauses, params = [], []
        if cursor:
            created_at, research_id = decode_cursor(cursor)
            clauses.append("(created_at < ? OR (created_at = ? AND id < ?))")
            params += [created_at, created_at, research_id]
        if completed_only:
            clauses.append("status = ?")
            params.append(Status.COMPLETED.value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, query, status, phase, iteration, created_at, updated_at "
                f"FROM research {where} ORDER BY created_at DESC, id DESC LIMIT ?",
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


def encode_cursor(created_at: str, research_id: str) -> str:
    raw = json.dumps([created_at, research_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    from foundry_mcp.errors import InputError

    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, research_id = json.loads(base64.urlsafe_b64decode(padded))
        return str(created_at), str(research_id)
    except (ValueError, TypeError):
        raise InputError(
            "cursor is not a cursor returned by deep-research-list.",
            remediation="Pass next_cursor from the previous page unchanged, or omit cursor.",
        ) from None
