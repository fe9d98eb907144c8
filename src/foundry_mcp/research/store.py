"""Disk-backed memory of every research: one SQLite database in WAL mode under research_dir.

Each save is one transaction, so a killed process leaves either the previous state or the new
one, never a torn file. Readers in other processes see committed states without blocking the
writer. Never put ``research_dir`` on a network file system (SQLite's locking needs a local one).

``ResearchStore`` is the one face of the database. It holds the states (and the researchers'
branch states), the listing and retention itself; the parts it hands on live beside it:
``store_db`` (the file, its tables and migrations), ``store_leases`` (who owns a research, the
fenced saves, cross-process cancel requests) and ``store_events`` (the audit trail).
"""

from __future__ import annotations

import base64
import json
import logging
import sqlite3
import threading
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from foundry_mcp.errors import InputError, InvalidResearchIdError, ResearchNotFoundError
from foundry_mcp.research.migrations import migrate_state
from foundry_mcp.research.models import RESEARCH_ID_PATTERN, ResearchState, Status, utcnow
from foundry_mcp.research.store_db import DB_NAME, DB_VERSION, open_database, transaction
from foundry_mcp.research.store_delegates import LeasesAndEvents
from foundry_mcp.research.store_events import Event, EventLog
from foundry_mcp.research.store_files import file_key, file_lock
from foundry_mcp.research.store_journal import JournalEntry, LLMJournal
from foundry_mcp.research.store_leases import (
    LeaseLostError,
    Leases,
    Owner,
    Ownership,
    lease_columns,
)
from foundry_mcp.research.store_protocol import Fingerprint, StoreInfo
from foundry_mcp.research.store_waits import poll_for_cancel, poll_for_change

__all__ = [
    "DB_NAME",
    "DB_VERSION",
    "Event",
    "JournalEntry",
    "LeaseLostError",
    "Owner",
    "Ownership",
    "ResearchStore",
    "ResearchSummary",
    "decode_cursor",
    "encode_cursor",
    "research_not_found",
    "validate_research_id",
]

log = logging.getLogger(__name__)


def validate_research_id(research_id: object) -> str:
    """The id if it is well formed; ``InvalidResearchIdError`` otherwise."""
    if not isinstance(research_id, str) or not research_id.strip():
        raise InvalidResearchIdError("research_id is required for this action.")
    if not RESEARCH_ID_PATTERN.fullmatch(research_id):
        shown = research_id if len(research_id) <= 40 else research_id[:40] + "..."
        raise InvalidResearchIdError(f"research_id {shown!r} is not a valid research id.")
    return research_id


def research_not_found(research_id: str) -> ResearchNotFoundError:
    """The error for an id with no research, and for another principal's research alike."""
    return ResearchNotFoundError(f"No research with id {research_id}.")


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


class ResearchStore(LeasesAndEvents):
    """Sessions of research, saved atomically and readable from any process."""

    def __init__(self, research_dir: Path) -> None:
        self.research_dir = research_dir
        self._lock = threading.Lock()
        self._db: sqlite3.Connection = open_database(research_dir)
        self._leases = Leases(self._db, self._lock)
        self._events = EventLog(self._db, self._lock)
        self.journal = LLMJournal(self._db, self._lock)

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
                "created_at, principal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET status=excluded.status, phase=excluded.phase, "
                "iteration=excluded.iteration, updated_at=excluded.updated_at, "
                "state=excluded.state",
                (state.id, *values, state.query, state.created_at.isoformat(), state.principal),
            )

    def save_branch(self, branch: ResearchState, owner: Owner) -> None:
        """Write the state of one researcher of a research (a sub-question's), fenced.

        ``branch.id`` is the research's id and ``branch.branch`` the researcher's.
        """
        if branch.branch is None:
            raise ValueError("a branch state needs its branch id")
        branch.updated_at = utcnow()
        with self._lock, transaction(self._db):
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
            row = {
                "id": state.id,
                "status": state.status.value,
                "phase": state.phase.value,
                "iteration": state.iteration,
                "query": state.query,
                "created_at": state.created_at.isoformat(),
                "updated_at": state.updated_at.isoformat(),
                "state": state.model_dump_json(),
                "principal": state.principal,
                **lease_columns(owner, lease_seconds),
            }
            self._db.execute(
                f"INSERT INTO research ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                tuple(row.values()),
            )

    def load(self, research_id: str) -> ResearchState:
        """The saved state; ``ResearchNotFoundError`` if there is none."""
        validate_research_id(research_id)
        with self._lock:
            found = self._db.execute(
                "SELECT state FROM research WHERE id = ?", (research_id,)
            ).fetchone()
        if found is None:
            raise research_not_found(research_id)
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

    def principal_of(self, research_id: str) -> str | None:
        """Whose research it is (None: the local user's); ``ResearchNotFoundError`` if none."""
        validate_research_id(research_id)
        with self._lock:
            found = self._db.execute(
                "SELECT principal FROM research WHERE id = ?", (research_id,)
            ).fetchone()
        if found is None:
            raise research_not_found(research_id)
        principal: str | None = found[0]
        return principal

    def delete(self, research_id: str) -> bool:
        validate_research_id(research_id)
        with self._lock, transaction(self._db):
            cursor = self._db.execute("DELETE FROM research WHERE id = ?", (research_id,))
            self._db.execute("DELETE FROM events WHERE research_id = ?", (research_id,))
            self._db.execute("DELETE FROM branches WHERE research_id = ?", (research_id,))
            self._db.execute("DELETE FROM llm_journal WHERE research_id = ?", (research_id,))
        return cursor.rowcount > 0

    def list_page(
        self,
        limit: int,
        cursor: str | None = None,
        completed_only: bool = False,
        statuses: Iterable[Status] = (),
        principal: str | None = None,
    ) -> tuple[list[ResearchSummary], str | None]:
        """Newest first, ``limit`` at a time; the second value is the next page's cursor.

        With ``principal``, only that principal's research; without, everyone's.
        """
        clauses: list[str] = []
        params: list[Any] = []
        if principal is not None:
            clauses.append("principal = ?")
            params.append(principal)
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
        return page(
            [
                ResearchSummary(row[0], row[1], Status(row[2]), row[3], row[4], row[5], row[6])
                for row in rows
            ],
            limit,
        )

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
        with self._lock, transaction(self._db):
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
                self._db.execute("DELETE FROM llm_journal WHERE research_id = ?", (research_id,))
        return len(ids)

    # ------------------------------------------------------------------ waiting (store_waits)

    async def wait_for_change(
        self, research_id: str, timeout: float, since: Fingerprint | None = None
    ) -> bool:
        """Wait until the research is saved or deleted (by polling), at most ``timeout`` s."""
        return await poll_for_change(self, research_id, timeout, since)

    async def wait_for_cancel(
        self, owner: Owner, research_ids: Iterable[str], timeout: float
    ) -> set[str]:
        """Wait until someone asks to cancel one of these research; their ids, or empty."""
        return await poll_for_cancel(self, owner, research_ids, timeout)

    def describe(self) -> StoreInfo:
        return StoreInfo("sqlite", str(self.research_dir / DB_NAME), DB_VERSION)

    def shared_key(self, name: str) -> bytes:
        """The key ``name`` of this research directory (a private file beside the database)."""
        return file_key(self.research_dir, name)

    def admitting(self, principal: str) -> AbstractContextManager[None]:
        """The admission lock of this research directory (a file lock: one for all)."""
        return file_lock(self.research_dir)


def page(items: list[ResearchSummary], limit: int) -> tuple[list[ResearchSummary], str | None]:
    """The first ``limit`` of ``items`` (``limit + 1`` were read, newest first) and the next
    page's cursor, when there is a next page."""
    if len(items) <= limit:
        return items, None
    kept = items[:limit]
    return kept, encode_cursor(kept[-1].created_at, kept[-1].research_id)


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
