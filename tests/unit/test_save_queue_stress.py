"""The save queue under load: several states of one research saved at once by tasks that edit
them, queue saves without waiting, wait for some, give up waiting on others (cancelled), and
read the states back, while the writer takes a random time and now and then fails."""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from pathlib import Path

import anyio
import pytest

from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.runs.records import SaveQueue
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.sqlite.store import ResearchStore
from foundry_mcp.research.store.states import Snapshot, StateReading

STEPS = 40


class Disk:
    """What the writer wrote, state by state: the version each save's snapshot held."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.written: dict[str | None, list[int]] = defaultdict(list)
        self.failed: dict[str | None, list[int]] = defaultdict(list)

    def writer(self, state: ResearchState) -> object:
        def write(store: Store, reading: StateReading) -> Snapshot:
            time.sleep(self.rng.uniform(0, 0.002))
            version = int(reading.data["research_brief"] or "0")  # what this save writes
            if self.rng.random() < 0.05:
                self.failed[state.branch].append(version)
                raise OSError("disk full")
            snapshot = Snapshot.of_reading(reading)
            self.written[state.branch].append(version)
            return snapshot

        return write


@pytest.mark.anyio
@pytest.mark.parametrize("seed", range(4))
async def test_saves_under_load_end_with_every_state_s_last_version_written(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    disk = Disk(rng)
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    saves = SaveQueue()
    research = ResearchState(query="q", llm_provider="openai", llm_model="m")
    states = [research] + [
        research.model_copy(deep=True, update={"branch": f"part-{n}"}) for n in range(3)
    ]
    raised: dict[str | None, int] = defaultdict(int)
    queued: dict[str | None, int] = defaultdict(int)  # the version of each state's last save
    loop_errors: list[str] = []
    asyncio.get_running_loop().set_exception_handler(
        lambda loop, context: loop_errors.append(str(context.get("message")))
    )

    async def run(state: ResearchState) -> None:
        for version in range(1, STEPS + 1):
            state.research_brief = str(version)  # the run edits its state, then saves it
            choice = rng.random()
            try:
                if choice < 0.6:
                    saves.save_soon(io, state, disk.writer(state))  # type: ignore[arg-type]
                    queued[state.branch] = version
                elif choice < 0.8:
                    queued[state.branch] = version
                    with anyio.move_on_after(rng.uniform(0, 0.003)):  # gives up waiting
                        await saves.save(io, state, disk.writer(state))  # type: ignore[arg-type]
                else:
                    await saves.written(research.id)
                    # Its last save is written (holding that version or a later one), or failed.
                    done = disk.written[state.branch] + disk.failed[state.branch]
                    assert max(done, default=0) >= queued[state.branch]
            except OSError:
                raised[state.branch] += 1
            await anyio.sleep(rng.uniform(0, 0.002))
        # The run's last save, of its own, awaited (as a run's end is), until one is written.
        while True:
            try:
                await saves.save(io, state, disk.writer(state), join=False)  # type: ignore[arg-type]
                return
            except OSError:
                raised[state.branch] += 1

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for state in states:
                    group.start_soon(run, state)
            await saves.written(research.id)
        await asyncio.sleep(0)
        for state in states:
            versions = disk.written[state.branch]
            assert versions == sorted(versions)  # written in the order the run made them
            assert versions[-1] == STEPS  # its last version is on disk
            assert state.updated_at is not None
        # A failure reaches a waiting caller or a later save of its state, never twice.
        for state in states:
            assert raised[state.branch] <= len(disk.failed[state.branch])
        assert loop_errors == []  # no callback of the queue failed
    finally:
        io.close()
