"""The index of the user's documents: an embedded SQLite FTS5 database, kept up to date by scans.

The folders and files of ``[research.local] paths`` are indexed into
``research_dir/local-index.db``. A scan reads new and changed files again (by path, modification
time and size) and drops removed ones. Hidden files and folders, ``.git``, ``node_modules``,
``__pycache__`` and ``.venv`` are skipped, and so are files with other extensions or larger than
``max_file_bytes``; a symbolic link that leads out of its folder is not followed.

Each passage (see ``documents``) is stored with its URL fragment: ``L<start>-L<end>``, for a PDF
``page=<n>``. The index file is created on first use, and rebuilt when it is damaged, its schema
is not ours or the settings that shape it (extensions, size limit, passage size) change.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from foundry_mcp.config import LocalDocumentsSettings
from foundry_mcp.providers.pages.extract import PDFError
from foundry_mcp.providers.search.documents import PASSAGE_CHARS, Passage, read_document

log = logging.getLogger(__name__)

INDEX_FILE = "local-index.db"
SCHEMA_VERSION = 1
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv"}
COMMIT_EVERY = 1.0  # seconds of indexing work per write transaction

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    title TEXT NOT NULL,
    error TEXT,
    indexed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS passages (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    fragment TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS passages_by_file ON passages (file_id, seq);
CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(
    title, body, content='passages', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS passages_added AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts (rowid, title, body) VALUES (new.id, new.title, new.body);
END;
CREATE TRIGGER IF NOT EXISTS passages_removed AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts (passages_fts, rowid, title, body)
    VALUES ('delete', old.id, old.title, old.body);
END;
"""


@dataclass
class ScanStats:
    """What one scan of the folders did."""

    files_seen: int = 0
    indexed: int = 0
    removed: int = 0
    failed: int = 0
    seconds: float = 0.0


class LocalIndex:
    """The SQLite FTS5 index file of the local documents (``[research.local]``)."""

    def __init__(self, path: Path, settings: LocalDocumentsSettings) -> None:
        self.path = path
        self.settings = settings
        self.extensions = {
            (e if e.startswith(".") else f".{e}").lower() for e in settings.extensions
        }
        self._setup_lock = threading.Lock()
        self._ready = False  # the index file exists with the current schema and settings
        # When the last scan finished (time.monotonic()); None: never, or the file was rebuilt.
        self.scanned_at: float | None = None

    def recheck(self) -> None:
        """Check (and if need be rebuild) the index file on the next connection."""
        self._ready = False

    # ------------------------------------------------------------------ scanning

    def scan(self, roots: list[Path]) -> ScanStats:
        """Bring the index up to date with the files under ``roots``; one scan at a time."""
        started = time.perf_counter()
        stats = ScanStats()
        with closing(self.connect()) as conn:
            known = {
                path: (file_id, mtime, size)
                for file_id, path, mtime, size in conn.execute(
                    "SELECT id, path, mtime_ns, size FROM files"
                )
            }
            seen: set[str] = set()
            pending: list[tuple[str, os.stat_result]] = []
            for path, info in self._walk(roots):
                seen.add(path)
                stats.files_seen += 1
                old = known.get(path)
                if old is None or old[1] != info.st_mtime_ns or old[2] != info.st_size:
                    pending.append((path, info))
            batch_started = time.monotonic()
            conn.execute("BEGIN IMMEDIATE")
            try:
                for path in set(known) - seen:
                    self._forget(conn, path)
                    stats.removed += 1
                for path, info in pending:
                    if not self._index_file(conn, path, info):
                        stats.failed += 1
                    stats.indexed += 1
                    if time.monotonic() - batch_started > COMMIT_EVERY:
                        conn.execute("COMMIT")
                        conn.execute("BEGIN IMMEDIATE")
                        batch_started = time.monotonic()
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_scan', ?)",
                    (str(time.time()),),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        stats.seconds = round(time.perf_counter() - started, 3)
        if stats.indexed or stats.removed:
            log.info(
                "local documents: %d files, %d (re)indexed, %d removed, %d unreadable in %.2f s",
                stats.files_seen,
                stats.indexed,
                stats.removed,
                stats.failed,
                stats.seconds,
            )
        self.scanned_at = time.monotonic()
        return stats

    def _walk(self, roots: list[Path]) -> Iterator[tuple[str, os.stat_result]]:
        visited: set[str] = set()
        for root in roots:
            if root.is_file():
                candidates: Iterator[Path] = iter([root])
            else:
                candidates = self._files_under(root)
            for path in candidates:
                key = str(path)
                if key in visited or path.suffix.lower() not in self.extensions:
                    continue
                visited.add(key)
                try:
                    info = path.stat()
                except OSError:
                    continue
                if info.st_size > self.settings.max_file_bytes:
                    continue
                yield key, info

    def _files_under(self, root: Path) -> Iterator[Path]:
        """The files below ``root``; a symbolic link that leads out of it is not followed."""
        for directory, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = sorted(
                d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS
            )
            for filename in sorted(filenames):
                path = Path(directory, filename)
                if filename.startswith(".") or (path.is_symlink() and not _leads_into(path, root)):
                    continue
                yield path

    def _forget(self, conn: sqlite3.Connection, path: str) -> None:
        row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is not None:
            conn.execute("DELETE FROM passages WHERE file_id = ?", (row[0],))
            conn.execute("DELETE FROM files WHERE id = ?", (row[0],))

    def _index_file(self, conn: sqlite3.Connection, path: str, info: os.stat_result) -> bool:
        """Replace one file's passages; False when it could not be read (it is kept, empty)."""
        error: str | None = None
        title = Path(path).name
        passages: list[Passage] = []
        try:
            heading, passages = read_document(Path(path))
            if heading:
                title = f"{title} — {heading}"
        except (OSError, PDFError, ValueError) as exc:
            error = str(exc) or type(exc).__name__
            log.warning("cannot index %s: %s", path, error)
        self._forget(conn, path)
        cursor = conn.execute(
            "INSERT INTO files (path, mtime_ns, size, title, error, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (path, info.st_mtime_ns, info.st_size, title, error, time.time()),
        )
        file_id = cursor.lastrowid
        per_page: dict[int | None, int] = {}
        for passage in passages:
            per_page[passage.page] = per_page.get(passage.page, 0) + 1
        conn.executemany(
            "INSERT INTO passages (file_id, seq, start_line, end_line, fragment, title, body) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    file_id,
                    seq,
                    p.start_line,
                    p.end_line,
                    _fragment(p, per_page[p.page] > 1),
                    title,
                    p.text,
                )
                for seq, p in enumerate(passages)
            ],
        )
        return error is None

    # ------------------------------------------------------------------ database

    def connect(self) -> sqlite3.Connection:
        """A connection to the index; the first one creates (or rebuilds) it as needed."""
        if self._ready:
            return sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        with self._setup_lock:
            if self._ready:
                return self.connect()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = self._open()
            except sqlite3.DatabaseError as exc:
                if "fts5" in str(exc).lower():
                    raise
                log.warning("local document index %s is unusable (%s); rebuilding", self.path, exc)
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                self.scanned_at = None
                conn = self._open()
            self._ready = True
            return conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            fingerprint = self._fingerprint()
            if version not in (0, SCHEMA_VERSION):
                _drop_all(conn)
            conn.executescript(_SCHEMA)
            row = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
            if row is None or row[0] != fingerprint:
                # Other extensions, size limit or passage size: every file must be read again.
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("DELETE FROM passages")
                conn.execute("DELETE FROM files")
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('settings', ?)",
                    (fingerprint,),
                )
                conn.execute("COMMIT")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _fingerprint(self) -> str:
        raw = "|".join(
            [
                str(SCHEMA_VERSION),
                str(PASSAGE_CHARS),
                str(self.settings.max_file_bytes),
                ",".join(sorted(self.extensions)),
            ]
        )
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _drop_all(conn: sqlite3.Connection) -> None:
    for statement in (
        "DROP TRIGGER IF EXISTS passages_added",
        "DROP TRIGGER IF EXISTS passages_removed",
        "DROP TABLE IF EXISTS passages_fts",
        "DROP TABLE IF EXISTS passages",
        "DROP TABLE IF EXISTS files",
        "DROP TABLE IF EXISTS meta",
    ):
        conn.execute(statement)


def _fragment(passage: Passage, page_has_several: bool) -> str:
    lines = (
        f"L{passage.start_line}"
        if passage.start_line == passage.end_line
        else f"L{passage.start_line}-L{passage.end_line}"
    )
    if passage.page is None:
        return lines
    return f"page={passage.page}&{lines}" if page_has_several else f"page={passage.page}"


def _leads_into(link: Path, root: Path) -> bool:
    """Whether a symbolic link's target lies inside ``root`` (a broken link does not)."""
    try:
        return link.resolve(strict=True).is_relative_to(root)
    except (OSError, RuntimeError):
        return False
