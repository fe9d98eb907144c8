"""The PostgreSQL database of a shared store: connecting (a pool, with what it knows of an
outage), and the driver's failures turned into errors a user can act on. The tables and their
migrations are :mod:`foundry_mcp.research.store.postgres.schema`. Every time is
``timestamptz``; leases are measured on the database's clock.
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
from psycopg_pool import ConnectionPool, PoolTimeout

from foundry_mcp.errors import ConfigError, StoreUnavailableError
from foundry_mcp.research.store.access.patience import PATIENT_SECONDS, StatementLost, is_patient
from foundry_mcp.research.store.postgres.schema import migrate
from foundry_mcp.research.store.url import redact_url, scrub

POOL_MAX_SIZE = 8
POOL_TIMEOUT_SECONDS = 5.0  # longest wait for a free or new connection
CONNECT_TIMEOUT_SECONDS = 10
# Once the database could not be reached, calls fail at once for this long instead of each
# waiting for the pool (status reads, reports and health probes answer quickly while the
# database is down); patient calls, a run's (``store.patience``), wait for it instead.
OUTAGE_SECONDS = 3.0
CHECKOUT_SLICE_SECONDS = 0.1  # how often a call waiting for the pool looks for a known outage


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
        self._fail_fast(wait)
        connected = False
        try:
            conn = self._checkout(wait)
            try:
                with conn:
                    connected = True
                    yield conn
            finally:
                self.pool.putconn(conn)
        except psycopg.OperationalError as exc:  # includes the pool's timeout
            error = unavailable(exc, self.url)
            if _lost(exc):
                self._mark_lost(error, now)
                if connected:  # the statement was sent: the database may have applied it
                    error = StatementLost(error.message, remediation=error.remediation)
            raise error from None
        self._outage = None

    def _fail_fast(self, wait: float | None) -> None:
        """Raise the known outage for a call that is not patient (``wait`` None)."""
        if wait is None and self._outage is not None and time.monotonic() < self._outage_until:
            raise StoreUnavailableError(self._outage.message, remediation=self._outage.remediation)

    def _checkout(self, wait: float | None) -> psycopg.Connection[Any]:
        """A connection of the pool: a patient call waits up to ``wait`` seconds; any other up
        to the pool's timeout, asked for in short slices, so that it gives up as soon as the
        database is known lost (the listener may learn it meanwhile) instead of holding its
        thread for the whole timeout while statuses queue behind it."""
        if wait is not None:
            return self.pool.getconn(timeout=wait)
        deadline = time.monotonic() + self.pool.timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return self.pool.getconn(timeout=max(0.0, min(left, CHECKOUT_SLICE_SECONDS)))
            except PoolTimeout:
                if left <= CHECKOUT_SLICE_SECONDS:
                    raise
            self._fail_fast(None)

    def found_lost(self, exc: psycopg.OperationalError) -> None:
        """Take the database as out of reach, as a call that found it so would: the listening
        connection ending (a restart, a shutdown) says so before any call has to wait for the
        pool. An error that is not a lost database (a refused statement) changes nothing."""
        if _lost(exc):
            self._mark_lost(unavailable(exc, self.url), time.monotonic())

    def found_reachable(self) -> None:
        """The database answered a connection of its own (the listener's): once the pool can
        give a connection again (it reconnects on its own schedule, a second or two behind),
        calls go to the database at once, not only once ``OUTAGE_SECONDS`` have passed. Until
        then a status answers the last one read instead of waiting for the pool."""
        if self._outage is None:
            return
        try:
            self.pool.check()  # idle connections from before the outage: tried, and replaced
            self.pool.putconn(self.pool.getconn(timeout=self.pool.timeout))
        except psycopg.OperationalError:  # the pool's timeout: calls find out on their own
            return
        self._outage = None

    def _mark_lost(self, error: StoreUnavailableError, now: float) -> None:
        if self._outage is None:
            self._outage_began = now
        self._outage, self._outage_until = error, time.monotonic() + OUTAGE_SECONDS

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
