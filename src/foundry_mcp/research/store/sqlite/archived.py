"""Archived originals in the SQLite store, and the spend ledger's reading: what the store
offers beside its states (:mod:`foundry_mcp.research.store.archive` says what an archived
original is; :mod:`foundry_mcp.research.store.sqlite.ledger` keeps the ledger)."""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import datetime, timedelta
from pathlib import Path

from foundry_mcp.context.archive import ArchiveRecord, normal_hash
from foundry_mcp.research.models import utcnow
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.records import research_not_found
from foundry_mcp.research.store.sqlite.database import DB_NAME, transaction
from foundry_mcp.research.store.sqlite.leases import check_held
from foundry_mcp.research.store.sqlite.ledger import spent_since
from foundry_mcp.research.store.sqlite.pages import write_pages

_ARCHIVED_AT = "%Y-%m-%dT%H:%M:%SZ"


class ArchiveAndSpend:
    """The archive and ledger methods of the SQLite store (``ResearchStore``)."""

    research_dir: Path
    _db: sqlite3.Connection
    _lock: threading.Lock

    def archive_content(
        self, research_id: str, record: ArchiveRecord, owner: Owner | None = None
    ) -> None:
        """Keep an archived original of ``research_id`` (its text as a page of it); with
        ``owner``, fenced (``LeaseLostError``). Archived again, its time starts over."""
        with self._lock, transaction(self._db):
            if owner is not None:
                check_held(self._db, research_id, owner)
            elif (
                self._db.execute("SELECT 1 FROM research WHERE id = ?", (research_id,)).fetchone()
                is None
            ):
                raise research_not_found(research_id)
            write_pages(self._db, research_id, {record.content_hash: record.content})
            self._db.execute(
                "INSERT INTO archived (research_id, hash, item_id, item_type, reason, "
                "original_tokens, metadata, archived_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (research_id, hash) DO UPDATE SET archived_at = excluded.archived_at",
                (
                    research_id,
                    record.content_hash,
                    record.item_id,
                    record.item_type,
                    record.archive_reason,
                    record.original_tokens,
                    json.dumps(record.metadata, ensure_ascii=False),
                    utcnow().strftime(_ARCHIVED_AT),
                ),
            )

    def archived_content(self, research_id: str, content_hash: str) -> ArchiveRecord | None:
        """The original ``research_id`` archived under ``content_hash``, as kept (its hash is
        the caller's to check); None if there is none."""
        with self._lock:
            row = self._db.execute(
                "SELECT archived.hash, pages.content, item_id, item_type, archived_at, reason, "
                "original_tokens, metadata FROM archived JOIN pages ON pages.hash = archived.hash "
                "WHERE research_id = ? AND archived.hash = ?",
                (research_id, normal_hash(content_hash)),
            ).fetchone()
        if row is None:
            return None
        return ArchiveRecord(
            row[0], row[1], row[2], row[3], row[4], row[5], row[6], json.loads(row[7])
        )

    def purge_archived(self, older_than_hours: float) -> int:
        """Forget the archived originals older than ``older_than_hours``; how many. (Their text
        stays a page of its research until the research is deleted.)"""
        cutoff = (utcnow() - timedelta(hours=older_than_hours)).strftime(_ARCHIVED_AT)
        with self._lock, transaction(self._db):
            cursor = self._db.execute("DELETE FROM archived WHERE archived_at < ?", (cutoff,))
        return cursor.rowcount

    def spent_since(self, principal: str, since: datetime) -> float:
        """What ``principal``'s research cost since ``since`` (whole hours: from the start of
        the hour of ``since``), research deleted since included; one statement.
        ``StoreUnavailableError`` when the database cannot answer."""
        with self._lock:
            return spent_since(self._db, self.research_dir / DB_NAME, principal, since)
