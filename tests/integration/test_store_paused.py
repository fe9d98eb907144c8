"""A paused PostgreSQL stalls no one: status answers while the database does not, and the
research completes once it does again (issue 31).

The test's own throwaway server (``tests.postgres.running_postgres``, well under a second to
start) is frozen mid-research with SIGSTOP, every process of it (the postmaster and each of its
children: they call ``setsid``, so one signal to a group would miss them), for 8 seconds, as
``docker pause`` or a stalled VM would: its connections stay open and say nothing, a new one
waits in the listen queue. A server of its own, not the session's, so that pausing it cannot
stall the tests other workers run on that one.

Meanwhile a status is asked every 0.2 s: each answers within a second, with the last status read
(marked by a warning) or ``STORE_UNAVAILABLE``, and the event loop never stalls (a ticker task
measures its lag). Then the server resumes and the research completes with a report: the run's
store calls, made while the pool had no connection left to give, waited for one
(``store.patience``) instead of failing the run after the pool's 5 s.

Beside it, the two rules that make it hold, each on its own: a patient call waits for a connection
until the outage is ``PATIENT_SECONDS`` old, and a status the store is known not to reach (it
fails at once for a few seconds after a call found it lost) is the last one read.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import psycopg
import pytest
from psycopg_pool import PoolTimeout

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.models import Phase, Status
from foundry_mcp.research.store.access.patience import PATIENT_SECONDS, patient
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres import database as store_pg_db
from foundry_mcp.research.store.postgres.database import POOL_TIMEOUT_SECONDS, Database
from foundry_mcp.research.store.records import StatusRead
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer
from tests.postgres import PostgresServer, postgres_for_a_test
from tests.support import TERMINAL, stored_state, wait_until

PAUSE_SECONDS = 8.0
STATUS_EVERY = 0.2
STATUS_WITHIN = 1.0
SEARCH_SECONDS = 1.5
LOOP_LAG_WITHIN = 0.3  # the longest the event loop may be late to wake a sleeping task
QUESTION = "How does PostgreSQL's MVCC let readers and writers work at once?"
SCHEMA = "paused"


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's alone (skipped as ``postgres_server`` is)."""
    with postgres_for_a_test() as running:
        yield running


def _server_pids(server: PostgresServer) -> list[int]:
    """The postmaster's pid, then its children's (a backend per connection, the checkpointer,
    the WAL writer...)."""
    postmaster = int((server.socket_dir / "data" / "postmaster.pid").read_text().split()[0])
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after it.
        if int(stat.rpartition(")")[2].split()[1]) == postmaster:
            children.append(int(entry.name))
    return [postmaster, *children]


@contextmanager
def paused(server: PostgresServer) -> Iterator[None]:
    """Every process of ``server`` stopped (SIGSTOP) within the block, continued after it.

    The postmaster stops first, so it forks no child that the list would miss."""
    postmaster = _server_pids(server)[0]
    os.kill(postmaster, signal.SIGSTOP)
    stopped = [postmaster]
    try:
        for pid in _server_pids(server)[1:]:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            stopped.append(pid)
        yield
    finally:
        for pid in reversed(stopped):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                continue


@pytest.mark.anyio
async def test_status_answers_while_postgresql_is_paused(
    research_env: dict[str, str],
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
    own_postgres: PostgresServer,
) -> None:
    # The searches asked when planning ends answer 1.5 s into the pause: the run's next writes
    # (its events, a save) come while the database is paused and its pool has no connection
    # left (the status reads hold them), the case where a run used to fail.
    tavily_server.latency = SEARCH_SECONDS
    with psycopg.connect(own_postgres.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
    env = {**research_env, "FOUNDRY_MCP_STORE_URL": own_postgres.url(schema=SCHEMA)}
    settings = load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))
    lags: list[float] = []

    async def ticker() -> None:
        """How late the loop wakes a task that sleeps 20 ms: a call blocking it shows here."""
        while True:
            asked = time.monotonic()
            await anyio.sleep(0.02)
            lags.append(time.monotonic() - asked - 0.02)

    answers: list[tuple[float, str]] = []  # (seconds taken, how it answered)
    async with research_runtime(settings, warm=False) as service, anyio.create_task_group() as tg:
        started = await service.start(QUESTION, max_iterations=1)
        research_id = started["research_id"]
        with anyio.fail_after(20):
            while (await service.status(research_id))["phase"] == "planning":
                await anyio.sleep(0.05)
        tg.start_soon(ticker)
        with paused(own_postgres):
            paused_at = time.monotonic()
            while time.monotonic() - paused_at < PAUSE_SECONDS:
                asked = time.monotonic()
                try:
                    status = await service.status(research_id)
                except StoreUnavailableError:
                    how = "unavailable"
                else:
                    assert status["research_id"] == research_id
                    assert status["status"] == "running", status
                    stale = any("This is the status as read at" in w for w in status["warnings"])
                    how = "remembered" if stale else "read"
                answers.append((time.monotonic() - asked, how))
                await anyio.sleep(STATUS_EVERY)
            paused_lags = list(lags)
        final = await wait_until(service, research_id, TERMINAL, timeout=30)
        assert final["status"] == "completed", final["error"]
        report, _ = await service.report(research_id)
        tg.cancel_scope.cancel()

    slowest = max(took for took, _ in answers)
    print(
        f"slowest status while paused: {slowest:.3f} s; loop lag at most {max(paused_lags):.3f} s"
    )
    assert slowest < STATUS_WITHIN, answers
    assert len(answers) >= 6, answers
    assert any(how != "read" for _, how in answers), answers  # the pause was felt
    assert max(paused_lags) < LOOP_LAG_WITHIN, sorted(paused_lags)[-5:]
    assert report["summary"] and report["sources"], report


class _Pool:
    """A pool that cannot give a connection: it records how long each call would wait."""

    timeout = 0.0  # its own: it fails at once

    def __init__(self) -> None:
        self.waits: list[float | None] = []

    def getconn(self, timeout: float | None = None) -> Any:
        self.waits.append(timeout)
        raise PoolTimeout("couldn't get a connection after 5.00 sec")

    def putconn(self, conn: Any) -> None:
        raise AssertionError("no connection was given")


def _call(db: Database) -> None:
    with pytest.raises(StoreUnavailableError), db.connection():
        pass


def test_a_patient_call_waits_for_a_connection_until_the_outage_is_old(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = _Pool()
    db = Database("postgresql://foundry@db.example/foundry", cast(Any, pool))
    _call(db)  # the outage begins: the pool's own timeout
    _call(db)  # failed at once, not asked
    with patient():
        _call(db)  # asked, with patience for the rest of the outage's PATIENT_SECONDS
    assert len(pool.waits) == 2 and pool.waits[0] == pool.timeout
    assert PATIENT_SECONDS - 1 < (pool.waits[1] or 0) <= PATIENT_SECONDS
    later = time.monotonic() + PATIENT_SECONDS - POOL_TIMEOUT_SECONDS + 0.1
    monkeypatch.setattr(store_pg_db.time, "monotonic", lambda: later)
    with patient():
        _call(db)  # an outage that old: patient calls wait no longer than the others
    assert pool.waits[2] == pool.timeout


@pytest.mark.anyio
async def test_a_status_the_store_cannot_reach_is_the_last_one_read(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with research_runtime(settings, warm=False, serving=False) as service:
        read_before, never_read = (
            stored_state(index, status=Status.RUNNING, phase=Phase.GATHERING) for index in (0, 1)
        )
        for state in (read_before, never_read):
            service.store.create(state, Owner(), 60)
        assert (await service.status(read_before.id))["warnings"] == []

        def out_of_reach(research_id: str, known: object = None) -> StatusRead:
            raise StoreUnavailableError("The research store cannot be reached: refused.")

        monkeypatch.setattr(service.io.reader, "load_status", out_of_reach)
        remembered = await service.status(read_before.id)
        assert (remembered["status"], remembered["phase"]) == ("running", "gathering")
        assert remembered["warnings"][0].startswith(
            "The research store cannot be reached: refused."
        )
        assert "This is the status as read at" in remembered["warnings"][0]
        with pytest.raises(StoreUnavailableError, match="cannot be reached"):
            await service.status(never_read.id)
