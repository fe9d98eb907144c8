"""The spend ledger and the clean-up of orphaned rows, in the SQLite store.

What each research cost is booked by hour (``spend``) in the transaction of the save that
carries the cost: the state's running total (``llm_usage.spent_usd``) less what the ledger
already holds for the research, when that is more. The ledger is not deleted with its
research, so a principal's spend of the last day (``spent_since``) stays exact when research
is deleted. Rows of other tables left by a research that no longer exists (an event appended
after its deletion, by a version that did not fence events) go on the next retention pass.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.models import utcnow
from foundry_mcp.research.store.states import RESEARCH_TABLES, Snapshot

SMALLEST_COST = 1e-12  # below this a difference of totals is rounding, not spend


def hour_of(moment: datetime) -> str:
    """The ledger's key of the hour ``moment`` falls in (UTC, ISO 8601); naive means UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0).isoformat()


def record_spend(db: sqlite3.Connection, snapshot: Snapshot) -> None:
    """Book what the saved state cost since the ledger last heard of it, inside the caller's
    transaction (after the state's own write, so only a save that landed books)."""
    total = snapshot.spent_usd
    if total <= 0:
        return
    db.execute(
        "INSERT INTO spend (research_id, principal, hour, cost_usd) "
        "SELECT id, principal, ?, ? - COALESCE((SELECT SUM(cost_usd) FROM spend "
        "WHERE research_id = ?), 0) AS more FROM research WHERE id = ? AND more > ? "
        "ON CONFLICT (research_id, hour) DO UPDATE SET cost_usd = cost_usd + excluded.cost_usd",
        (hour_of(utcnow()), total, snapshot.id, snapshot.id, SMALLEST_COST),
    )


def spent_since(db: sqlite3.Connection, database: Path, principal: str, since: datetime) -> float:
    """What the principal's research cost from the hour of ``since`` on (the whole hour:
    never less than the exact figure); ``StoreUnavailableError`` if the database fails."""
    try:
        row = db.execute(
            "SELECT COALESCE(SUM(cost_usd), 0) FROM spend WHERE principal = ? AND hour >= ?",
            (principal, hour_of(since)),
        ).fetchone()
    except sqlite3.Error as exc:
        raise StoreUnavailableError(
            f"The research database {database} cannot be read: {exc}.",
            remediation="Check that research_dir is on a local, writable disk with free "
            "space, then try again.",
        ) from None
    return float(row[0])


def purge_orphans(db: sqlite3.Connection) -> None:
    """Delete, inside the caller's transaction, the rows of research that no longer exist and
    the pages no research links to."""
    for table in RESEARCH_TABLES:
        db.execute(
            f"DELETE FROM {table} WHERE NOT EXISTS "
            f"(SELECT 1 FROM research WHERE research.id = {table}.research_id)"
        )
    db.execute(
        "DELETE FROM pages WHERE NOT EXISTS "
        "(SELECT 1 FROM research_pages WHERE research_pages.hash = pages.hash)"
    )
