"""Research that never loses work: cancel, timeouts, leases, audit trail, migrations, retention."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from datetime import timedelta

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import InputError, InvalidStateError, ResearchNotFoundError
from foundry_mcp.research.models import STATE_SCHEMA_VERSION, ResearchState, Status, utcnow
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.store.owners import (
    LeaseLostError,
    Owner,
)
from foundry_mcp.research.store.sqlite.store import (
    DB_VERSION,
    ResearchStore,
)
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.support import TERMINAL, exited_pid, searched_queries, wait_until

pytestmark = pytest.mark.anyio


async def _until(service: ResearchService, research_id: str, check, timeout: float = 10) -> None:  # type: ignore[no-untyped-def]
    with anyio.fail_after(timeout):
        while not check(service.store.load(research_id)):
            await anyio.sleep(0.02)


async def test_a_cancel_while_the_run_builds_its_llm_client_ends_the_run_without_waiting(
    settings: Settings, tavily_server: FakeHTTPServer, openai_server: FakeHTTPServer
) -> None:
    """Building an LLM client may import its SDK: seconds on a busy machine, in a worker thread
    that cannot be stopped. A cancel (or a stopping server) ends the run without waiting for it."""
    building, release = threading.Event(), threading.Event()
    async with research_runtime(settings, warm=False) as service:
        real = service.providers.llm

        def slow(name: str):  # type: ignore[no-untyped-def]
            building.set()
            release.wait(30)
            return real(name)

        service.providers.llm = slow  # type: ignore[method-assign]
        rid = (await service.start("What is a B-tree?", max_iterations=1))["research_id"]
        assert await anyio.to_thread.run_sync(building.wait, 10)
        try:
            assert (await service.cancel(rid))["status"] == "cancelled"
            status = await wait_until(service, rid, TERMINAL, timeout=10)
        finally:
            release.set()  # only now may the client be built
        assert status["status"] == "cancelled"
        assert service.store.load(rid).status is Status.CANCELLED
    assert openai_server.requests == []


async def test_cancel_during_gathering_stops_at_once_and_resume_repeats_nothing(
    settings: Settings, tavily_server: FakeHTTPServer, openai_server: FakeHTTPServer
) -> None:
    settings.research.deep_research_max_concurrent = 1  # one search at a time, so some finish
    tavily_server.latency = 0.3
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How do hash joins spill to disk?", max_iterations=1)
        rid = started["research_id"]
        await _until(service, rid, lambda s: len(s.completed_sub_queries()) >= 1)
        done_before = {sq.query for sq in service.store.load(rid).completed_sub_queries()}

        began = time.monotonic()
        cancelled = await service.cancel(rid)
        assert cancelled["status"] == "cancelled"
        assert time.monotonic() - began < 2.0
        cancelled_at = time.time()
        await anyio.sleep(0.5)
        # Nothing is sent after the cancel (a request already on its way may land a moment
        # after it on a busy machine).
        late = [
            r
            for r in [*tavily_server.requests, *openai_server.requests]
            if r.timestamp > cancelled_at + 0.2
        ]
        assert late == []

        state = service.store.load(rid)
        assert state.status is Status.CANCELLED
        assert state.metadata["abort_phase"] == "gathering"
        assert state.sources  # partial results stay

        before_resume = len(searched_queries(tavily_server))
        tavily_server.latency = 0
        await service.resume(rid)
        status = await wait_until(service, rid, TERMINAL)
        assert status["status"] == "completed", status["error"]
    repeated = [q for q in searched_queries(tavily_server)[before_resume:] if q in done_before]
    assert repeated == []


async def test_a_phase_timeout_ends_timed_out_and_resume_finishes(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    settings.research.deep_research_gathering_timeout = 1
    tavily_server.latency = 3
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start("What is a bitmap index?", max_iterations=1))["research_id"]
        status = await wait_until(service, rid, TERMINAL)
        assert status["status"] == "timed_out"
        assert "gathering phase exceeded its timeout of 1 s" in status["error"]
        assert service.store.load(rid).metadata["timeout_phase"] == "gathering"

        tavily_server.latency = 0
        resumed = await service.resume(rid, task_timeout=120)
        assert resumed["phase"] == "gathering"
        status = await wait_until(service, rid, TERMINAL)
        assert status["status"] == "completed"


async def test_long_poll_returns_early_on_a_change_and_at_the_timeout_otherwise(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 1.5
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start("What is a trie?"))["research_id"]
        await _until(service, rid, lambda s: s.status is Status.RUNNING)
        began = time.monotonic()
        status = await service.status(rid, wait=True, wait_timeout=0.6)
        assert 0.5 <= time.monotonic() - began < 1.2  # planning takes 1.5 s: nothing moved
        assert status["phase"] == "planning"

        began = time.monotonic()
        status = await service.status(rid, wait=True, wait_timeout=30)
        # Returned when planning ended (a few calls of 1.5 s, and the first research of a
        # process loads its token counter on the way), long before the timeout.
        assert time.monotonic() - began < 10
        assert status["phase"] != "planning"
        assert status["progress"]["phases"] == 5
        assert status["progress"]["phase_index"] >= 2
        assert status["stale"] is False
        assert "wait=true" in status["next_action"]


async def test_a_long_poll_whose_research_ended_as_it_began_returns_at_once(
    settings: Settings, openai_server: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The research ends between the status's read of it and the wait's first look at the
    store: that is the news the wait was for, not the point it waits from."""
    openai_server.latency = 0.3
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start("What is a trie?", max_iterations=1))["research_id"]
        await _until(service, rid, lambda s: s.status is Status.RUNNING)
        lookup = service.lookup
        first_look = lookup._fingerprint

        async def after_the_end(research_id: str):  # type: ignore[no-untyped-def]
            await _until(service, research_id, lambda s: not s.status.is_active, timeout=30)
            return await first_look(research_id)

        monkeypatch.setattr(lookup, "_fingerprint", after_the_end)
        began = time.monotonic()  # the research runs a few seconds yet: read active
        status = await service.status(rid, wait=True, wait_timeout=20)
        assert status["status"] == "completed"
        assert time.monotonic() - began < 5  # not held until the timeout


async def test_two_processes_one_store_run_each_research_once(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 0.3
    async with (
        research_runtime(settings, warm=False) as first,
        research_runtime(settings, warm=False) as second,
    ):
        assert first.owner.token != second.owner.token
        rid = (await first.start("How does MVCC avoid read locks?", max_iterations=1))[
            "research_id"
        ]
        await _until(first, rid, lambda s: s.status is Status.RUNNING)
        seen = await second.status(rid)
        assert seen["status"] == "running"  # the other process is alive: not interrupted
        with pytest.raises(InvalidStateError, match="still being worked on"):
            await second.resume(rid)
        # A cancel from the other process reaches the owner through the store.
        cancelled = await second.cancel(rid)
        assert cancelled["status"] == "cancelled"
        assert (await first.status(rid))["status"] == "cancelled"
        events = [e["kind"] for e in (await first.events(rid, limit=500))["events"]]
        assert events.count("cancel_received") == 1  # obeyed once, not at every wait


async def test_a_dead_owner_is_detected_and_a_late_write_from_it_is_refused(
    settings: Settings,
) -> None:
    ghost = Owner(pid=exited_pid())
    store = ResearchStore(settings.research.research_dir)
    state = ResearchState(query="What is a B-link tree?", llm_provider="openai", llm_model="m")
    state.status = Status.RUNNING
    store.create(state, ghost, lease_seconds=60)
    async with research_runtime(settings, warm=False) as service:
        status = await service.status(state.id)
        assert status["status"] == "interrupted"
        assert "stopped before it finished" in status["error"]
    with pytest.raises(LeaseLostError):
        store.save(state, ghost)  # the ghost's stale state never overwrites the record
    assert store.load(state.id).status is Status.INTERRUPTED


async def test_an_expired_lease_of_another_host_counts_as_gone(settings: Settings) -> None:
    store = ResearchStore(settings.research.research_dir)
    state = ResearchState(query="What is Raft?", llm_provider="openai", llm_model="m")
    state.status = Status.RUNNING
    elsewhere = Owner(host="another-machine", pid=1)
    store.create(state, elsewhere, lease_seconds=-1)
    async with research_runtime(settings, warm=False) as service:
        assert (await service.status(state.id))["status"] == "interrupted"


async def test_the_audit_trail_records_the_whole_run_and_pages(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start("What is a Bloom filter?", max_iterations=1))["research_id"]
        await wait_until(service, rid, TERMINAL)
        pages, cursor = [], None
        while True:
            page = await service.events(rid, cursor=cursor, limit=7)
            pages.append(page["events"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
    events = [e for page in pages for e in page]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "created" and kinds[-1] == "run_ended"
    for kind in (
        "run_started",
        "phase_started",
        "phase_completed",
        "llm_call",
        "search",
        "decision",
    ):
        assert kind in kinds
    llm = next(e["data"] for e in events if e["kind"] == "llm_call")
    assert llm["input_tokens"] > 0 and llm["latency_s"] >= 0 and llm["purpose"] == "planning"
    assert events[-1]["data"]["status"] == "completed"


async def test_events_reject_bad_input(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        with pytest.raises(ResearchNotFoundError):
            await service.events("deepres-000000000000")
        rid = (await service.start("What is a heap?", max_iterations=1))["research_id"]
        with pytest.raises(InputError, match="cursor"):
            await service.events(rid, cursor="abc")
        with pytest.raises(InputError, match="limit"):
            await service.events(rid, limit=501)


async def test_list_filters_by_status(settings: Settings, openai_server: FakeHTTPServer) -> None:
    async with research_runtime(settings, warm=False) as service:
        done = (await service.start("What is a rope?", max_iterations=1))["research_id"]
        await wait_until(service, done, TERMINAL)
        openai_server.latency = 5
        running = (await service.start("What is a treap?"))["research_id"]
        await _until(service, running, lambda s: s.status is Status.RUNNING)
        ids = lambda page: [i["research_id"] for i in page["items"]]  # noqa: E731
        assert ids(await service.list(status="running")) == [running]
        assert ids(await service.list(status="completed,failed")) == [done]
        assert set(ids(await service.list())) == {done, running}
        with pytest.raises(InputError, match="not a research status"):
            await service.list(status="finished")


async def test_completed_research_continues_with_more_iterations(
    settings: Settings, brain: ResearchBrain
) -> None:
    def analyzer(system: str, user: str) -> str:
        answer = brain.analyze(user)
        if "Iteration: 1/" in user:
            answer["gaps"] = [
                {"description": "Rebalancing cost is unknown.", "suggested_queries": ["cost"]}
            ]
        return json.dumps(answer)

    brain.overrides["analyzer"] = analyzer
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start("What is consistent hashing?", max_iterations=1))["research_id"]
        await wait_until(service, rid, TERMINAL)
        assert service.store.load(rid).unaddressed_gaps()
        with pytest.raises(InvalidStateError, match="already completed"):
            await service.resume(rid)
        resumed = await service.resume(rid, max_iterations=2)
        assert resumed["phase"] == "refinement" and resumed["resumed_from"] == "completed"
        status = await wait_until(service, rid, TERMINAL)
    assert status["status"] == "completed"
    assert status["iteration"] == 2
    assert brain.calls["refiner"] == 1


async def test_cancel_of_a_finished_research_is_refused(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start("What is a segment tree?", max_iterations=1))["research_id"]
        await wait_until(service, rid, TERMINAL)
        with pytest.raises(InvalidStateError, match="nothing to cancel"):
            await service.cancel(rid)
        with pytest.raises(ResearchNotFoundError):
            await service.resume("deepres-000000000000")


def _old_database(path, state_json: str) -> None:  # type: ignore[no-untyped-def]
    """A research.db as version 1 of foundry-mcp wrote it."""
    db = sqlite3.connect(path / "research.db")
    db.executescript(
        "CREATE TABLE research (id TEXT PRIMARY KEY, status TEXT NOT NULL, phase TEXT NOT NULL,"
        " iteration INTEGER NOT NULL, query TEXT NOT NULL, created_at TEXT NOT NULL,"
        " updated_at TEXT NOT NULL, state TEXT NOT NULL);"
    )
    data = json.loads(state_json)
    db.execute(
        "INSERT INTO research VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            data["id"],
            data["status"],
            data["phase"],
            data["iteration"],
            data["query"],
            data["created_at"],
            data["updated_at"],
            state_json,
        ),
    )
    db.commit()
    db.close()


async def test_a_version_one_store_is_migrated_on_open(settings: Settings) -> None:
    research_dir = settings.research.research_dir
    research_dir.mkdir(parents=True)
    old = ResearchState(query="What is an LSM tree?", llm_provider="openai", llm_model="m")
    old.status = Status.COMPLETED
    old.report = "# Old\n\n## Summary\n\nKept."
    data = json.loads(old.model_dump_json())
    data.update(schema_version=1, owner_pid=123, owner_host="old-host")
    data["usage"] = {"input_tokens": 900, "output_tokens": 100, "calls": 4}  # version 1 totals
    for key in ("options", "contradictions", "claim_checks", "llm_usage"):
        data.pop(key)
    _old_database(research_dir, json.dumps(data))

    async with research_runtime(settings, warm=False) as service:
        state = service.store.load(old.id)
        assert state.schema_version == STATE_SCHEMA_VERSION
        assert state.report == old.report
        status = await service.status(old.id)
        assert status["status"] == "completed"
        spent = status["usage"]["total"]
        tokens = {key: spent[key] for key in ("input_tokens", "output_tokens", "calls")}
        assert tokens == {"input_tokens": 900, "output_tokens": 100, "calls": 4}
        assert (await service.list())["items"][0]["research_id"] == old.id
    db = sqlite3.connect(research_dir / "research.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == DB_VERSION
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "branches" in tables  # the researcher states of hierarchical research


async def test_retention_deletes_old_finished_research_at_start_up(settings: Settings) -> None:
    store = ResearchStore(settings.research.research_dir)
    old = ResearchState(query="Old question?", llm_provider="openai", llm_model="m")
    old.status = Status.COMPLETED
    store.save(old)
    store._db.execute(
        "UPDATE research SET updated_at=? WHERE id=?",
        ((utcnow() - timedelta(days=40)).isoformat(), old.id),
    )
    fresh = ResearchState(query="New question?", llm_provider="openai", llm_model="m")
    fresh.status = Status.COMPLETED
    store.save(fresh)
    settings.research.retention_days = 30
    async with research_runtime(settings, warm=False) as service:
        ids = [i["research_id"] for i in (await service.list())["items"]]
    assert ids == [fresh.id]


async def test_auto_resume_continues_interrupted_research_at_start_up(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 0.3
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start("What is a Fenwick tree?", max_iterations=1))["research_id"]
        await _until(service, rid, lambda s: bool(s.sub_queries))
    openai_server.latency = 0
    settings.research.auto_resume = True
    async with research_runtime(settings, warm=False) as service:
        status = await wait_until(service, rid, TERMINAL)
    assert status["status"] == "completed"
