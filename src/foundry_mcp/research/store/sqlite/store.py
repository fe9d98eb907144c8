"""Disk-backed memory of every research: one SQLite database in WAL mode under research_dir.

Each save is one transaction, so a killed process leaves either the previous state or the new
one, never a torn file. Readers in other processes see committed states without blocking the
writer. Never put ``research_dir`` on a network file system (SQLite's locking needs a local one).

``ResearchStore`` is the one face of the database. It holds the states (and the researchers'
branch states), the listing and retention itself; the parts it hands on live beside it:
``database`` (the file, its tables and migrations), ``leases`` (who owns a research, the fenced
saves, cross-process cancel requests), ``pages`` (page text kept once, outside the states),
``events`` (the audit trail), ``journal`` (the LLM answers paid for), ``ledger`` (the spend
ledger, which outlives deletions), ``archived`` (archived originals) and ``files`` (keys and
the admission lock, beside the database).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from pathlib import Path
from typing import Any

from foundry_mcp.errors import FoundryError
from foundry_mcp.research.models import ResearchState, Status, utcnow
from foundry_mcp.research.store.access.waits import SharedChangePoll, poll_for_cancel
from foundry_mcp.research.store.delegates import LeasesAndEvents
from foundry_mcp.research.store.owners import Owner, fenced
from foundry_mcp.research.store.pages import fill_pages, wanted_pages
from foundry_mcp.research.store.paging import decode_cursor, page
from foundry_mcp.research.store.records import (
    Fingerprint,
    ResearchSummary,
    StatusRead,
    StoreInfo,
    research_not_found,
    validate_research_id,
)
from foundry_mcp.research.store.sqlite.archived import ArchiveAndSpend
from foundry_mcp.research.store.sqlite.database import (
    DB_NAME,
    DB_VERSION,
    connect,
    open_database,
    transaction,
)
from foundry_mcp.research.store.sqlite.events import EventLog
from foundry_mcp.research.store.sqlite.files import file_key, file_lock
from foundry_mcp.research.store.sqlite.journal import LLMJournal
from foundry_mcp.research.store.sqlite.leases import (
    OWNERSHIP_COLUMNS,
    Leases,
    check_held,
    lease_columns,
    ownership_of,
)
from foundry_mcp.research.store.sqlite.ledger import purge_orphans, record_spend
from foundry_mcp.research.store.sqlite.pages import forget_pages, read_pages, write_pages
from foundry_mcp.research.store.states import (
    RESEARCH_TABLES,
    Snapshot,
    decode_branches,
    decode_state,
    snapshot_to_save,
)


class ResearchStore(ArchiveAndSpend, LeasesAndEvents):
    """Sessions of research, saved atomically and readable from any process."""

    def __init__(self, research_dir: Path) -> None:
        self.research_dir = research_dir
        self._lock = threading.Lock()
        self._db: sqlite3.Connection = open_database(research_dir)
        self._leases = Leases(self._db, self._lock, research_dir / DB_NAME)
        self._events = EventLog(self._db, self._lock)
        self.journal = LLMJournal(self._db, self._lock)
        # Page text is read on a connection of its own, opened on first use: a run's load of
        # megabytes of it holds neither the connection nor the lock a status read waits for.
        self._pages_lock = threading.Lock()
        self._pages_db: sqlite3.Connection | None = None
        self._changes = SharedChangePoll(self.fingerprints)

    def close(self) -> None:
        with self._lock:
            self._db.close()
        with self._pages_lock:
            if self._pages_db is not None:
                self._pages_db.close()

    # ------------------------------------------------------------------ states

    def save(self, state: ResearchState | Snapshot, owner: Owner | None = None) -> None:
        """Write the whole state in one transaction (insert or replace).

        With ``owner`` the write is fenced: it raises ``LeaseLostError`` unless ``owner`` still
        holds the research. The cost the state carries since its last save is booked in the
        spend ledger in the same transaction. Given a snapshot, the state is not touched (its
        taker applies it); given a state, it records what was saved (``states.Snapshot``).
        """
        if owner is None:
            self._write(state, None, ())
        else:
            self._write(state, "owner_token=?", (owner.token,))

    def save_unowned(self, state: ResearchState, expected_token: str | None) -> None:
        """Write the state of a research this process does not run (a restore, a dead owner's
        research recorded ``interrupted``), fenced: only while its owner token is still
        ``expected_token`` (None: nobody's, as ``disown`` left it) and no lease with that token
        is running; ``LeaseLostError`` otherwise (another process took it, or it was deleted)."""
        self._write(
            state,
            "owner_token IS ? AND (lease_until IS NULL OR lease_until < ?)",
            (expected_token, time.time()),
        )

    def _write(
        self, state: ResearchState | Snapshot, fence: str | None, params: tuple[Any, ...]
    ) -> None:
        """Save ``state``: an insert or replace without ``fence``, else an update of the row
        that matches it (``LeaseLostError`` when none does); its new pages and its spend too."""
        with snapshot_to_save(state) as saved, self._lock, transaction(self._db):
            values = (
                saved.status,
                saved.phase,
                saved.iteration,
                saved.updated_at.isoformat(),
                saved.json,
            )
            if fence is not None:
                cursor = self._db.execute(
                    "UPDATE research SET status=?, phase=?, iteration=?, updated_at=?, state=? "
                    f"WHERE id=? AND {fence}",
                    (*values, saved.id, *params),
                )
                fenced(cursor.rowcount, saved.id)
            else:
                self._db.execute(
                    "INSERT INTO research (id, status, phase, iteration, updated_at, state, "
                    "query, created_at, principal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET status=excluded.status, phase=excluded.phase, "
                    "iteration=excluded.iteration, updated_at=excluded.updated_at, "
                    "state=excluded.state",
                    (saved.id, *values, saved.query, saved.created_at.isoformat(), saved.principal),
                )
            write_pages(self._db, saved.id, saved.pages)
            record_spend(self._db, saved)

    def save_branch(self, branch: ResearchState | Snapshot, owner: Owner) -> None:
        """Write the state of one researcher of a research (a sub-question's), fenced.

        ``branch.id`` is the research's id and ``branch.branch`` the researcher's.
        """
        if branch.branch is None:
            raise ValueError("a branch state needs its branch id")
        with snapshot_to_save(branch) as saved, self._lock, transaction(self._db):
            check_held(self._db, saved.id, owner)
            self._db.execute(
                "INSERT INTO branches (research_id, branch_id, updated_at, state) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(research_id, branch_id) DO UPDATE SET "
                "updated_at=excluded.updated_at, state=excluded.state",
                (saved.id, saved.branch, saved.updated_at.isoformat(), saved.json),
            )
            write_pages(self._db, saved.id, saved.pages)

    def load_branches(self, research_id: str) -> dict[str, ResearchState]:
        """The saved researcher states of a research, by branch id (unreadable ones left out)."""
        validate_research_id(research_id)
        with self._lock:
            rows = self._db.execute(
                "SELECT branch_id, state FROM branches WHERE research_id = ?", (research_id,)
            ).fetchall()
        return decode_branches(rows, research_id)

    def create(self, state: ResearchState, owner: Owner, lease_seconds: float) -> None:
        """Insert a new research, already leased to ``owner``."""
        with snapshot_to_save(state) as saved, self._lock, transaction(self._db):
            row = {
                "id": saved.id,
                "status": saved.status,
                "phase": saved.phase,
                "iteration": saved.iteration,
                "query": saved.query,
                "created_at": saved.created_at.isoformat(),
                "updated_at": saved.updated_at.isoformat(),
                "state": saved.json,
                "principal": saved.principal,
                **lease_columns(owner, lease_seconds),
            }
            self._db.execute(
                f"INSERT INTO research ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                tuple(row.values()),
            )
            write_pages(self._db, saved.id, saved.pages)
            record_spend(self._db, saved)

    def load(self, research_id: str) -> ResearchState:
        """The saved state, without its page text; ``ResearchNotFoundError`` if there is none."""
        validate_research_id(research_id)
        with self._lock:
            found = self._db.execute(
                "SELECT state FROM research WHERE id = ?", (research_id,)
            ).fetchone()
        if found is None:
            raise research_not_found(research_id)
        return decode_state(found[0], research_id)

    def load_status(self, research_id: str, known: ResearchState | None = None) -> StatusRead:
        """The state with its ownership, principal and newest event time, in one statement
        (``known`` given back when it is still the stored state); ``ResearchNotFoundError`` if
        there is none."""
        validate_research_id(research_id)
        with self._lock:
            found = self._db.execute(
                "SELECT CASE WHEN updated_at = ? THEN NULL ELSE state END, principal, "
                f"{OWNERSHIP_COLUMNS}, (SELECT at FROM events WHERE research_id = research.id "
                "ORDER BY seq DESC LIMIT 1) FROM research WHERE id = ?",
                (known.updated_at.isoformat() if known else None, research_id),
            ).fetchone()
        if found is None:
            raise research_not_found(research_id)
        state = known if found[0] is None and known else decode_state(found[0], research_id)
        return StatusRead(state, ownership_of(found[2:8]), found[1], found[8])

    def load_pages(self, *states: ResearchState) -> None:
        """Give the sources of ``states`` their page text (one query for all, on the page
        connection: a status read does not wait for it)."""
        wanted = wanted_pages(*states)
        if not wanted:
            return
        with self._pages_lock:
            if self._pages_db is None:
                self._pages_db = connect(self.research_dir / DB_NAME)
            texts = read_pages(self._pages_db, wanted)
        fill_pages(texts, *states)

    def fingerprint(self, research_id: str) -> Fingerprint | None:
        """(status, phase, iteration, updated_at) without loading the whole state."""
        with self._lock:
            found = self._db.execute(
                "SELECT status, phase, iteration, updated_at FROM research WHERE id = ?",
                (research_id,),
            ).fetchone()
        return None if found is None else (found[0], found[1], found[2], found[3])

    def fingerprints(self, research_ids: Sequence[str]) -> dict[str, Fingerprint]:
        """The fingerprints of those of ``research_ids`` that exist, in one statement each
        500 ids."""
        found: dict[str, Fingerprint] = {}
        for start in range(0, len(research_ids), 500):
            chunk = list(research_ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            with self._lock:
                rows = self._db.execute(
                    "SELECT id, status, phase, iteration, updated_at FROM research"
                    f" WHERE id IN ({marks})",
                    chunk,
                ).fetchall()
            found.update((row[0], (row[1], row[2], row[3], row[4])) for row in rows)
        return found

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
            return self._delete(research_id)

    def list_page(
        self,
        limit: int,
        cursor: str | None = None,
        completed_only: bool = False,
        statuses: Iterable[Status] = (),
        principal: str | None = None,
        words: Sequence[str] = (),
    ) -> tuple[list[ResearchSummary], str | None]:
        """Newest first, ``limit`` at a time; the second value is the next page's cursor.

        With ``principal``, only that principal's research; without, everyone's. With
        ``words``, only research whose question holds each of them, in any case.
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
        for word in words:
            clauses.append("holds_word(query, ?)")
            params.append(word)
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
                self._delete(research_id)
            purge_orphans(self._db)  # rows of research deleted before they were fenced
        return len(ids)

    def _delete(self, research_id: str) -> bool:
        """Delete a research, its rows in every table and the pages no other research links to,
        inside the caller's transaction."""
        cursor = self._db.execute("DELETE FROM research WHERE id = ?", (research_id,))
        forget_pages(self._db, research_id)
        for table in RESEARCH_TABLES:
            self._db.execute(f"DELETE FROM {table} WHERE research_id = ?", (research_id,))
        return cursor.rowcount > 0

    # ------------------------------------------------------------------ waiting (store_waits)

    async def listen(self) -> None:
        """Nothing to do: SQLite's waits poll the file."""

    async def wait_for_change(
        self, research_id: str, timeout: float, since: Fingerprint | None = None
    ) -> bool:
        """Wait until the research is saved or deleted (by polling, one poll for every wait),
        at most ``timeout`` s."""
        return await self._changes.wait(research_id, timeout, since)

    def saved_here(self, research_id: str) -> None:
        """The waits for the research's change end now, not at the next poll."""
        self._changes.wake(research_id)

    async def wait_for_cancel(
        self, owner: Owner, research_ids: Iterable[str], timeout: float
    ) -> set[str]:
        """Wait until someone asks to cancel one of these research; their ids, or empty."""
        return await poll_for_cancel(self, owner, research_ids, timeout)

    def describe(self) -> StoreInfo:
        return StoreInfo("sqlite", str(self.research_dir / DB_NAME), DB_VERSION)

    def unavailable(self) -> FoundryError | None:
        """Never: the database is a file of this machine (its errors are the caller's)."""
        return None

    def shared_key(self, name: str) -> bytes:
        """The key ``name`` of this research directory (a private file beside the database)."""
        return file_key(self.research_dir, name)

    def admitting(self, principal: str) -> AbstractContextManager[None]:
        """The admission lock of this research directory (a file lock: one for all)."""
        return file_lock(self.research_dir)
