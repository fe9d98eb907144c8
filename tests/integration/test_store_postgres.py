"""What only the PostgreSQL store does: migrations under a lock, leases on the database's clock,
errors that name the fix and never the password, a listener and a pool that outlive a lost
connection, and ``foundry-mcp doctor`` on a shared store. The contract both stores keep is in
``test_store_contract.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import psycopg
import pytest

from foundry_mcp.config import load_settings
from foundry_mcp.errors import ConfigError, QuotaExceededError, StoreUnavailableError
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.principal import Principal
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres import database as store_pg_db
from foundry_mcp.research.store.postgres.database import OUTAGE_SECONDS, Database, open_database
from foundry_mcp.research.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from foundry_mcp.research.store.postgres.store import PostgresStore
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer
from tests.postgres import PostgresServer
from tests.support import TERMINAL, wait_until

PASSWORD = "pw-Sekr3t-do-not-show"


@pytest.fixture
def store(postgres_url: str, tmp_path: Path) -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url, tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def alice(postgres_server: PostgresServer) -> str:
    """A role that logs in with a password (the test superuser needs none)."""
    role = f"alice_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        conn.execute(f"CREATE SCHEMA {role} AUTHORIZATION {role}")
    return role


def _state(**fields: object) -> ResearchState:
    return ResearchState(query="q", llm_provider="openai", llm_model="m", **fields)  # type: ignore[arg-type]


def _sql(url: str, statement: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement)
        return cursor.fetchall() if cursor.description else []


# --------------------------------------------------------------------------- schema


def test_servers_starting_at_once_migrate_once(postgres_url: str) -> None:
    barrier = threading.Barrier(4)
    failures: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            open_database(postgres_url).close()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert failures == []
    versions = _sql(postgres_url, "SELECT version FROM foundry_schema ORDER BY version")
    assert versions == [(version,) for version, _ in MIGRATIONS]
    assert versions[-1] == (SCHEMA_VERSION,)


def test_a_newer_schema_is_refused_with_the_fix(
    postgres_server: PostgresServer, alice: str
) -> None:
    url = postgres_server.url(user=alice, password=PASSWORD, schema=alice)
    open_database(url).close()
    _sql(url, f"INSERT INTO foundry_schema (version) VALUES ({SCHEMA_VERSION + 1})")
    with pytest.raises(ConfigError) as caught:
        open_database(url)
    error = caught.value
    assert f"schema version {SCHEMA_VERSION + 1}" in error.message
    assert "Upgrade foundry-mcp" in error.remediation
    assert PASSWORD not in f"{error.message} {error.remediation}"
    assert ":***@" in error.message


def test_a_role_that_cannot_create_tables_uses_a_migrated_database(
    postgres_server: PostgresServer, postgres_url: str, alice: str, tmp_path: Path
) -> None:
    open_database(postgres_url).close()  # migrated by its owner
    schema = postgres_url.rsplit("search_path%3D", 1)[1]
    _sql(
        postgres_server.url(),
        f"GRANT USAGE ON SCHEMA {schema} TO {alice}; "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {alice}",
    )
    url = postgres_server.url(user=alice, password=PASSWORD, schema=schema)
    store = PostgresStore(url, tmp_path)
    try:
        state = _state()
        store.save(state)
        assert store.load(state.id).id == state.id
    finally:
        store.close()


def test_the_lease_runs_on_the_database_clock(store: PostgresStore, postgres_url: str) -> None:
    state = _state(status=Status.RUNNING)
    store.create(state, Owner(), lease_seconds=30)
    ((left,),) = _sql(
        postgres_url,
        f"SELECT extract(epoch FROM lease_until - now())::float8 FROM research "
        f"WHERE id = '{state.id}'",
    )
    assert 29 < float(left) <= 30  # type: ignore[arg-type]
    ((kind,),) = _sql(
        postgres_url,
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'research' "
        "AND column_name = 'lease_until' AND table_schema = current_schema()",
    )
    assert kind == "timestamp with time zone"


# --------------------------------------------------------------------------- errors


def test_an_unreachable_server_is_a_clear_error_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://alice:{PASSWORD}@127.0.0.1:1/foundry?connect_timeout=3"
    with pytest.raises(StoreUnavailableError) as caught:
        PostgresStore(url, tmp_path)
    error = caught.value
    text = f"{error.message} {error.remediation} {error!r}"
    assert PASSWORD not in text
    assert "postgresql://alice:***@127.0.0.1:1/foundry" in error.message
    assert "cannot be reached" in error.message
    assert "Start PostgreSQL" in error.remediation


def test_a_wrong_password_names_the_fix(postgres_server: PostgresServer, alice: str) -> None:
    url = postgres_server.url(user=alice, password=PASSWORD + "-wrong", schema=alice)
    with pytest.raises(StoreUnavailableError) as caught:
        open_database(url)
    error = caught.value
    assert PASSWORD not in f"{error.message} {error.remediation}"
    assert "password authentication failed" in error.message
    assert "user and password" in error.remediation


def test_a_missing_database_names_the_fix(postgres_server: PostgresServer) -> None:
    url = postgres_server.url().replace("/foundry_test?", "/no_such_db?")
    with pytest.raises(StoreUnavailableError) as caught:
        open_database(url)
    assert "createdb" in caught.value.remediation


# --------------------------------------------------------------------------- lost connections


def _terminate(postgres_server: PostgresServer, condition: str) -> int:
    rows = _sql(
        postgres_server.url(),
        # Waits (up to 5 s) until each backend is gone: its goodbye has reached the client.
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE "
        f"datname = 'foundry_test' AND pid <> pg_backend_pid() AND {condition}",
    )
    return len(rows)


def test_the_pool_replaces_connections_the_server_dropped(
    store: PostgresStore, postgres_server: PostgresServer
) -> None:
    state = _state()
    store.save(state)
    assert _terminate(postgres_server, "application_name = 'foundry-mcp'") >= 1
    assert store.load(state.id).id == state.id  # no error: the dead connection was replaced


@pytest.mark.anyio
async def test_the_listener_reconnects_and_waiters_are_not_stranded(
    store: PostgresStore, postgres_server: PostgresServer, postgres_url: str, tmp_path: Path
) -> None:
    writer = PostgresStore(postgres_url, tmp_path)
    try:
        state = _state()
        writer.save(state)
        assert await store.wait_for_change(state.id, 0.1) is False  # now listening
        async with anyio.create_task_group() as group:

            async def cut_the_listener() -> None:
                await anyio.sleep(0.2)
                await anyio.to_thread.run_sync(_terminate, postgres_server, "query LIKE 'LISTEN%'")

            group.start_soon(cut_the_listener)
            with anyio.fail_after(5):  # woken by the loss, long before its own timeout
                assert await store.wait_for_change(state.id, 30) is True
        # Listening again (after a reconnect), a save by another server wakes a waiter.
        with anyio.fail_after(10):
            while not store._listener.listening:
                await anyio.sleep(0.05)
        since = store.fingerprint(state.id)
        async with anyio.create_task_group() as group:

            async def save_soon() -> None:
                await anyio.sleep(0.2)
                writer.save(state)

            group.start_soon(save_soon)
            with anyio.fail_after(5):
                assert await store.wait_for_change(state.id, 30, since=since) is True
    finally:
        writer.close()


# --------------------------------------------------------------------------- two servers


@pytest.mark.anyio
async def test_two_servers_share_research_through_postgresql(
    research_env: dict[str, str], postgres_url: str, tmp_path: Path, openai_server: FakeHTTPServer
) -> None:
    env = {**research_env, "FOUNDRY_MCP_STORE_URL": postgres_url}
    settings = load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))
    openai_server.latency = 0.2
    async with (
        research_runtime(settings, warm=False) as first,
        research_runtime(settings, warm=False) as second,
    ):
        assert isinstance(first.store, PostgresStore)
        done = (await first.start("How does MVCC avoid read locks?", max_iterations=1))[
            "research_id"
        ]
        final = await wait_until(second, done, TERMINAL)  # followed from the other server
        assert final["status"] == "completed", final
        page, _ = await second.report(done)
        assert page["report"]
        assert [item["research_id"] for item in (await second.list())["items"]] == [done]
        assert first.store.journal.count(done) > 0  # the answers a resume would replay

        running = (await first.start("What is a B-tree?", max_iterations=1))["research_id"]
        await wait_until(second, running, {"running"})
        cancelled = await second.cancel(running)  # reaches the owner through the database
        assert cancelled["status"] == "cancelled"
        events = [e["kind"] for e in (await first.events(running, limit=500))["events"]]
        assert events.count("cancel_received") == 1  # obeyed once, not at every wait


@pytest.mark.anyio
async def test_a_principals_limit_holds_across_servers(
    research_env: dict[str, str], postgres_url: str, tmp_path: Path, openai_server: FakeHTTPServer
) -> None:
    env = {**research_env, "FOUNDRY_MCP_STORE_URL": postgres_url}
    settings = load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))
    openai_server.latency = 0.2
    alice = Principal("alice", max_concurrent_researches=1)
    async with (
        research_runtime(settings, warm=False) as first,
        research_runtime(settings, warm=False) as second,
    ):
        running = await first.start("What is a B-tree?", effort="quick", principal=alice)
        with pytest.raises(QuotaExceededError) as refused:  # counted on the other server
            await second.start("What is a skip list?", effort="quick", principal=alice)
        assert refused.value.details["active"] == 1
        await wait_until(first, running["research_id"], TERMINAL)
        again = await second.start("What is a skip list?", effort="quick", principal=alice)
        await wait_until(second, again["research_id"], TERMINAL)


# --------------------------------------------------------------------------- doctor


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "foundry_mcp", *args],
        env={"PATH": os.environ.get("PATH", ""), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_doctor_reports_the_shared_store(
    research_env: dict[str, str], postgres_server: PostgresServer, alice: str
) -> None:
    url = postgres_server.url(user=alice, password=PASSWORD, schema=alice)
    result = _cli({**research_env, "FOUNDRY_MCP_STORE_URL": url}, "doctor", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    store = json.loads(result.stdout)["store"]
    assert store["backend"] == "postgresql"
    assert store["schema_version"] == SCHEMA_VERSION
    assert store["server_version"].split(".")[0].isdigit()
    assert f"{alice}:***@" in store["location"]
    assert PASSWORD not in result.stdout + result.stderr


def test_an_unreachable_store_fails_every_command_with_the_fix(
    research_env: dict[str, str],
) -> None:
    url = f"postgresql://alice:{PASSWORD}@127.0.0.1:1/foundry?connect_timeout=3"
    result = _cli({**research_env, "FOUNDRY_MCP_STORE_URL": url}, "doctor")
    assert result.returncode == 2
    assert result.stderr.startswith("error: The research store postgresql://alice:***@")
    assert "fix: Start PostgreSQL" in result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- an outage


class _FailingPool:
    """A pool whose every connection fails with ``error``."""

    timeout = 5.0

    def __init__(self, error: psycopg.Error) -> None:
        self.error = error
        self.asked = 0

    def getconn(self, timeout: float | None = None) -> Any:
        self.asked += 1
        raise self.error

    def putconn(self, conn: Any) -> None:
        raise AssertionError("no connection was given")


def _fail(db: Database) -> StoreUnavailableError:
    with pytest.raises(StoreUnavailableError) as failed, db.connection():
        pass
    return failed.value


def test_a_lost_database_fails_calls_at_once_until_it_may_be_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Store calls run on the event loop: while the database is down, they must not each wait
    for the pool, or a worker stops answering (status reads, its stop signal)."""
    pool = _FailingPool(psycopg.OperationalError("connection refused"))
    db = Database(f"postgresql://foundry:{PASSWORD}@db.example/foundry", cast(Any, pool))
    errors = [_fail(db) for _ in range(3)]
    assert pool.asked == 1  # the others failed at once, with the same message
    assert all("cannot be reached" in e.message and PASSWORD not in e.message for e in errors)
    later = time.monotonic() + OUTAGE_SECONDS + 0.1
    monkeypatch.setattr(store_pg_db.time, "monotonic", lambda: later)
    _fail(db)
    assert pool.asked == 2  # after OUTAGE_SECONDS the database is tried again


def test_a_refused_statement_is_no_outage() -> None:
    pool = _FailingPool(psycopg.errors.LockNotAvailable("lock timeout"))
    db = Database("postgresql://foundry@db.example/foundry", cast(Any, pool))
    _fail(db)
    _fail(db)
    assert pool.asked == 2
