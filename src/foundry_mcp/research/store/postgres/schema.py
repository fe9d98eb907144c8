"""The store's tables in PostgreSQL and the migrations that make them.

Migrations are ordered and numbered; the numbers applied are rows of ``foundry_schema``. At open
a store reads the highest one and, when it is behind, applies the rest in one transaction under
an advisory lock, so that of two servers starting at once one migrates and the other waits and
finds nothing left to do. A role that may not create tables can use a database migrated before.

A research row changing (saved, created, deleted) and a cancel request are announced with
NOTIFY by triggers, whatever statement made them (:mod:`foundry_mcp.research.store.postgres.notify`).
"""

from __future__ import annotations

from typing import Any

import psycopg

from foundry_mcp.errors import ConfigError
from foundry_mcp.research.store.url import redact_url

SCHEMA_VERSION = 4
CHANGED_CHANNEL = "foundry_research_changed"  # payload: the research id
CANCEL_CHANNEL = "foundry_cancel_requested"  # payload: the research id
MIGRATION_LOCK = 0x666F756E647279  # "foundry": the advisory lock key of migrations

_VERSION_1 = f"""
CREATE TABLE research (
    id                text PRIMARY KEY,
    status            text NOT NULL,
    phase             text NOT NULL,
    iteration         integer NOT NULL,
    query             text NOT NULL,
    principal         text,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    state             text NOT NULL,
    owner_token       text,
    owner_pid         integer,
    owner_host        text,
    owner_started     double precision,
    lease_until       timestamptz,
    cancel_requested  boolean NOT NULL DEFAULT false
);
CREATE INDEX research_by_created ON research (created_at DESC, id DESC);
CREATE INDEX research_by_status ON research (status, created_at DESC, id DESC);
CREATE INDEX research_by_owner ON research (owner_token);
CREATE INDEX research_by_principal ON research (principal, created_at DESC, id DESC);
CREATE TABLE branches (
    research_id       text NOT NULL,
    branch_id         text NOT NULL,
    updated_at        timestamptz NOT NULL,
    state             text NOT NULL,
    PRIMARY KEY (research_id, branch_id)
);
CREATE TABLE llm_journal (
    research_id       text NOT NULL,
    key               text NOT NULL,
    at                timestamptz NOT NULL,
    answer            text NOT NULL,
    record            jsonb NOT NULL,
    PRIMARY KEY (research_id, key)
);
CREATE TABLE events (
    research_id       text NOT NULL,
    seq               integer NOT NULL,
    at                timestamptz NOT NULL,
    kind              text NOT NULL,
    data              jsonb NOT NULL,
    PRIMARY KEY (research_id, seq)
);
CREATE FUNCTION foundry_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('{CHANGED_CHANNEL}', OLD.id);
    ELSE
        PERFORM pg_notify('{CHANGED_CHANNEL}', NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION foundry_notify_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{CANCEL_CHANNEL}', NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER research_changed AFTER INSERT OR DELETE OR UPDATE OF updated_at ON research
    FOR EACH ROW EXECUTE FUNCTION foundry_notify_changed();
CREATE TRIGGER research_cancel_requested AFTER UPDATE OF cancel_requested ON research
    FOR EACH ROW WHEN (NEW.cancel_requested) EXECUTE FUNCTION foundry_notify_cancel();
"""

# Keys every server of the team shares (the one task ids are signed with), made on first use.
_VERSION_2 = """
CREATE TABLE foundry_keys (
    name              text PRIMARY KEY,
    value             bytea NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now()
);
"""

# Page text kept once per store, outside the research states (store/pages.py), as UTF-8 bytes;
# the texts of states written before move here on their next save.
_VERSION_3 = """
CREATE TABLE pages (
    hash              text PRIMARY KEY,
    content           bytea NOT NULL,
    chars             integer NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE research_pages (
    research_id       text NOT NULL,
    hash              text NOT NULL,
    PRIMARY KEY (research_id, hash)
);
CREATE INDEX research_pages_by_hash ON research_pages (hash);
"""

# The spend ledger (what each research cost, by hour; kept after the research is deleted), filled
# from the research already stored (a state that is not valid JSON is skipped), and the archived
# originals of each research (their text is a page of it).
_VERSION_4 = """
CREATE TABLE spend (
    research_id       text NOT NULL,
    principal         text,
    hour              timestamptz NOT NULL,
    cost_usd          double precision NOT NULL,
    PRIMARY KEY (research_id, hour)
);
CREATE INDEX spend_by_principal ON spend (principal, hour);
DO $$
DECLARE
    stored record;
    cost double precision;
BEGIN
    FOR stored IN SELECT id, principal, created_at, state FROM research LOOP
        BEGIN
            cost := (stored.state::jsonb #>> '{llm_usage,total,cost_usd}')::double precision;
        EXCEPTION WHEN others THEN
            cost := NULL;
        END;
        IF cost > 0 THEN
            INSERT INTO spend (research_id, principal, hour, cost_usd) VALUES
                (stored.id, stored.principal, date_trunc('hour', stored.created_at, 'UTC'), cost);
        END IF;
    END LOOP;
END $$;
CREATE TABLE archived (
    research_id       text NOT NULL,
    hash              text NOT NULL,
    item_id           text NOT NULL,
    item_type         text NOT NULL,
    reason            text NOT NULL,
    original_tokens   integer NOT NULL,
    metadata          jsonb NOT NULL,
    archived_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (research_id, hash)
);
CREATE INDEX archived_by_hash ON archived (hash);
"""

# (version, statements), oldest first. Never edit a released one: add the next.
MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, _VERSION_1),
    (2, _VERSION_2),
    (3, _VERSION_3),
    (4, _VERSION_4),
)


def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The highest migration applied to the database (0: none)."""
    found = conn.execute("SELECT to_regclass('foundry_schema') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return 0
    row = conn.execute("SELECT COALESCE(max(version), 0) FROM foundry_schema").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: psycopg.Connection[Any], url: str) -> None:
    """Apply the migrations the database lacks, one server at a time (an advisory lock)."""
    current = schema_version(conn)
    if current == SCHEMA_VERSION:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS foundry_schema (version integer PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = schema_version(conn)  # another server may have migrated meanwhile
        if current > SCHEMA_VERSION:
            raise ConfigError(
                f"The research store {redact_url(url)} has schema version {current}, newer "
                f"than this foundry-mcp's ({SCHEMA_VERSION}).",
                remediation="Upgrade foundry-mcp on this host to the version the other "
                "servers of the team run.",
            )
        for version, statements in MIGRATIONS:
            if version > current:
                conn.execute(statements)  # no parameters: the statements run as one script
                conn.execute("INSERT INTO foundry_schema (version) VALUES (%s)", (version,))
