"""A persistent cache of summaries, in ``<research_dir>/context-cache.db`` (SQLite, WAL).

A summary is keyed by the hash of exactly what the summarizer read, the level, the target size
and the prompt version: a resumed research, or another research reading the same page, reuses
it instead of paying for it again. Any provider's summary of the same input is reused. The
cache is best effort: an unreadable or locked database only costs a new summary.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

CACHE_FILE = "context-cache.db"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS summaries (
    key        TEXT PRIMARY KEY,
    text       TEXT NOT NULL,
    tokens     INTEGER NOT NULL,
    provider   TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


def summary_key(prompt_version: str, level: str, target: int, text: str) -> str:
    """The cache key of summarizing ``text`` to ``level`` at ``target`` tokens."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{prompt_version}:{level}:{target}:{digest}"


class SummaryCache:
    """Summaries by key; thread-safe; silently empty when the database cannot be used."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / CACHE_FILE
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            db = sqlite3.connect(self.path, timeout=5.0, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            db.commit()
            os.chmod(self.path, 0o600)
            self._db = db
        except (sqlite3.Error, OSError) as exc:
            log.warning("summary cache %s unavailable: %s", self.path, exc)

    def get(self, key: str) -> tuple[str, str] | None:
        """``(text, provider)`` of a cached summary, or None."""
        if self._db is None:
            return None
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT text, provider FROM summaries WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.Error as exc:
            log.debug("summary cache read failed: %s", exc)
            return None
        return (str(row[0]), str(row[1])) if row else None

    def put(self, key: str, text: str, tokens: int, provider: str) -> None:
        if self._db is None:
            return
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO summaries (key, text, tokens, provider, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key, text, tokens, provider, time.time()),
                )
                self._db.commit()
        except sqlite3.Error as exc:
            log.debug("summary cache write failed: %s", exc)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
