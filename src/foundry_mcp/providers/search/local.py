"""The user's own documents as a search provider: an embedded SQLite FTS5 index, ranked by BM25.

The folders and files of ``[research.local] paths`` are indexed (see ``local_index``) into
``research_dir/local-index.db``. Before a search, when the last scan is more than a few seconds
old, the index is brought up to date in a worker thread.

Each document is split into passages of about 1,200 characters that remember their lines (their
page for a PDF; see ``documents``). A hit is one passage: its URL is
``file:///path#L<start>-L<end>`` (for a PDF ``#page=<n>``), its snippet FTS5's highlight, its
content the passage with its neighbours.

Query text is never handed to FTS5 as syntax: it is cut into words and each word is quoted.

For the planner, ``sample`` names a few indexed documents (their path below the configured folder
and their first heading): those most relevant to the question first, then a spread of the rest.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TypeVar

import anyio

from foundry_mcp.config import LocalDocumentsSettings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.search.base import SearchResult, SourceType
from foundry_mcp.providers.search.bounds import SourceBounds
from foundry_mcp.providers.search.documents import first_heading, split_passages
from foundry_mcp.providers.search.local_index import INDEX_FILE, LocalIndex, ScanStats

__all__ = [
    "INDEX_FILE",
    "SCAN_INTERVAL",
    "LocalDocuments",
    "ScanStats",
    "first_heading",
    "fts_query",
    "split_passages",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

SCAN_INTERVAL = 5.0  # seconds between two scans of the folders
MAX_PER_FILE = 2  # passages of one file in one answer, so one long file does not crowd out
MAX_QUERY_TERMS = 32
# fmt: off
_STOPWORDS = frozenset({
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it",
    "its", "of", "on", "or", "should", "so", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "to", "was", "we", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your",
})
# fmt: on

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


class LocalDocuments:
    """Full-text search over the user's documents (``[research.local]``)."""

    source_types: tuple[SourceType, ...] = ("local",)

    def __init__(self, name: str, settings: LocalDocumentsSettings, index_path: Path) -> None:
        self.name = name
        self.settings = settings
        self.index_path = index_path
        self.index = LocalIndex(index_path, settings)
        self._scan_lock = threading.Lock()
        self._warned: set[str] = set()

    # ------------------------------------------------------------------ search

    async def search(
        self,
        query: str,
        max_results: int,
        source_type: SourceType | None = None,
        *,
        bounds: SourceBounds | None = None,
    ) -> list[SearchResult]:
        """Passages matching ``query``; ``bounds`` is ignored: the user's own documents are
        never domain- or date-filtered."""
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
            self.index.recheck()  # check (and if need be rebuild) the index on next use
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
        with closing(self.index.connect()) as conn:
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
        with closing(self.index.connect()) as conn:
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
            last = self.index.scanned_at
            if not force and last is not None and now - last < SCAN_INTERVAL:
                return None
            return self._scan()

    def _scan(self) -> ScanStats:
        return self.index.scan(self._roots())

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
