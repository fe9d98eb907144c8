"""The page tables of the SQLite store: page text kept once, linked to the research using it.

What a page is, and when a save writes one, is decided in
:mod:`foundry_mcp.research.store.pages`; this module reads and writes the two tables, always
inside the caller's transaction (saves, deletions) or under the store's lock (reads).
"""

from __future__ import annotations

import json
import sqlite3

from foundry_mcp.research.models import utcnow


def write_pages(db: sqlite3.Connection, research_id: str, pages: dict[str, str]) -> None:
    """Keep ``pages`` (text by hash) for ``research_id``: a page already kept is not written
    again, whichever research kept it."""
    if not pages:
        return
    now = utcnow().isoformat()
    db.executemany(
        "INSERT OR IGNORE INTO pages (hash, content, chars, created_at) VALUES (?, ?, ?, ?)",
        [(digest, text, len(text), now) for digest, text in pages.items()],
    )
    db.executemany(
        "INSERT OR IGNORE INTO research_pages (research_id, hash) VALUES (?, ?)",
        [(research_id, digest) for digest in pages],
    )


def read_pages(db: sqlite3.Connection, hashes: list[str]) -> dict[str, str]:
    """The texts of the pages ``hashes`` that are kept, by hash (one query)."""
    if not hashes:
        return {}
    rows = db.execute(
        "SELECT hash, content FROM pages WHERE hash IN (SELECT value FROM json_each(?))",
        (json.dumps(hashes),),
    ).fetchall()
    return {digest: text for digest, text in rows}


def forget_pages(db: sqlite3.Connection, research_id: str) -> None:
    """Delete the pages only ``research_id`` links to (its links go with its other rows)."""
    db.execute(
        "DELETE FROM pages WHERE hash IN (SELECT hash FROM research_pages WHERE research_id = ?) "
        "AND NOT EXISTS (SELECT 1 FROM research_pages AS other WHERE other.hash = pages.hash "
        "AND other.research_id <> ?)",
        (research_id, research_id),
    )
