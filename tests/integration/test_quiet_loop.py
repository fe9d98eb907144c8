"""Nothing waits on the event loop: the start answer goes before the run's first step, a status
call costs the store one statement, and a waiting status sleeps on change notices instead of
reading the whole research every second. Store figures are checked on SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from mcp import Client

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import ResearchNotFoundError
from foundry_mcp.research.models import Phase, Status
from foundry_mcp.research.principal import Principal
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.store import PostgresStore
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.sqlite.store import ResearchStore
from foundry_mcp.runtime import research_runtime
from foundry_mcp.server import create_server
from tests.e2e.conftest import call
from tests.fakes import FakeHTTPServer
from tests.support import TERMINAL, stored_state, wait_until

pytestmark = pytest.mark.anyio

ALICE = Principal("alice")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(
    request: pytest.FixtureRequest, research_env: dict[str, str], tmp_path: Path
) -> Settings:
    """Settings on a SQLite store, or on a PostgreSQL one (a schema of this test's)."""
    env = dict(research_env)
    if request.param == "postgresql":
        env["FOUNDRY_MCP_STORE_URL"] = request.getfixturevalue("postgres_url")
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


@contextmanager
def statements(store: Store) -> Iterator[list[str]]:
    """The SQL the store's reader threads send to ``store`` within the block, where a status
    reads (PostgreSQL: the pool's empty liveness check of each checkout included, as ``""``)."""
    seen: list[str] = []

    def mine() -> bool:
        return threading.current_thread().name.startswith("store-read")

    if isinstance(store, ResearchStore):
        connection = store._db

        def note(sql: str) -> None:
            if mine():
                seen.append(sql)

        connection.set_trace_callback(note)
        try:
            yield seen
        finally:
            connection.set_trace_callback(None)
        return
    assert isinstance(store, PostgresStore)
    original = psycopg.Connection.execute

    def execute(self: psycopg.Connection[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        if mine():
            seen.append(str(query))
        return original(self, query, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(psycopg.Connection, "execute", execute)
        yield seen


def _queries(seen: list[str]) -> list[str]:
    return [sql for sql in seen if sql.strip()]


async def test_a_status_is_one_statement(backend: Settings) -> None:
    async with research_runtime(backend, warm=False, serving=False) as service:
        store = service.store
        # Running under another live owner (a server beside this one), with an event.
        running = stored_state(0, status=Status.RUNNING, phase=Phase.GATHERING, principal="alice")
        store.create(running, Owner(), 60)
        store.append_event(running.id, "run_started", {})
        done = stored_state(1, status=Status.COMPLETED, report="# Report\n\nDone.")
        store.save(done)

        read = store.load_status(running.id)
        owned = store.ownership(running.id)
        assert owned is not None and read.ownership.token == owned.token
        assert read.ownership.is_alive(service.owner, running_here=False)
        assert read.state.model_dump() == store.load(running.id).model_dump()
        assert (read.principal, read.last_event_at) == ("alice", store.last_event_at(running.id))
        assert store.load_status(done.id).last_event_at is None

        for research_id, principal, expected in (
            (running.id, None, "running"),
            (running.id, ALICE, "running"),
            (done.id, None, "completed"),
        ):
            with statements(service.io.reader) as seen:  # a status reads on the reading side
                payload = await service.status(research_id, principal=principal)
            assert payload["status"] == expected
            assert len(_queries(seen)) == 1, seen
            assert len(seen) <= 2, seen  # PostgreSQL: and the pool's check of the connection

        last_event = store.last_event_at(running.id)
        assert last_event is not None
        assert (await service.status(running.id))["last_activity_at"] >= last_event
        store.request_cancel(running.id)
        with statements(service.io.reader) as seen:
            assert (await service.status(running.id))["status"] == "cancelling"
        assert len(_queries(seen)) == 1
        with pytest.raises(ResearchNotFoundError):  # another principal's: as an unknown id
            await service.status(running.id, principal=Principal("bob"))


async def test_a_waiting_status_sleeps_until_the_research_moves(backend: Settings) -> None:
    async with research_runtime(backend, warm=False, serving=False) as service:
        other = Owner()
        state = stored_state(status=Status.RUNNING, phase=Phase.PLANNING)
        service.store.create(state, other, 60)
        full_reads: list[str] = []
        for name in ("load", "load_status"):
            read = getattr(service.io.reader, name)

            def counted(research_id: str, *more: Any, read: Any = read, name: str = name) -> Any:
                full_reads.append(name)
                return read(research_id, *more)

            setattr(service.io.reader, name, counted)

        moved_at = 0.0

        async def move_on() -> None:
            nonlocal moved_at
            await anyio.sleep(2.3)
            state.phase = Phase.GATHERING
            service.store.save(state, other)  # as the owning server saves it
            moved_at = time.monotonic()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(move_on)
            payload = await service.status(state.id, wait=True, wait_timeout=10)
        answered_at = time.monotonic()

    assert payload["phase"] == "gathering"
    assert answered_at - moved_at < 0.5  # woken by the change, not by a timer
    assert full_reads == ["load_status", "load_status"]  # before and after, none meanwhile


async def test_a_waiting_status_call_reads_nothing_whole_without_a_progress_token(
    settings: Settings, openai_server: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A caller that passed no progress token gets no progress, so the wait reads no state.
    openai_server.latency = 2.5  # planning stays in flight through two would-be reports
    full_reads: list[float] = []
    for name in ("load", "load_status"):
        original = getattr(ResearchStore, name)

        def counted(
            store: ResearchStore, research_id: str, *more: Any, original: Any = original
        ) -> Any:
            full_reads.append(time.monotonic())
            return original(store, research_id, *more)

        monkeypatch.setattr(ResearchStore, name, counted)

    async with Client(create_server(lambda: settings), mode="legacy") as client:
        started = await call(client, action="deep-research", query="What is a rope data type?")
        research_id = started["data"]["research_id"]
        with anyio.fail_after(10):
            while not openai_server.requests:  # the run has loaded its state: planning now
                await anyio.sleep(0.02)
        began = time.monotonic()
        waited = await call(
            client, action="deep-research-status", research_id=research_id, wait=True
        )
        ended = time.monotonic()
    assert waited["success"] and waited["data"]["phase"] != "planning", waited
    during = [moment for moment in full_reads if began <= moment <= ended]
    assert ended - began > 1.5  # it waited for planning to end
    assert len(during) == 2, during  # the status before the wait and after it


async def test_the_start_answer_goes_before_the_run_begins(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What is a rope data type?")
        research_id = started["research_id"]
        for _ in range(20):  # the loop turns that hand the answer to the transport
            await anyio.lowlevel.checkpoint()
        assert service.store.load(research_id).status is Status.QUEUED  # not a step taken
        assert openai_server.requests == []
        status = await wait_until(service, research_id, TERMINAL)
    assert status["status"] == "completed", status


async def test_a_wait_begun_before_the_run_starts_waits_for_its_progress(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 1.0  # the planner's answer
    async with research_runtime(settings, warm=False) as service:
        research_id = (await service.start("What is a rope data type?"))["research_id"]
        began = time.monotonic()
        status = await service.status(research_id, wait=True, wait_timeout=5)
        waited = time.monotonic() - began
        await service.cancel(research_id)  # what follows is not this test's (1 s an LLM call)
    # Not ended by queued becoming running a few milliseconds in: by the planner's answer.
    assert status["phase"] != "planning" or status["status"] not in ("queued", "running")
    assert waited >= 0.9, status
