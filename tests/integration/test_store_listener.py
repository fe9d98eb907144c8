"""The store's listening connection is the first to learn that PostgreSQL went away: a restart
ends it at once, while a status call would wait for the pool to find out. The store takes the
database as lost the moment it ends (a status answers the last one read, without waiting; a call
already waiting for the pool gives up), and as back once it listens again and the pool can give
a connection. A server opens it when it starts."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import psycopg
import pytest
from psycopg_pool import PoolTimeout

from foundry_mcp.config import load_settings
from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.models import Phase, Status
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.database import Database, open_database
from foundry_mcp.research.store.postgres.notify import Listener
from foundry_mcp.runtime import research_runtime
from tests.postgres import PostgresServer, postgres_for_a_test
from tests.support import stored_state

pytestmark = pytest.mark.anyio


async def test_the_listener_says_when_its_connection_ends_and_when_it_listens_again(
    postgres_url: str,
) -> None:
    database = open_database(postgres_url)
    backends: list[int] = []

    def connect() -> psycopg.Connection[Any]:
        conn = database.connect()
        backends.append(conn.info.backend_pid)
        return conn

    lost: list[psycopg.OperationalError] = []
    reached: list[int] = []  # how many losses it had heard of each time it listened
    listener = Listener(connect, lost=lost.append, reached=lambda: reached.append(len(lost)))
    try:
        assert await listener.ready()
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backends[0],))
        with anyio.fail_after(5):
            while len(reached) < 2:
                await anyio.sleep(0.02)
        assert len(lost) == 1  # the backend ended, as every session ends in a restart
        assert reached == [0, 1] and len(backends) == 2
    finally:
        listener.close()
        database.close()


class _CountingPool:
    """A pool whose connections are never used: it counts how often it is asked for one, and
    gives one only when ``up``."""

    def __init__(self) -> None:
        self.asked = 0
        self.checked = 0
        self.up = False

    def check(self) -> None:
        self.checked += 1

    timeout = 0.0

    def getconn(self, timeout: float | None = None) -> Any:
        self.asked += 1
        if not self.up:
            raise PoolTimeout("couldn't get a connection after 5.00 sec")
        return _Unused()

    def putconn(self, conn: Any) -> None:
        pass


class _Unused:
    """A connection nobody sends a statement on."""

    def __enter__(self) -> _Unused:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def test_a_database_found_lost_fails_calls_at_once_until_its_pool_reconnects() -> None:
    pool = _CountingPool()
    database = Database("postgresql://foundry@db.example/foundry", cast(Any, pool))
    database.found_lost(psycopg.errors.LockNotAvailable("lock timeout"))  # refused, not lost
    assert database.outage is None
    database.found_lost(psycopg.errors.AdminShutdown("terminating connection"))
    with pytest.raises(StoreUnavailableError, match="cannot be reached"), database.connection():
        pass
    assert pool.asked == 0  # failed at once
    database.found_reachable()  # the listener is back, the pool not yet: still out of reach
    assert database.outage is not None and (pool.checked, pool.asked) == (1, 1)
    pool.up = True
    database.found_reachable()
    assert database.outage is None
    with database.connection():
        pass
    assert pool.asked == 3


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    with postgres_for_a_test() as running:
        yield running


def _listening(server: PostgresServer) -> bool:
    """Whether a session of ``server`` LISTENs for the store's notifications."""
    with psycopg.connect(server.url(), autocommit=True) as admin:
        found = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN foundry_%'"
        ).fetchone()
    return bool(found and found[0])


def _stop(server: PostgresServer) -> None:
    """A fast shutdown, as ``pg_ctl stop`` or a restart begins: every session is ended."""
    postmaster = int((server.socket_dir / "data" / "postmaster.pid").read_text().split()[0])
    os.kill(postmaster, signal.SIGINT)


async def test_a_status_answers_the_last_read_as_soon_as_the_database_stops(
    research_env: dict[str, str], tmp_path: Path, own_postgres: PostgresServer
) -> None:
    env = {**research_env, "FOUNDRY_MCP_STORE_URL": own_postgres.url()}
    settings = load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))
    async with research_runtime(settings, warm=False) as service:
        state = stored_state(status=Status.RUNNING, phase=Phase.GATHERING)
        service.store.create(state, Owner(), 60)
        assert (await service.status(state.id))["warnings"] == []
        with anyio.fail_after(5):  # a server listens from its start, before any wait
            while not await anyio.to_thread.run_sync(_listening, own_postgres):
                await anyio.sleep(0.05)
        _stop(own_postgres)
        with anyio.fail_after(5):  # learnt from the listener: no call has failed yet
            while service.store.unavailable() is None:
                await anyio.sleep(0.02)
        remembered = await service.status(state.id)
        assert (remembered["status"], remembered["phase"]) == ("running", "gathering")
        assert "cannot be reached" in remembered["warnings"][0]
        assert "This is the status as read at" in remembered["warnings"][0]


class _EmptyPool:
    """A pool with no connection to give: each ask waits its whole timeout, as the real one
    does while the database is away."""

    timeout = 5.0

    def getconn(self, timeout: float | None = None) -> Any:
        time.sleep(self.timeout if timeout is None else timeout)
        raise PoolTimeout("couldn't get a connection")

    def putconn(self, conn: Any) -> None:
        raise AssertionError("no connection was given")


def test_a_call_waiting_for_the_pool_gives_up_once_the_database_is_known_lost() -> None:
    """Reads already waiting for a connection when the listener learns of a restart do not
    hold their threads for the pool's whole timeout (statuses would queue behind them)."""
    database = Database("postgresql://foundry@db.example/foundry", cast(Any, _EmptyPool()))
    failed: list[BaseException] = []

    def status_read() -> None:
        try:
            with database.connection():
                pass
        except StoreUnavailableError as exc:
            failed.append(exc)

    waiting = threading.Thread(target=status_read)
    waiting.start()
    time.sleep(0.2)
    database.found_lost(psycopg.errors.AdminShutdown("terminating connection"))
    waiting.join(timeout=2)  # well within the pool's 5 s
    assert not waiting.is_alive()
    assert "cannot be reached" in str(failed[0])
