"""The audit trail and the LLM journal of each research, in a shared PostgreSQL store.

The same contracts as the SQLite store's events and journal (the ``Event`` and
``JournalEntry`` rows of :mod:`foundry_mcp.research.store.records`); times are the database's.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from foundry_mcp.research.store.owners import Owner, fenced
from foundry_mcp.research.store.postgres.database import Database, iso
from foundry_mcp.research.store.records import Event, JournalEntry, event_json

APPEND_ATTEMPTS = 20  # two processes appending to one research at once: the later one retries


class PgEventLog:
    """The events table, on the store's connection pool."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def append(
        self, research_id: str, kind: str, data: dict[str, Any], owner: Owner | None = None
    ) -> int:
        """Append to the research's audit trail; returns the event's sequence number. With
        ``owner``, fenced: ``LeaseLostError`` unless ``owner`` still holds the research (its row
        share-locked by the same statement, as a journal entry's)."""
        payload = event_json(data)
        if owner is None:
            statement = (
                "INSERT INTO events (research_id, seq, at, kind, data) "
                "SELECT %s, COALESCE(max(seq), 0) + 1, now(), %s, %s::jsonb "
                "FROM events WHERE research_id = %s RETURNING seq"
            )
            params: tuple[object, ...] = (research_id, kind, payload, research_id)
        else:
            statement = (
                "WITH held AS (SELECT id FROM research WHERE id = %s AND owner_token = %s "
                "FOR SHARE) INSERT INTO events (research_id, seq, at, kind, data) "
                "SELECT id, (SELECT COALESCE(max(seq), 0) + 1 FROM events "
                "WHERE research_id = held.id), now(), %s, %s::jsonb FROM held RETURNING seq"
            )
            params = (research_id, owner.token, kind, payload)
        with self._db.connection() as conn:
            for _ in range(APPEND_ATTEMPTS):
                try:
                    row = conn.execute(statement, params).fetchone()
                except psycopg.errors.UniqueViolation:
                    continue  # another process took this number first
                if row is None:
                    fenced(0, research_id)
                assert row is not None
                return int(row[0])
        raise RuntimeError(f"could not number an event of {research_id}")

    def page(self, research_id: str, after: int, limit: int) -> list[Event]:
        """Events with ``seq > after``, oldest first, at most ``limit``."""
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT seq, at, kind, data FROM events WHERE research_id = %s AND seq > %s "
                "ORDER BY seq LIMIT %s",
                (research_id, after, limit),
            ).fetchall()
        return [Event(row[0], iso(row[1]), row[2], row[3]) for row in rows]

    def last_at(self, research_id: str) -> str | None:
        """When the newest event was recorded; ``None`` if there is none."""
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT at FROM events WHERE research_id = %s ORDER BY seq DESC LIMIT 1",
                (research_id,),
            ).fetchone()
        return None if row is None else iso(row[0])


class PgJournal:
    """The llm_journal table, on the store's connection pool."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, research_id: str, key: str) -> JournalEntry | None:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT answer, record FROM llm_journal WHERE research_id = %s AND key = %s",
                (research_id, key),
            ).fetchone()
        return None if row is None else JournalEntry(row[0], row[1])

    def put(
        self, research_id: str, key: str, answer: str, record: dict[str, Any], owner: Owner
    ) -> None:
        """Save an answer, fenced: only while ``owner`` still holds the research.

        The owner's row is share-locked by the same statement, so a claim by another process
        either waits for this write or makes it find no row (``LeaseLostError``).
        """
        with self._db.connection() as conn:
            cursor = conn.execute(
                "WITH held AS (SELECT id FROM research WHERE id = %s AND owner_token = %s "
                "FOR SHARE) "
                "INSERT INTO llm_journal (research_id, key, at, answer, record) "
                "SELECT id, %s, now(), %s, %s::jsonb FROM held "
                "ON CONFLICT (research_id, key) DO UPDATE SET at = excluded.at, "
                "answer = excluded.answer, record = excluded.record",
                (research_id, owner.token, key, answer, json.dumps(record)),
            )
            fenced(cursor.rowcount, research_id)

    def count(self, research_id: str) -> int:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FROM llm_journal WHERE research_id = %s", (research_id,)
            ).fetchone()
        return int(row[0]) if row else 0
