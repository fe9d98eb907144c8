"""The audit trail of each research: numbered events in the research database."""

from __future__ import annotations

import json
import sqlite3
import threading
from typing import Any

from foundry_mcp.research.models import utcnow
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.records import Event, event_json
from foundry_mcp.research.store.sqlite.database import transaction
from foundry_mcp.research.store.sqlite.leases import check_held


class EventLog:
    """The events table, read and written on the store's connection."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self._db = db
        self._lock = lock  # the store's: one statement at a time on the shared connection

    def append(
        self, research_id: str, kind: str, data: dict[str, Any], owner: Owner | None = None
    ) -> int:
        """Append to the research's audit trail; returns the event's sequence number. With
        ``owner``, fenced: ``LeaseLostError`` unless ``owner`` still holds the research."""
        at = utcnow().isoformat()
        payload = event_json(data)
        with self._lock, transaction(self._db):
            if owner is not None:
                check_held(self._db, research_id, owner)
            seq = self._db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE research_id = ?",
                (research_id,),
            ).fetchone()[0]
            self._db.execute(
                "INSERT INTO events (research_id, seq, at, kind, data) VALUES (?, ?, ?, ?, ?)",
                (research_id, seq, at, kind, payload),
            )
        return int(seq)

    def page(self, research_id: str, after: int, limit: int) -> list[Event]:
        """Events with ``seq > after``, oldest first, at most ``limit``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, at, kind, data FROM events WHERE research_id = ? AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (research_id, after, limit),
            ).fetchall()
        return [Event(row[0], row[1], row[2], json.loads(row[3])) for row in rows]

    def last_at(self, research_id: str) -> str | None:
        """When the newest event was recorded; ``None`` if there is none."""
        with self._lock:
            row = self._db.execute(  # the newest event, found through the primary key
                "SELECT at FROM events WHERE research_id = ? ORDER BY seq DESC LIMIT 1",
                (research_id,),
            ).fetchone()
        return None if row is None else row[0]
