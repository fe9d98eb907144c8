"""The research database file: its tables, its schema migrations, opening it, transactions.

One SQLite database in WAL mode under ``research_dir``, readable from any process while one
writes. This module migrates the tables; the JSON of each stored state is migrated when it is
loaded (:mod:`foundry_mcp.research.store.states`). Version 6 added the page tables (``pages``,
``research_pages``: :mod:`foundry_mcp.research.store.pages`); the texts of states written before
move there on their next save. Version 7 added the spend ledger (``spend``: what each research
cost, by hour, kept after the research is deleted; filled from the states already stored) and
the archived originals (``archived``, their text in ``pages``:
:mod:`foundry_mcp.research.store.archive`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from foundry_mcp.errors import ConfigError

DB_NAME = "research.db"
DB_VERSION = 7
BUSY_TIMEOUT_SECONDS = 30

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
CREATE TABLE IF NOT EXISTS llm_journal (
    research_id       TEXT NOT NULL,
    key               TEXT NOT NULL,
    at                TEXT NOT NULL,
    answer            TEXT NOT NULL,
    record            TEXT NOT NULL,
    PRIMARY KEY (research_id, key)
);
CREATE TABLE IF NOT EXISTS events (
    research_id       TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    at                TEXT NOT NULL,
    kind              TEXT NOT NULL,
    data              TEXT NOT NULL,
    PRIMARY KEY (research_id, seq)
);
CREATE TABLE IF NOT EXISTS pages (
    hash              TEXT PRIMARY KEY,
    content           TEXT NOT NULL,
    chars             INTEGER NOT NULL,
    created_at        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS research_pages (
    research_id       TEXT NOT NULL,
    hash              TEXT NOT NULL,
    PRIMARY KEY (research_id, hash)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS research_pages_by_hash ON research_pages (hash);
CREATE TABLE IF NOT EXISTS spend (
    research_id       TEXT NOT NULL,
    principal         TEXT,
    hour              TEXT NOT NULL,
    cost_usd          REAL NOT NULL,
    PRIMARY KEY (research_id, hour)
);
CREATE INDEX IF NOT EXISTS spend_by_principal ON spend (principal, hour);
CREATE TABLE IF NOT EXISTS archived (
    research_id       TEXT NOT NULL,
    hash              TEXT NOT NULL,
    item_id           TEXT NOT NULL,
    item_type         TEXT NOT NULL,
    reason            TEXT NOT NULL,
    original_tokens   INTEGER NOT NULL,
    metadata          TEXT NOT NULL,
    archived_at       TEXT NOT NULL,
    PRIMARY KEY (research_id, hash)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS archived_by_hash ON archived (hash);
"""

# Version 7: the spend of the research stored before the ledger, booked in the hour each began.
_V7_SPEND = (
    "INSERT OR IGNORE INTO spend (research_id, principal, hour, cost_usd) "
    "SELECT id, principal, substr(created_at, 1, 13) || ':00:00+00:00', cost FROM ("
    "SELECT id, principal, created_at, CASE WHEN json_valid(state) THEN "
    "json_extract(state, '$.llm_usage.total.cost_usd') END AS cost FROM research) "
    "WHERE cost > 0"
)

# Columns added by version 2 (ownership and cross-process cancel); older files are migrated.
_V2_COLUMNS = {
    "owner_token": "TEXT",
    "owner_pid": "INTEGER",
    "owner_host": "TEXT",
    "lease_until": "REAL",
    "cancel_requested": "INTEGER NOT NULL DEFAULT 0",
    # Version 4: the owner's process start time, so that a reused pid is not taken for it.
    "owner_started": "REAL",
    # Version 5: whose research it is on a team server (NULL: the local user's).
    "principal": "TEXT",
}
_V2_INDEXES = (
    "CREATE INDEX IF NOT EXISTS research_by_status ON research (status, created_at DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS research_by_owner ON research (owner_token)",
    "CREATE INDEX IF NOT EXISTS research_by_principal "
    "ON research (principal, created_at DESC, id DESC)",
)


def open_database(research_dir: Path) -> sqlite3.Connection:
    """The migrated database under ``research_dir`` (created if missing); ``ConfigError`` if not."""
    try:
        research_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(
            f"Cannot create research_dir {research_dir}: {exc.strerror}.",
            remediation="Set [research] research_dir or FOUNDRY_MCP_RESEARCH_DIR to a "
            "writable local folder.",
        ) from None
    try:
        db = connect(research_dir / DB_NAME)
        db.execute("PRAGMA journal_mode=WAL")
        _migrate(db)
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
    return db


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the database at ``path``: usable from any thread (its users take turns
    under a lock), in autocommit (transactions are explicit), waiting up to
    ``BUSY_TIMEOUT_SECONDS`` for a write lock another connection holds."""
    db = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None
    )
    db.execute("PRAGMA synchronous=NORMAL")
    # LIKE folds ASCII letters only; the research list's word search folds every letter.
    db.create_function("holds_word", 2, holds_word, deterministic=True)
    return db


def holds_word(text: str | None, word: str) -> bool:
    """Whether ``text`` holds ``word``, in any case (any alphabet)."""
    return text is not None and word.lower() in text.lower()


def _migrate(db: sqlite3.Connection) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > DB_VERSION:
        raise sqlite3.DatabaseError(
            f"schema version {version} is newer than this foundry-mcp ({DB_VERSION})"
        )
    with transaction(db):
        for statement in _TABLES.split(";"):
            if statement.strip():
                db.execute(statement)
        present = {row[1] for row in db.execute("PRAGMA table_info(research)")}
        for column, kind in _V2_COLUMNS.items():
            if column not in present:
                db.execute(f"ALTER TABLE research ADD COLUMN {column} {kind}")
        for statement in _V2_INDEXES:
            db.execute(statement)
        if version < 7:
            db.execute(_V7_SPEND)
        db.execute(f"PRAGMA user_version = {DB_VERSION}")


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taken at once (``BEGIN IMMEDIATE``); rolled back on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
