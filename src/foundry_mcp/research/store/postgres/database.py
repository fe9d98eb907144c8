"""The PostgreSQL database of a shared store: connecting (a pool), the tables and their
migrations, and the driver's failures turned into errors a user can act on.

Migrations are ordered and numbered; the numbers applied are rows of ``foundry_schema``. At open
a store reads the highest one and, when it is behind, applies the rest in one transaction under
an advisory lock, so that of two servers starting at once one migrates and the other waits and
finds nothing left to do. A role that may not create tables can use a database migrated before.

A research row changing (saved, created, deleted) and a cancel request are announced with
NOTIFY by triggers, whatever statement made them (:mod:`foundry_mcp.research.store.postgres.notify`).
Every time is ``timestamptz``; leases are measured on the database's clock.
"""

from __future__ import annotations

import select
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from foundry_mcp.errors import ConfigError, StoreUnavailableError
from foundry_mcp.research.store.patience import PATIENT_SECONDS, StatementLost, is_patient
from foundry_mcp.research.store.url import redact_url, scrub

SCHEMA_VERSION = 4
CHANGED_CHANNEL = "foundry_research_changed"  # payload: the research id
CANCEL_CHANNEL = "foundry_cancel_requested"  # payload: the research id
MIGRATION_LOCK = 0x666F756E647279  # "foundry": the advisory lock key of migrations

POOL_MAX_SIZE = 8
POOL_TIMEOUT_SECONDS = 5.0  # longest wait for a free or new connection
CONNECT_TIMEOUT_SECONDS = 10
# Once the database could not be reached, calls fail at once for this long instead of each
# waiting for the pool (status reads, reports and health probes answer quickly while the
# database is down); patient calls, a run's (``store.patience``), wait for it instead.
OUTAGE_SECONDS = 3.0

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


@dataclass
class Database:
    """The pool of connections to one PostgreSQL database, and how to name it in errors."""

    url: str
    pool: ConnectionPool
    _outage: StoreUnavailableError | None = field(default=None, init=False)
    _outage_until: float = field(default=0.0, init=False)
    _outage_began: float = field(default=0.0, init=False)  # when the current outage was found

    @property
    def shown(self) -> str:
        return redact_url(self.url)

    @property
    def outage(self) -> StoreUnavailableError | None:
        """Why the last statement could not reach the database, until one does again."""
        return self._outage

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool (autocommit); a lost server is ``StoreUnavailableError``
        (``StatementLost`` when it was lost during a statement), raised at once for
        ``OUTAGE_SECONDS`` after one call found it lost. A patient call (``store.patience``)
        waits for a connection instead, until the outage is ``PATIENT_SECONDS`` old."""
        now = time.monotonic()
        wait = self._patience(now)
        if wait is None and self._outage is not None and now < self._outage_until:
            raise StoreUnavailableError(self._outage.message, remediation=self._outage.remediation)
        pooled = self.pool.connection() if wait is None else self.pool.connection(timeout=wait)
        connected = False
        try:
            with pooled as conn:
                connected = True
                yield conn
        except psycopg.OperationalError as exc:  # includes the pool's timeout
            error = unavailable(exc, self.url)
            if _lost(exc):
                if self._outage is None:
                    self._outage_began = now
                self._outage, self._outage_until = error, time.monotonic() + OUTAGE_SECONDS
                if connected:  # the statement was sent: the database may have applied it
                    error = StatementLost(error.message, remediation=error.remediation)
            raise error from None
        self._outage = None

    def _patience(self, now: float) -> float | None:
        """How long a call may wait for a connection: None for the pool's timeout (a call
        that is not patient, or an outage too old for patience)."""
        if not is_patient():
            return None
        began = now if self._outage is None else self._outage_began
        left = began + PATIENT_SECONDS - now
        return left if left > POOL_TIMEOUT_SECONDS else None

    def connect(self) -> psycopg.Connection[Any]:
        """A connection of its own, outside the pool (the listener's)."""
        return psycopg.connect(self.url, **connection_options(self.url))

    def close(self) -> None:
        self.pool.close(timeout=5.0)


def check_idle(conn: psycopg.Connection[Any]) -> None:
    """The pool's check of a connection it hands out, without a round trip: an idle
    connection the server has written to (a FATAL on a terminated backend, the end of the
    stream of a restarted server) is checked with a statement, and replaced when that fails;
    any other is handed out as it is. Checking every connection with a statement would double
    every statement's round trips."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    if _readable(conn.pgconn.socket):
        ConnectionPool.check_connection(conn)


def _readable(fd: int) -> bool:
    """Whether ``fd`` has something to read (or was closed), without waiting."""
    if hasattr(select, "poll"):  # any descriptor number, unlike select()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])


def _lost(exc: psycopg.OperationalError) -> bool:
    """Whether the database is out of reach (not a statement refused, e.g. by a lock timeout):
    a failure without SQLSTATE (no connection, the pool's timeout), a connection exception
    (08) or the server shutting down (57P)."""
    return exc.sqlstate is None or exc.sqlstate.startswith(("08", "57P"))


def open_database(url: str) -> Database:
    """Connect, migrate the schema, and open the pool; clear errors when any of it fails."""
    try:
        with psycopg.connect(url, **connection_options(url)) as conn:
            migrate(conn, url)
    except psycopg.OperationalError as exc:
        raise unavailable(exc, url) from None
    except psycopg.Error as exc:
        raise ConfigError(
            f"The research store {redact_url(url)} cannot be used: {scrub(str(exc), url)}.",
            remediation="Give store_url's user the right to create tables in its database "
            "(or migrate it once as its owner: docs/team-server.md), then start again.",
        ) from None
    pool: ConnectionPool = ConnectionPool(
        url,
        kwargs=connection_options(url),
        min_size=1,
        max_size=POOL_MAX_SIZE,
        timeout=POOL_TIMEOUT_SECONDS,
        check=check_idle,  # a connection the server dropped is replaced, at no round trip
        name="foundry-mcp-store",
        open=True,
    )
    return Database(url, pool)


def connection_options(url: str) -> dict[str, Any]:
    """What every connection adds to the URL: autocommit, and defaults the URL may override."""
    try:
        given = conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise ConfigError(
            f"[research] store_url is not a valid PostgreSQL URL: {scrub(str(exc), url)}.",
            remediation="Write it as postgresql://user:password@host:5432/database "
            "(see docs/team-server.md).",
        ) from None
    options: dict[str, Any] = {"autocommit": True}
    defaults = {
        "connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "application_name": "foundry-mcp",
        "keepalives_idle": 30,  # a listener behind a dead link notices it
    }
    options.update({key: value for key, value in defaults.items() if key not in given})
    return options


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


_REFUSED_LOGIN = (
    "password authentication failed",
    "no pg_hba.conf entry",
    "authentication failed",
    "password is required",
    "role ",  # role "x" does not exist
)


def unavailable(exc: psycopg.Error, url: str) -> StoreUnavailableError:
    """The error of a connection that failed, with the fix for its cause and no password."""
    reason = scrub(str(exc).strip().rstrip("."), url) or type(exc).__name__
    shown = redact_url(url)
    # A refused login carries no SQLSTATE in psycopg; the server's (English) words say why.
    state = getattr(exc, "sqlstate", None) or ""
    said = reason.lower()
    if state.startswith("28") or any(words in said for words in _REFUSED_LOGIN):
        fix = (
            "Check the user and password in [research] store_url (or FOUNDRY_MCP_STORE_URL), "
            "and that the server's pg_hba.conf lets this host log in as that user."
        )
    elif state == "3D000" or ("database" in said and "does not exist" in said):
        fix = "Create the database (createdb -O <user> <database>, see docs/team-server.md)."
    else:
        fix = (
            f"Start PostgreSQL or correct the host and port of {shown}; `pg_isready -d "
            "<store_url>` tells whether it answers. Then try again."
        )
    return StoreUnavailableError(
        f"The research store {shown} cannot be reached: {reason}.", remediation=fix
    )


def iso(moment: datetime) -> str:
    """A stored time as the SQLite store writes it: ISO 8601 in UTC."""
    return moment.astimezone(UTC).isoformat()
