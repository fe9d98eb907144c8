"""The page tables of the PostgreSQL store: page text kept once, linked to the research using it.

What a page is, and when a save writes one, is decided in
:mod:`foundry_mcp.research.store.pages`; this module reads and writes the two tables inside the
caller's transaction. A text is kept as its UTF-8 bytes (``bytea``): a page may hold a NUL,
which a PostgreSQL ``text`` cannot.

Servers on several hosts save and delete at once. A deletion that removes the pages no research
links to any more must not remove one that a concurrent save is linking to (its link not yet
committed, so not yet visible). So page writes and page deletions take one advisory lock, shared
by the writes (they never wait for each other) and exclusive for deletions, always before any
row lock of the transaction: a deletion sees every link committed before it, and a write that
waited for a deletion finds the page gone and writes it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

PAGES_LOCK = 0x666F756E64727970  # "foundryp": the advisory lock key of page writes and deletions

# The part of a deletion statement (after its ``gone`` CTE of deleted research ids) that deletes
# the pages only those research link to; their links go with their other rows.
FORGET_PAGES = (
    ", forgotten AS (DELETE FROM pages WHERE hash IN (SELECT hash FROM research_pages "
    "WHERE research_id IN (SELECT id FROM gone)) AND NOT EXISTS (SELECT 1 FROM research_pages "
    "AS other WHERE other.hash = pages.hash AND other.research_id NOT IN (SELECT id FROM gone)))"
)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def lock_for_writes(conn: psycopg.Connection[Any]) -> None:
    """Inside a transaction, before its first row lock: no page deletion runs until it ends."""
    conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (PAGES_LOCK,))


def lock_for_deletion(conn: psycopg.Connection[Any]) -> None:
    """Inside a transaction, before its first row lock: no page write runs until it ends."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (PAGES_LOCK,))


@contextmanager
def saving(conn: psycopg.Connection[Any], pages: dict[str, str]) -> Iterator[None]:
    """Around a save: nothing when it keeps no page (its one statement is atomic), else one
    transaction that takes the page lock (:func:`lock_for_writes`) first."""
    if not pages:
        yield
        return
    with conn.transaction():
        lock_for_writes(conn)
        yield


def write_pages(conn: psycopg.Connection[Any], research_id: str, pages: dict[str, str]) -> None:
    """Keep ``pages`` (text by hash) for ``research_id``, after :func:`lock_for_writes`: only
    the pages no research kept yet travel to the server."""
    if not pages:
        return
    digests = list(pages)
    kept = {
        row[0]
        for row in conn.execute(
            "SELECT hash FROM pages WHERE hash = ANY(%s)", (digests,)
        ).fetchall()
    }
    new = [digest for digest in digests if digest not in kept]
    if new:
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO pages (hash, content, chars) VALUES (%s, %s, %s) "
                "ON CONFLICT (hash) DO NOTHING",
                [(digest, _utf8(pages[digest]), len(pages[digest])) for digest in new],
            )
    conn.execute(
        "INSERT INTO research_pages (research_id, hash) SELECT %s, unnest(%s::text[]) "
        "ON CONFLICT DO NOTHING",
        (research_id, digests),
    )


def read_pages(conn: psycopg.Connection[Any], hashes: list[str]) -> dict[str, str]:
    """The texts of the pages ``hashes`` that are kept, by hash (one query)."""
    if not hashes:
        return {}
    with conn.cursor(binary=True) as cursor:
        rows = cursor.execute(
            "SELECT hash, content FROM pages WHERE hash = ANY(%s)", (hashes,)
        ).fetchall()
    return {digest: bytes(content).decode("utf-8", "surrogatepass") for digest, content in rows}
