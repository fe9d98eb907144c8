"""The user's own documents as a search provider: an embedded SQLite FTS5 index, ranked by BM25.

The folders and files of ``[research.local] paths`` are indexed into
``research_dir/local-index.db``. Before a search, when the last scan is more than a few seconds
old, the index is brought up to date in a worker thread: new and changed files (by path,
modification time and size) are read again, removed ones dropped. Hidden files and folders,
``.git``, ``node_modules``, ``__pycache__`` and ``.venv`` are skipped, and so are files with
other extensions or larger than ``max_file_bytes``.

Each document is split into passages of about 1,200 characters that remember their lines (their
page for a PDF). A hit is one passage: its URL is ``file:///path#L<start>-L<end>`` (for a PDF
``#page=<n>``), its snippet FTS5's highlight, its content the passage with its neighbours.

Query text is never handed to FTS5 as syntax: it is cut into words and each word is quoted.

For the planner, ``sample`` names a few indexed documents (their path below the configured folder
and their first heading): those most relevant to the question first, then a spread of the rest.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import anyio

from foundry_mcp.config import LocalDocumentsSettings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.extract import PDFError, html_title, html_to_text, read_pdf
from foundry_mcp.providers.search.base import SearchResult

log = logging.getLogger(__name__)

T = TypeVar("T")

INDEX_FILE = "local-index.db"
SCHEMA_VERSION = 1
SCAN_INTERVAL = 5.0  # seconds between two scans of the folders
PASSAGE_CHARS = 1200
MAX_PER_FILE = 2  # passages of one file in one answer, so one long file does not crowd out
MAX_QUERY_TERMS = 32
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv"}
COMMIT_EVERY = 1.0  # seconds of indexing work per write transaction
_HTML = {".html", ".htm", ".xhtml"}
_MARKDOWN = {".md", ".markdown"}
# fmt: off
_STOPWORDS = frozenset({
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it",
    "its", "of", "on", "or", "should", "so", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "to", "was", "we", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your",
})
# fmt: on

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

_SEARCH = """
SELECT p.id, p.file_id, p.seq, p.fragment, f.path, f.title,
       snippet(passages_fts, 1, '**', '**', ' … ', 40),
       bm25(passages_fts, 2.0, 1.0) AS rank
FROM passages_fts
JOIN passages AS p ON p.id = passages_fts.rowid
JOIN files AS f ON f.id = p.file_id
WHERE passages_fts MATCH ?
ORDER BY rank
LIMIT ?
"""


# The documents whose passages or titles match the question, best first (FTS5's ``rank`` column
# with the search's weights: a plain bm25() cannot be aggregated).
_SAMPLE_RANKED = """
SELECT f.path, f.title, min(passages_fts.rank) AS best
FROM passages_fts
JOIN passages AS p ON p.id = passages_fts.rowid
JOIN files AS f ON f.id = p.file_id
WHERE passages_fts MATCH ? AND passages_fts.rank MATCH 'bm25(2.0, 1.0)'
GROUP BY f.id
ORDER BY best
LIMIT ?
"""

# Every n-th document with text, in path order, so that the sample spans the folders.
_SAMPLE_SPREAD = """
SELECT path, title FROM (
    SELECT path, title, row_number() OVER (ORDER BY path) - 1 AS n, count(*) OVER () AS total
    FROM files WHERE EXISTS (SELECT 1 FROM passages WHERE passages.file_id = files.id)
)
WHERE n % max(1, (total + ? - 1) / ?) = 0
LIMIT ?
"""


@dataclass(frozen=True)
class Passage:
    """A piece of a document, with the lines it spans (1-based, inclusive)."""

    start_line: int
    end_line: int
    text: str
    page: int | None = None


@dataclass
class ScanStats:
    """What one scan of the folders did."""

    files_seen: int = 0
    indexed: int = 0
    removed: int = 0
    failed: int = 0
    seconds: float = 0.0


def fts_query(text: str, column: str | None = "body") -> str | None:
    """``text`` as a safe FTS5 query on ``column`` (None: any column): its words, each quoted,
    joined by OR.

    Quoting makes every word a plain string token, so operators (AND, NEAR, ``*``, ``:``,
    parentheses, unbalanced quotes) in the user's text are searched for as words or ignored.
    None when the text has no word at all.
    """
    words = [w.lower() for w in re.findall(r"\w+", text)]
    words = list(dict.fromkeys(w for w in words if w.strip("_")))
    meaningful = [w for w in words if w not in _STOPWORDS] or words
    if not meaningful:
        return None
    terms = " OR ".join(f'"{word}"' for word in meaningful[:MAX_QUERY_TERMS])
    # A search matches passage text only: a word of the file's title alone would make every
    # passage of that file a hit.
    return f"{column} : ({terms})" if column else f"({terms})"


def split_passages(
    text: str, target: int = PASSAGE_CHARS, page: int | None = None
) -> list[Passage]:
    """Cut ``text`` into passages of about ``target`` characters, at blank lines when possible."""
    passages: list[Passage] = []
    buffer: list[str] = []
    size = 0
    start = 1

    def flush(end: int) -> None:
        nonlocal buffer, size
        body = "\n".join(buffer).strip()
        if body:
            passages.append(Passage(start, end, body, page))
        buffer, size = [], 0

    for number, line in enumerate(text.splitlines(), start=1):
        if len(line) > target:  # a very long line (minified code, one-paragraph text)
            if buffer:
                flush(number - 1)
            for piece in _pieces(line, target):
                start = number
                buffer, size = [piece], len(piece)
                flush(number)
            start = number + 1
            continue
        if not buffer:
            start = number
            if not line.strip():
                continue
        if not line.strip() and size >= target * 0.6:
            flush(number - 1)
            continue
        buffer.append(line)
        size += len(line) + 1
        if size >= target:
            flush(number)
    if buffer:
        flush(start + len(buffer) - 1)
    return passages


def _pieces(line: str, target: int) -> Iterator[str]:
    while len(line) > target:
        cut = line.rfind(" ", target // 2, target)
        cut = cut if cut > 0 else target
        yield line[:cut]
        line = line[cut:].lstrip()
    if line.strip():
        yield line


def first_heading(text: str, suffix: str) -> str | None:
    """The first heading of a Markdown or reStructuredText document."""
    lines = text.splitlines()[:200]
    if suffix in _MARKDOWN:
        for index, line in enumerate(lines):
            match = re.match(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", line)
            if match:
                return match.group(1).strip()
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if line.strip() and re.fullmatch(r"\s*(=+|-+)\s*", following) and index < 3:
                return line.strip()
    if suffix == ".rst":
        for index, line in enumerate(lines[:-1]):
            underline = lines[index + 1].strip()
            if (
                line.strip()
                and len(underline) >= len(line.strip())
                and re.fullmatch(r"([=\-~^*#+])\1+", underline)
            ):
                return line.strip()
    return None


class LocalDocuments:
    """Full-text search over the user's documents (``[research.local]``)."""

    def __init__(self, name: str, settings: LocalDocumentsSettings, index_path: Path) -> None:
        self.name = name
        self.settings = settings
        self.index_path = index_path
        self._extensions = {
            (e if e.startswith(".") else f".{e}").lower() for e in settings.extensions
        }
        self._scan_lock = threading.Lock()
        self._setup_lock = threading.Lock()
        self._ready = False  # the index file exists with the current schema and settings
        self._last_scan: float | None = None
        self._warned: set[str] = set()

    # ------------------------------------------------------------------ search

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        return await self._off_loop(self._search_sync, query, max_results)

    async def sample(self, question: str, limit: int) -> list[str]:
        """Up to ``limit`` documents of the index, named for the planner (see the module).

        Each is ``path below its folder`` plus `` — first heading`` when it has one; nothing
        outside the configured folders is named. The index is brought up to date first.
        """
        return await self._off_loop(self._sample_sync, question, limit)

    async def _off_loop(self, work: Callable[[str, int], T], text: str, count: int) -> T:
        """``work(text, count)`` in a worker thread (SQLite and file reads block the loop)."""
        try:
            return await anyio.to_thread.run_sync(work, text, count)
        except sqlite3.Error as exc:
            self._ready = False  # check (and if need be rebuild) the index on next use
            raise ProviderError(
                f"The local document index cannot be used: {exc}.",
                provider=self.name,
                retryable=False,
                kind="unknown",
                remediation=(
                    f"Delete {self.index_path} (it is rebuilt from your documents) and resume "
                    "the research."
                ),
            ) from None

    async def aclose(self) -> None:
        """Nothing to release: every search opens and closes its own connection."""

    def _search_sync(self, query: str, max_results: int) -> list[SearchResult]:
        self.refresh()
        match = fts_query(query)
        if match is None or max_results < 1:
            return []
        with closing(self._connect()) as conn:
            rows = conn.execute(_SEARCH, (match, max_results * 5)).fetchall()
            results: list[SearchResult] = []
            per_file: dict[int, int] = {}
            for _pid, file_id, seq, fragment, path, title, snippet, rank in rows:
                if per_file.get(file_id, 0) >= MAX_PER_FILE:
                    continue
                per_file[file_id] = per_file.get(file_id, 0) + 1
                around = conn.execute(
                    "SELECT body FROM passages WHERE file_id = ? AND seq BETWEEN ? AND ? "
                    "ORDER BY seq",
                    (file_id, seq - 1, seq + 1),
                ).fetchall()
                results.append(
                    SearchResult(
                        title=title,
                        url=f"{Path(path).as_uri()}#{fragment}",
                        snippet=re.sub(r"\s+", " ", snippet).strip(),
                        content="\n".join(body for (body,) in around),
                        score=-float(rank),
                        provider=self.name,
                    )
                )
                if len(results) >= max_results:
                    break
        return results

    def _sample_sync(self, question: str, limit: int) -> list[str]:
        self.refresh()
        if limit < 1:
            return []
        roots = self._roots()
        match = fts_query(question, column=None)
        with closing(self._connect()) as conn:
            ranked = conn.execute(_SAMPLE_RANKED, (match, limit)).fetchall() if match else []
            spread = conn.execute(_SAMPLE_SPREAD, (limit, limit, limit)).fetchall()
        names: list[str] = []
        for path, title, *_ in [*ranked, *spread]:
            name = _sample_name(path, title, roots)
            if name is not None and name not in names and len(names) < limit:
                names.append(name)
        return names

    # ------------------------------------------------------------------ indexing

    def refresh(self, force: bool = False) -> ScanStats | None:
        """Bring the index up to date if the last scan is old (or ``force``); thread-safe."""
        with self._scan_lock:
            now = time.monotonic()
            if not force and self._last_scan is not None and now - self._last_scan < SCAN_INTERVAL:
                return None
            stats = self._scan()
            self._last_scan = time.monotonic()
            return stats

    def _scan(self) -> ScanStats:
        started = time.perf_counter()
        stats = ScanStats()
        roots = self._roots()
        with closing(self._connect()) as conn:
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
        return stats

    def _roots(self) -> list[Path]:
        roots: list[Path] = []
        missing: list[str] = []
        for raw in self.settings.paths:
            path = raw.expanduser()
            if path.exists():
                roots.append(path.resolve())
            else:
                missing.append(str(path))
        for absent in missing:
            if absent not in self._warned:
                self._warned.add(absent)
                log.warning("[research.local] path %s does not exist; skipped", absent)
        if self.settings.paths and not roots:
            raise ProviderError(
                "None of the [research.local] paths exists: " + ", ".join(missing) + ".",
                provider=self.name,
                kind="bad_request",
                remediation=(
                    "Correct [research.local] paths in your foundry-mcp.toml (absolute paths or "
                    "~/...), then resume the research."
                ),
            )
        return roots

    def _walk(self, roots: list[Path]) -> Iterator[tuple[str, os.stat_result]]:
        visited: set[str] = set()
        for root in roots:
            if root.is_file():
                candidates: Iterator[Path] = iter([root])
            else:
                candidates = self._files_under(root)
            for path in candidates:
                key = str(path)
                if key in visited or path.suffix.lower() not in self._extensions:
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

    def _connect(self) -> sqlite3.Connection:
        """A connection to the index; the first one creates (or rebuilds) it as needed."""
        if self._ready:
            return sqlite3.connect(self.index_path, timeout=30.0, isolation_level=None)
        with self._setup_lock:
            if self._ready:
                return self._connect()
            self.index_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = self._open()
            except sqlite3.DatabaseError as exc:
                if "fts5" in str(exc).lower():
                    raise
                log.warning(
                    "local document index %s is unusable (%s); rebuilding", self.index_path, exc
                )
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.index_path}{suffix}").unlink(missing_ok=True)
                self._last_scan = None
                conn = self._open()
            self._ready = True
            return conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.index_path, timeout=30.0, isolation_level=None)
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
                ",".join(sorted(self._extensions)),
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


def read_document(path: Path) -> tuple[str | None, list[Passage]]:
    """The first heading and the passages of one file (HTML and PDF extracted to text)."""
    suffix = path.suffix.lower()
    data = path.read_bytes()
    if suffix == ".pdf":
        pages, title = read_pdf(data)
        passages: list[Passage] = []
        for number, page in enumerate(pages, start=1):
            passages.extend(split_passages(page, page=number))
        return title, passages
    if b"\x00" in data[:8192]:
        raise ValueError("binary file")
    text = data.decode("utf-8", errors="replace")
    if suffix in _HTML:
        return html_title(text), split_passages(html_to_text(text))
    return first_heading(text, suffix), split_passages(text)


def _sample_name(path: str, title: str, roots: list[Path]) -> str | None:
    """A document as the sample names it; None when it lies outside every configured root.

    The index file may hold another configuration's documents until the next scan drops them.
    """
    file = Path(path)
    for root in roots:
        if file.is_relative_to(root):
            below = file.name if file == root else file.relative_to(root).as_posix()
            return below + title.removeprefix(file.name)
    return None


def _leads_into(link: Path, root: Path) -> bool:
    """Whether a symbolic link's target lies inside ``root`` (a broken link does not)."""
    try:
        return link.resolve(strict=True).is_relative_to(root)
    except (OSError, RuntimeError):
        return False
