"""Workers sharing one PostgreSQL store: a research whose worker was SIGKILLed is taken over by
exactly one other worker once the dead worker's lease runs out, and repeats no search.

Worker A runs in a subprocess under another host name (so only its lease tells whether it is
alive, as between machines) with a 3 s lease, and is killed with SIGKILL mid-gathering."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.service.takeover import Takeover, takeover_enabled
from foundry_mcp.research.store.access.patience import is_patient
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.store import PostgresStore
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.support import TERMINAL, searched_queries, wait_until

pytestmark = pytest.mark.anyio

LEASE = 3.0
WORKER_A = """
import os, socket, sys, time
socket.gethostname = lambda: "worker-a"  # before foundry_mcp reads it: another machine
from foundry_mcp.research.store import owners
owners.this_node = lambda: "node-of-worker-a"
import anyio
from pathlib import Path
from foundry_mcp.config import load_settings
from foundry_mcp.runtime import research_runtime

async def main():
    settings = load_settings(env=dict(os.environ), cwd=Path.cwd(), home=Path(os.environ["HOME"]))
    settings.research.deep_research_max_concurrent = 1  # one search at a time: some finish
    async with research_runtime(settings, warm=False) as service:
        service.watch.lease_seconds = float(sys.argv[1])
        rid = (await service.start("How do hash joins spill to disk?", max_iterations=1))["research_id"]
        print(rid, flush=True)
        while len(service.store.load(rid).completed_sub_queries()) < 1:
            await anyio.sleep(0.02)
        print("gathering", flush=True)
        await anyio.sleep(3600)

anyio.run(main)
"""


def _settings(env: dict[str, str], tmp_path: Path, url: str, **research: object) -> Settings:
    settings = load_settings(
        env={**env, "FOUNDRY_MCP_STORE_URL": url}, cwd=tmp_path, home=Path(env["HOME"])
    )
    for name, value in {"take_over_interval": 0.2, **research}.items():
        setattr(settings.research, name, value)
    return settings


async def _events(service: ResearchService, research_id: str) -> list[str]:
    return [e["kind"] for e in (await service.events(research_id, limit=500))["events"]]


@pytest.fixture
def worker_a(
    research_env: dict[str, str], postgres_url: str, tmp_path: Path
) -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, **research_env, "FOUNDRY_MCP_STORE_URL": postgres_url}
    process = subprocess.Popen(
        [sys.executable, "-c", WORKER_A, str(LEASE)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    yield process
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


@asynccontextmanager
async def _worker(settings: Settings) -> AsyncIterator[ResearchService]:
    async with research_runtime(settings, warm=False) as service:
        yield service


async def test_a_killed_workers_research_is_taken_over_after_its_lease(
    research_env: dict[str, str],
    postgres_url: str,
    tmp_path: Path,
    worker_a: subprocess.Popen[str],
    tavily_server: FakeHTTPServer,
    brain: ResearchBrain,
) -> None:
    tavily_server.latency = 0.5  # gathering lasts long enough to be killed in the middle
    assert worker_a.stdout is not None
    research_id = await anyio.to_thread.run_sync(worker_a.stdout.readline)
    research_id = research_id.strip()
    assert research_id, "worker A did not start a research"
    settings = _settings(research_env, tmp_path, postgres_url)
    async with _worker(settings) as b:
        # While A runs (its lease renewed), B's scans leave the research alone.
        assert (await anyio.to_thread.run_sync(worker_a.stdout.readline)).strip() == "gathering"
        await anyio.sleep(0.5)
        assert not b.jobs.is_running(research_id)
        os.kill(worker_a.pid, signal.SIGKILL)
        worker_a.wait(timeout=10)
        killed_at = time.monotonic()
        planner_calls = brain.calls["planner"]
        done_before = {q.query for q in b.store.load(research_id).completed_sub_queries()}
        searches_before = len(searched_queries(tavily_server))
        assert done_before
        ownership = b.store.ownership(research_id)
        assert ownership is not None and ownership.host == "worker-a"
        # Its lease has not run out yet: no takeover (nor "interrupted" for a reader).
        await anyio.sleep(LEASE / 3)
        assert not b.jobs.is_running(research_id)
        assert (await b.status(research_id))["status"] == "running"
        tavily_server.latency = 0
        with anyio.fail_after(LEASE + 5):
            while (job := b.jobs.get(research_id)) is None:
                await anyio.sleep(0.05)
        # The lease runs out LEASE after A's last renewal, which came at most a renewal
        # interval (LEASE / 4) before the kill.
        earliest = LEASE - LEASE / 4
        assert time.monotonic() - killed_at >= earliest - 0.05, (
            "taken over before the lease ran out"
        )
        # The takeover records the research interrupted, then resumes it: a status between the
        # two says so; the run B started is what ends it.
        with anyio.fail_after(60):
            await job.done.wait()
        final = await wait_until(b, research_id, TERMINAL)
        assert final["status"] == "completed", final
        events = await _events(b, research_id)
        assert events.count("taken_over") == 1
        assert events.index("interrupted") < events.index("taken_over") < events.index("resumed")
    repeated = [q for q in searched_queries(tavily_server)[searches_before:] if q in done_before]
    assert repeated == []
    assert brain.calls["planner"] == planner_calls  # the plan is replayed, not bought again


def _orphan(service: ResearchService) -> ResearchState:
    """A running research whose worker, on another machine, stopped renewing its lease."""
    provider, model = service.providers.resolve_llm(None, None)
    search, _ = service.providers.search_providers()
    state = ResearchState(
        query="What is a B-link tree?",
        llm_provider=provider,
        llm_model=model,
        search_providers=search,
    )
    state.status = Status.RUNNING
    service.store.create(state, Owner(host="dead-machine", pid=1), lease_seconds=-1)
    return state


async def test_two_workers_racing_for_an_orphan_run_it_once(
    research_env: dict[str, str], postgres_url: str, tmp_path: Path
) -> None:
    settings = _settings(research_env, tmp_path, postgres_url, take_over_orphans=False)
    async with _worker(settings) as b, _worker(settings) as c:
        state = _orphan(b)
        takers = [Takeover(b), Takeover(c)]
        seen = [await taker.orphans() for taker in takers]  # both see it before either claims
        assert [[o.research_id for o in found] for found in seen] == [[state.id], [state.id]]
        won = [await taker.take_over(found[0]) for taker, found in zip(takers, seen, strict=True)]
        assert won == [True, False]
        assert b.jobs.is_running(state.id) and not c.jobs.is_running(state.id)
        assert await Takeover(c).scan() == []  # B is alive: nothing left to take
        final = await wait_until(c, state.id, TERMINAL)
        assert final["status"] == "completed", final
        assert (await _events(b, state.id)).count("taken_over") == 1


async def test_workers_scanning_at_once_take_an_orphan_over_once(
    research_env: dict[str, str], postgres_url: str, tmp_path: Path
) -> None:
    settings = _settings(research_env, tmp_path, postgres_url, take_over_interval=0.1)
    async with _worker(settings) as b, _worker(settings) as c:
        state = _orphan(b)
        with anyio.fail_after(30):  # (a status read of a stopped research returns at once)
            while b.store.load(state.id).status is not Status.COMPLETED:
                await anyio.sleep(0.05)
        events = await _events(b, state.id)
        assert events.count("taken_over") == 1 and events.count("run_started") == 1
        with anyio.fail_after(5):  # the run ends just after its last save (then its release)
            while b.jobs.is_running(state.id) or c.jobs.is_running(state.id):
                await anyio.sleep(0.02)


def test_takeover_is_on_for_a_shared_store_only(settings: Settings) -> None:
    assert takeover_enabled(settings.research) is False  # SQLite: auto_resume's job
    settings.research.take_over_orphans = True
    assert takeover_enabled(settings.research) is True


async def test_a_cleanly_stopped_workers_research_continues_on_another(
    research_env: dict[str, str],
    postgres_url: str,
    tmp_path: Path,
    tavily_server: FakeHTTPServer,
    brain: ResearchBrain,
) -> None:
    """A rolling restart: worker A stops cleanly mid-research; B resumes it, repeating nothing."""
    tavily_server.latency = 0.3
    quiet = _settings(research_env, tmp_path, postgres_url, take_over_orphans=False)
    async with _worker(_settings(research_env, tmp_path, postgres_url)) as b:
        async with _worker(quiet) as a:
            a.settings.research.deep_research_max_concurrent = 1
            research_id = (await a.start("How do hash joins spill to disk?", max_iterations=1))[
                "research_id"
            ]
            with anyio.fail_after(20):
                while not a.store.load(research_id).completed_sub_queries():
                    await anyio.sleep(0.02)
        stopped = b.store.load(research_id)  # A's runtime has closed: saved, lease released
        # Interrupted, unless B's scan was quick enough to have taken it over already.
        assert stopped.status is Status.INTERRUPTED or b.jobs.is_running(research_id)
        ended = [e.data for e in b.store.events(research_id, 0, 500) if e.kind == "run_ended"]
        assert ended[0]["status"] == "interrupted"
        done_before = {q.query for q in stopped.completed_sub_queries()}
        searches_before = len(searched_queries(tavily_server))
        planner_calls = brain.calls["planner"]
        tavily_server.latency = 0
        final = await wait_until(b, research_id, TERMINAL - {"interrupted"})
        assert final["status"] == "completed", final
        assert (await _events(b, research_id)).count("taken_over") == 1
    assert [q for q in searched_queries(tavily_server)[searches_before:] if q in done_before] == []
    assert brain.calls["planner"] == planner_calls


async def test_a_cli_command_takes_nothing_over(
    research_env: dict[str, str], postgres_url: str, tmp_path: Path
) -> None:
    settings = _settings(research_env, tmp_path, postgres_url, take_over_interval=0.1)
    settings.research.auto_resume = True
    async with research_runtime(settings, warm=False, serving=False) as cli:
        state = _orphan(cli)
        await anyio.sleep(0.6)  # several scan intervals of a server
        assert not cli.jobs.is_running(state.id)
        assert cli.store.load(state.id).status is Status.RUNNING  # left for the workers


async def test_a_takeover_waits_out_an_outage_that_begins_after_its_claim(
    research_env: dict[str, str], postgres_url: str, tmp_path: Path
) -> None:
    """PostgreSQL restarting just after the claim: the takeover's reads wait for it, as its
    writes do, instead of failing at once and leaving the research claimed but not run."""
    settings = _settings(research_env, tmp_path, postgres_url, take_over_orphans=False)
    async with _worker(settings) as b:
        state = _orphan(b)
        store = cast(PostgresStore, b.io.sync)
        restarting = _refuse_impatient_calls(store, cast(PostgresStore, b.io.reader))
        claim = store.claim

        def claim_then_restart(*args: Any, **kwargs: Any) -> bool:
            won = claim(*args, **kwargs)
            restarting.set()
            return won

        store.claim = claim_then_restart  # type: ignore[method-assign]
        taker = Takeover(b)
        assert await taker.take_over((await taker.orphans())[0])
        restarting.clear()
        final = await wait_until(b, state.id, TERMINAL)
        assert final["status"] == "completed", final
        assert (await _events(b, state.id)).count("taken_over") == 1


def _refuse_impatient_calls(*stores: PostgresStore) -> threading.Event:
    """While the event is set, the stores' calls that are not patient fail at once, as they do
    while a database restarts (``Database.connection``); patient calls go through."""
    restarting = threading.Event()
    for database in {id(store._db): store._db for store in stores}.values():
        connect = database.connection

        @contextmanager
        def connection(connect: Any = connect) -> Iterator[Any]:
            if restarting.is_set() and not is_patient():
                raise StoreUnavailableError("The research store cannot be reached: restarting.")
            with connect() as conn:
                yield conn

        database.connection = connection  # type: ignore[method-assign]
    return restarting
