"""The spend ledger and the clean-up of orphaned rows, in a shared PostgreSQL store.

The same contract as :mod:`foundry_mcp.research.store.sqlite.ledger`: a save books, in its own
statement, what the state cost since the ledger last heard of it, in the hour of the database's
clock; the ledger outlives its research; the rows of research that no longer exist go on the
next retention pass.
"""

from __future__ import annotations

from typing import Any

import psycopg

from foundry_mcp.research.store.states import RESEARCH_TABLES, Snapshot

SMALLEST_COST = 1e-12  # below this a difference of totals is rounding, not spend

# Follows a ``saved`` CTE (the research row written, ``RETURNING id, principal``): books the
# cost the state carries beyond what the ledger holds for it. Parameters: total, total, smallest.
SPEND = (
    ", spent AS (INSERT INTO spend (research_id, principal, hour, cost_usd) "
    "SELECT id, principal, date_trunc('hour', now(), 'UTC'), more FROM (SELECT id, principal, "
    "%s - COALESCE((SELECT sum(cost_usd) FROM spend WHERE research_id = saved.id), 0) AS more "
    "FROM saved) AS due WHERE more > %s ON CONFLICT (research_id, hour) "
    "DO UPDATE SET cost_usd = spend.cost_usd + excluded.cost_usd)"
)


def spend_of(snapshot: Snapshot) -> tuple[str, tuple[object, ...]]:
    """The :data:`SPEND` part of a save and its parameters (none when the state cost nothing
    yet)."""
    total = snapshot.spent_usd
    if total <= 0:
        return "", ()
    return SPEND, (total, SMALLEST_COST)


def save_statement(
    snapshot: Snapshot, fence: str | None, params: tuple[object, ...]
) -> tuple[str, tuple[object, ...]]:
    """The one statement that writes ``snapshot`` and books its spend, and its parameters; it
    answers how many research rows it wrote. Without ``fence`` an insert or replace; with, an
    update of the row that matches ``fence`` (``params`` its parameters)."""
    values = (
        snapshot.status,
        snapshot.phase,
        snapshot.iteration,
        snapshot.updated_at,
        snapshot.json,
    )
    if fence is not None:
        saved = (
            "UPDATE research SET status=%s, phase=%s, iteration=%s, updated_at=%s, state=%s "
            f"WHERE id=%s AND {fence} RETURNING id, principal"
        )
        saved_params: tuple[object, ...] = (*values, snapshot.id, *params)
    else:
        saved = (
            "INSERT INTO research (status, phase, iteration, updated_at, state, id, "
            "query, created_at, principal) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET status=excluded.status, "
            "phase=excluded.phase, iteration=excluded.iteration, "
            "updated_at=excluded.updated_at, state=excluded.state RETURNING id, principal"
        )
        saved_params = (
            *values,
            snapshot.id,
            snapshot.query,
            snapshot.created_at,
            snapshot.principal,
        )
    spend, spend_params = spend_of(snapshot)
    return (
        f"WITH saved AS ({saved}){spend} SELECT count(*) FROM saved",
        (*saved_params, *spend_params),
    )


def spent_since_in(conn: psycopg.Connection[Any], principal: str, since: object) -> float:
    """What the principal's research cost from the start of the hour of ``since`` on."""
    row = conn.execute(
        "SELECT COALESCE(sum(cost_usd), 0) FROM spend WHERE principal = %s "
        "AND hour >= date_trunc('hour', %s::timestamptz, 'UTC')",
        (principal, since),
    ).fetchone()
    return float(row[0]) if row else 0.0


def purge_orphans(conn: psycopg.Connection[Any]) -> None:
    """Delete, inside the caller's transaction (after its page lock), the rows of research that
    no longer exist and the pages no research links to."""
    for table in RESEARCH_TABLES:
        conn.execute(
            f"DELETE FROM {table} WHERE NOT EXISTS "
            f"(SELECT 1 FROM research WHERE research.id = {table}.research_id)"
        )
    conn.execute(
        "DELETE FROM pages WHERE NOT EXISTS "
        "(SELECT 1 FROM research_pages WHERE research_pages.hash = pages.hash)"
    )
