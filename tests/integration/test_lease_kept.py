"""A live run keeps its lease while its writes are held (issue 38).

A run's writes can wait for the store far longer than its lease lasts: up to 30 s for a lock or
a connection, against a 20 s lease. The lease is renewed beside them, on a thread and a
connection of its own, so it does not run out behind them: a status asked on another worker
meanwhile finds the run alive (it does not record the research ``interrupted``, nor does that
worker's takeover scan claim it), and the run completes once its writes go through.

Two workers share one store, each with its own service, store and threads (in this process:
the lease alone tells the reader whether the run lives, as between machines). What holds the
running worker's writes, once the research is gathering:

- **PostgreSQL**: the store itself. Another connection holds the page lock exclusively (as a
  deletion of research on another server holds it), so the run's next save, which keeps the
  pages its searches found, waits for it on the writer thread, and every write of that worker
  queues behind it. The database answers everything else. The hold is counted from the moment
  the save is seen waiting (``pg_locks``).
- **SQLite**: the writer's queue. A write ahead of the run's takes the whole hold (a stand-in
  for a long write of this worker; a lock another process holds would stop the renewals too,
  since SQLite has one write lock for the whole file).

``test_..._briefly`` holds the writes 2.5 s against a 2 s lease, on both stores. The issue's
own numbers, writes held 25 s against a 20 s lease, run once, on PostgreSQL
(``test_..._for_25_seconds``: about 35 s, the suite's one long test; it waits, using no CPU,
so it runs beside the others under pytest-xdist).
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psycopg
import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.store.postgres.pages import PAGES_LOCK
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How do write-ahead logs keep a database consistent after a crash?"
SEARCH_SECONDS = 1.0  # the first searches answer after the writes are held
STATUS_EVERY = 0.2


def _settings(env: dict[str, str], tmp_path: Path, lease: float, url: str | None) -> Settings:
    settings = load_settings(
        env={**env, **({"FOUNDRY_MCP_STORE_URL": url} if url else {})},
        cwd=tmp_path,
        home=Path(env["HOME"]),
    )
    research = settings.research
    research.lease_seconds = lease
    research.take_over_orphans = True  # the reading worker would take the run over, too
    research.take_over_interval = 0.2
    return settings


@asynccontextmanager
async def _two_workers(
    settings: Settings,
) -> AsyncIterator[tuple[ResearchService, ResearchService]]:
    async with (
        research_runtime(settings, warm=False) as runs,
        research_runtime(settings, warm=False) as reads,
    ):
        yield runs, reads


@asynccontextmanager
async def _page_lock_held(url: str) -> AsyncIterator[Callable[[], bool]]:
    """The page lock held exclusively by a connection of its own, as a deletion holds it; the
    block gets a test of whether a save waits for it."""
    with psycopg.connect(url, autocommit=True) as holder, holder.transaction():
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (PAGES_LOCK,))

        def save_waiting() -> bool:
            with psycopg.connect(url, autocommit=True) as probe:
                row = probe.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone()
            return bool(row and row[0])

        yield save_waiting


async def _statuses_while_held(
    reads: ResearchService,
    runs: ResearchService,
    research_id: str,
    held_since: float,
    hold: float,
    lease: float,
) -> list[tuple[float, str]]:
    """The research's status on the reading worker until ``hold`` seconds after ``held_since``:
    (seconds since the hold began, status) each time. The run's lease must outlive the hold.

    On a loaded machine a status can take longer than the margin between the lease's end and
    the hold's: the hold then lasts until one status was asked after the lease had gone."""
    seen: list[tuple[float, str]] = []
    while (since := time.monotonic() - held_since) < hold - STATUS_EVERY or not any(
        asked > lease + 0.1 for asked, _ in seen
    ):
        status = await reads.status(research_id)
        seen.append((since, status["status"]))
        assert status["status"] == "running", (since, status)
        await anyio.sleep(STATUS_EVERY)
    ownership = await anyio.to_thread.run_sync(reads.store.ownership, research_id)
    assert ownership is not None and ownership.token == runs.owner.token
    assert ownership.lease_until is not None and ownership.lease_until > time.time()
    assert not reads.jobs.is_running(research_id)
    return seen


async def _hold_on_postgresql(
    runs: ResearchService,
    reads: ResearchService,
    url: str,
    research_id: str,
    hold: float,
    lease: float,
) -> list[tuple[float, str]]:
    async with _page_lock_held(url) as save_waiting:
        with anyio.fail_after(20):
            while not await anyio.to_thread.run_sync(save_waiting):
                await anyio.sleep(0.05)
        return await _statuses_while_held(reads, runs, research_id, time.monotonic(), hold, lease)


async def _hold_on_sqlite(
    runs: ResearchService, reads: ResearchService, research_id: str, hold: float, lease: float
) -> list[tuple[float, str]]:
    began, release = threading.Event(), threading.Event()

    def long_write(_: object) -> None:
        began.set()
        release.wait(hold + 10)

    runs.io.write_soon(long_write, "hold the writes")
    await anyio.to_thread.run_sync(began.wait, 10)
    try:
        return await _statuses_while_held(reads, runs, research_id, time.monotonic(), hold, lease)
    finally:
        release.set()


async def _run_through_held_writes(
    env: dict[str, str],
    tmp_path: Path,
    tavily: FakeHTTPServer,
    *,
    lease: float,
    hold: float,
    url: str | None,
) -> None:
    tavily.latency = SEARCH_SECONDS
    settings = _settings(env, tmp_path, lease, url)
    async with _two_workers(settings) as (runs, reads):
        research_id = (await runs.start(QUESTION, max_iterations=1))["research_id"]
        with anyio.fail_after(20):
            while (await runs.status(research_id))["phase"] == "planning":
                await anyio.sleep(0.05)
        if url is None:
            seen = await _hold_on_sqlite(runs, reads, research_id, hold, lease)
        else:
            seen = await _hold_on_postgresql(runs, reads, url, research_id, hold, lease)
        tavily.latency = 0
        final = await wait_until(runs, research_id, TERMINAL, timeout=60)
        kinds = [event["kind"] for event in (await runs.events(research_id, limit=500))["events"]]
    assert any(since > lease + 0.1 for since, _ in seen), seen  # asked once the lease had gone
    assert final["status"] == "completed", final
    assert "interrupted" not in kinds and "taken_over" not in kinds, kinds
    assert kinds.count("run_started") == 1, kinds


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_a_run_keeps_its_lease_while_its_writes_are_held_briefly(
    request: pytest.FixtureRequest,
    backend: str,
    research_env: dict[str, str],
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
) -> None:
    url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    await _run_through_held_writes(
        research_env, tmp_path, tavily_server, lease=2.0, hold=2.5, url=url
    )


@pytest.mark.timeout(150)
async def test_a_run_keeps_its_lease_while_its_writes_are_held_for_25_seconds(
    research_env: dict[str, str],
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
    postgres_url: str,
) -> None:
    await _run_through_held_writes(
        research_env, tmp_path, tavily_server, lease=20.0, hold=25.0, url=postgres_url
    )
