"""The journal of LLM answers: every answer a research paid for, by the content of its request.

Each completed LLM call is written here (its answer with its usage record, in one transaction)
before the answer is used. A resumed research that sends the same request again gets the saved
answer back instead of paying for it twice (:class:`foundry_mcp.research.llm.calls`).
Entries are deleted with their research.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from typing import Any

from foundry_mcp.research.models import utcnow
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.records import JournalEntry
from foundry_mcp.research.store.sqlite.database import transaction
from foundry_mcp.research.store.sqlite.leases import check_held


class LLMJournal:
    """The llm_journal table, read and written on the store's connection."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self._db = db
        self._lock = lock  # the store's: one statement at a time on the shared connection

    def get(self, research_id: str, key: str) -> JournalEntry | None:
        with self._lock:
            row = self._db.execute(
                "SELECT answer, record FROM llm_journal WHERE research_id = ? AND key = ?",
                (research_id, key),
            ).fetchone()
        return None if row is None else JournalEntry(row[0], json.loads(row[1]))

    def put(
        self, research_id: str, key: str, answer: str, record: dict[str, Any], owner: Owner
    ) -> None:
        """Save an answer, fenced: only while ``owner`` still holds the research."""
        with self._lock, transaction(self._db):
            check_held(self._db, research_id, owner)
            self._db.execute(
                "INSERT OR REPLACE INTO llm_journal (research_id, key, at, answer, record) "
                "VALUES (?, ?, ?, ?, ?)",
                (research_id, key, utcnow().isoformat(), answer, json.dumps(record)),
            )

    def count(self, research_id: str) -> int:
        with self._lock:
            return int(
                self._db.execute(
                    "SELECT COUNT(*) FROM llm_journal WHERE research_id = ?", (research_id,)
                ).fetchone()[0]
            )
