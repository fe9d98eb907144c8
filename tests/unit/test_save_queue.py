"""A save joins the save of its state still waiting on the writer, unless it asks for one of
its own: that one is written after every write queued before it (a run's last event, then the
save that ends the run)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from foundry_mcp.research.models import ResearchState, Source
from foundry_mcp.research.runs.records import RunBranches, SaveQueue
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.sqlite.store import ResearchStore
from foundry_mcp.research.store.states import Snapshot, StateReading


def _state() -> ResearchState:
    return ResearchState(query="q", llm_provider="openai", llm_model="m")


async def _writes_in_order(tmp_path: Path, *, join: bool) -> tuple[list[str], bool]:
    """A save waits behind a busy writer, an event is queued, then a second save is asked:
    the order the writer wrote them in, and whether the second save returned the first's
    snapshot."""
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    saves, state = SaveQueue(), _state()
    order: list[str] = []
    held = threading.Event()

    def write(label: str) -> Callable[[Store, StateReading], Snapshot]:
        def run(store: Store, reading: StateReading) -> Snapshot:
            order.append(label)
            return Snapshot.of_reading(reading)

        return run

    try:
        io.write_soon(lambda store: held.wait(10), "hold the writer")
        first = asyncio.ensure_future(saves.save(io, state, write("first save")))
        await asyncio.sleep(0.05)  # its write is queued
        io.write_soon(lambda store: order.append("event"), "the event")
        second = asyncio.ensure_future(saves.save(io, state, write("second save"), join=join))
        await asyncio.sleep(0.05)
        held.set()
        async with asyncio.timeout(10):
            one, two = await asyncio.gather(first, second)
        await io.drain()
        return order, one is two
    finally:
        held.set()
        io.close()


@pytest.mark.anyio
async def test_a_save_joins_the_save_of_its_state_waiting_on_the_writer(tmp_path: Path) -> None:
    order, same = await _writes_in_order(tmp_path, join=True)
    assert order == ["first save", "event"] and same


@pytest.mark.anyio
async def test_a_save_of_its_own_is_written_after_the_writes_queued_before_it(
    tmp_path: Path,
) -> None:
    order, same = await _writes_in_order(tmp_path, join=False)
    assert order == ["first save", "event", "second save"] and not same


@pytest.mark.anyio
async def test_a_queued_save_keeps_its_place_among_the_writes_and_is_applied_unawaited(
    tmp_path: Path,
) -> None:
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    saves, state = SaveQueue(), _state()
    order: list[str] = []
    applied: list[Snapshot] = []
    held = threading.Event()

    def write(store: Store, reading: StateReading) -> Snapshot:
        order.append("save")
        return Snapshot.of_reading(reading)

    try:
        io.write_soon(lambda store: held.wait(10), "hold the writer")
        saves.save_soon(io, state, write, saved=applied.append)
        # Asked after the save and before the writer took it: written after it.
        io.write_soon(lambda store: order.append("event"), "the event")
        before = state.updated_at
        held.set()
        await io.drain()
        await asyncio.sleep(0)  # the loop runs the save's callback
        assert order == ["save", "event"]
        assert len(applied) == 1 and applied[0].state is state
        assert state.updated_at == applied[0].updated_at != before
    finally:
        held.set()
        io.close()


@pytest.mark.anyio
async def test_a_queued_save_that_failed_is_raised_at_the_next_save_of_its_state(
    tmp_path: Path,
) -> None:
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    saves, state, other = SaveQueue(), _state(), _state()
    written: list[str] = []

    def failing(store: Store, reading: StateReading) -> Snapshot:
        raise OSError("disk full")

    def write(label: str) -> Callable[[Store, StateReading], Snapshot]:
        def run(store: Store, reading: StateReading) -> Snapshot:
            written.append(label)
            return Snapshot.of_reading(reading)

        return run

    try:
        saves.save_soon(io, state, failing)
        await io.drain()
        await asyncio.sleep(0)
        saves.save_soon(io, other, write("another state"))  # its own saves go on
        with pytest.raises(OSError, match="disk full"):
            saves.save_soon(io, state, write("not written"))
        saves.save_soon(io, state, write("after"))  # raised once: the run decides
        saves.save_soon(io, state, failing)
        await io.drain()
        await asyncio.sleep(0)
        saves.forget_failures(state.id)  # the run ended; a new run starts afresh
        saves.save_soon(io, state, write("a new run's"))
        await io.drain()
        assert written == ["another state", "after", "a new run's"]
    finally:
        io.close()


@pytest.mark.anyio
async def test_researcher_states_are_read_once_their_queued_saves_are_written(
    tmp_path: Path,
) -> None:
    """A research consolidates its researchers' states right after their last checkpoints,
    whose saves were only queued: the states it reads are those saves'."""
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    owner = Owner()
    research = _state()
    io.sync.create(research, owner, 60)
    branch = research.model_copy(deep=True, update={"branch": "sq-1", "research_brief": "old"})
    branches = RunBranches(io, owner, research.id, set(), SaveQueue())
    held = threading.Event()
    try:
        branches.save_soon(branch)
        await io.drain()
        io.write_soon(lambda store: held.wait(10), "hold the writer")
        branch.research_brief = "the researcher's last word"
        branches.save_soon(branch)  # queued behind the held writer
        loading = asyncio.ensure_future(branches.load())
        await asyncio.sleep(0.1)
        assert not loading.done()  # it waits for the queued save
        held.set()
        async with asyncio.timeout(10):
            loaded = await loading
        assert loaded["sq-1"].research_brief == "the researcher's last word"
    finally:
        held.set()
        io.close()


@pytest.mark.anyio
async def test_a_fresh_runs_researchers_load_what_it_holds_without_waiting_on_the_writer(
    tmp_path: Path,
) -> None:
    """A run that began with no researcher state saved loads, at once, copies of the states it
    queued (none before it queues one), while their saves still wait on the writer: detached
    from the live states, as read back from the store. A resumed run reads the store."""
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    owner = Owner()
    research = _state()
    io.sync.create(research, owner, 60)
    saves = SaveQueue()
    branches = RunBranches(io, owner, research.id, set(), saves, none_saved=True)
    held = threading.Event()
    try:
        io.write_soon(lambda store: held.wait(10), "hold the writer")
        saves.save_soon(
            io, research, lambda store, reading: Snapshot.of_reading(reading)
        )  # its checkpoint
        async with asyncio.timeout(1):
            assert await branches.load() == {}  # at once: the checkpoint is still queued
        branch = research.model_copy(deep=True, update={"branch": "sq-1"})
        branch.sources.append(
            Source(id="src-0000000a", title="A page", url="https://a.example", content="x" * 500)
        )
        events: list[str] = []
        branch.attach(lambda kind, data: events.append(kind))
        branches.save_soon(branch)  # queued behind the held writer
        branch.research_brief = "changed since its save"
        async with asyncio.timeout(1):
            loaded = await branches.load()  # the writer is still held
        copy = loaded["sq-1"]
        assert copy is not branch and copy.research_brief == "changed since its save"
        assert copy.sources[0] is not branch.sources[0]
        assert copy.sources[0].content == branch.sources[0].content
        copy.sources[0].title = "edited by the consolidation"
        copy.warn("sent nowhere")
        assert branch.sources[0].title != "edited by the consolidation" and events == []
        held.set()
        # A run that began with one saved reads it, as a resumed run must.
        resumed = RunBranches(io, owner, research.id, set(), saves, none_saved=False)
        async with asyncio.timeout(10):
            assert set(await resumed.load()) == {"sq-1"}
    finally:
        held.set()
        io.close()


@pytest.mark.anyio
async def test_a_save_writes_the_state_as_it_was_last_asked_never_as_the_writer_finds_it(
    tmp_path: Path,
) -> None:
    """The writer thread never reads a state the loop edits (its serializer runs Python code for
    every enum value, so the loop can change the state in the middle of a read there): a save
    holds the state as it was when it was last asked for, here, on the loop."""
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    saves, state = SaveQueue(), _state()
    written: list[str | None] = []
    held = threading.Event()

    def write(store: Store, reading: StateReading) -> Snapshot:
        snapshot = Snapshot.of_reading(reading)
        written.append(json.loads(snapshot.json)["research_brief"])
        return snapshot

    try:
        io.write_soon(lambda store: held.wait(10), "hold the writer")
        state.research_brief = "asked first"
        saves.save_soon(io, state, write)
        state.research_brief = "asked again"
        saves.save_soon(io, state, write)  # joins the waiting save, with this reading
        state.research_brief = "changed since, not asked"
        held.set()
        await io.drain()
        assert written == ["asked again"]
    finally:
        held.set()
        io.close()
