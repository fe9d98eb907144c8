"""The SQLite store's status waits share one poll of the fingerprints."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import anyio
import pytest

from foundry_mcp.research.store.access.waits import SharedChangePoll
from foundry_mcp.research.store.records import Fingerprint

pytestmark = pytest.mark.anyio


class Fingerprints:
    """A store's fingerprints, counting the reads."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.now: dict[str, Fingerprint] = {i: ("running", "gathering", 1, "t0") for i in ids}
        self.reads: list[list[str]] = []
        self.fail = False
        self.lock = threading.Lock()

    def read(self, ids: Sequence[str]) -> dict[str, Fingerprint]:
        with self.lock:
            self.reads.append(list(ids))
            if self.fail:
                raise OSError("database is locked")
            return {i: self.now[i] for i in ids if i in self.now}


async def test_many_waits_share_one_read_a_poll_and_only_the_moved_research_wakes() -> None:
    ids = [f"r{n}" for n in range(20)]
    store = Fingerprints(ids)
    poll = SharedChangePoll(store.read)
    woken: dict[str, bool] = {}

    async def wait(research_id: str) -> None:
        timeout = 30.0 if research_id == "r7" else 1.0  # r7 wakes at a poll, however slow
        woken[research_id] = await poll.wait(research_id, timeout, since=store.now[research_id])

    async with anyio.create_task_group() as group:
        for research_id in ids:
            group.start_soon(wait, research_id)
        await anyio.sleep(0.3)
        store.now["r7"] = ("running", "analysis", 1, "t1")
    assert woken.pop("r7") is True
    assert set(woken.values()) == {False}  # the others waited out their second
    polls = len(store.reads)
    assert polls < 40  # one read a poll, not one a wait (20 waits x 20 polls a second)
    assert max(len(read) for read in store.reads) == 20


async def test_a_wait_without_a_fingerprint_takes_the_one_it_has_now() -> None:
    store = Fingerprints(["r1"])
    with anyio.fail_after(5):
        assert await SharedChangePoll(store.read).wait("r1", 0.2) is False  # nothing moved
        poll = SharedChangePoll(store.read)
        reads_before = len(store.reads)

        async def move() -> None:
            while len(store.reads) == reads_before:  # the wait took its fingerprint
                await anyio.sleep(0.01)
            with store.lock:
                del store.now["r1"]  # deleted: a change too

        async with anyio.create_task_group() as group:
            group.start_soon(move)
            assert await poll.wait("r1", 3.0) is True


async def test_a_failed_read_wakes_the_waits_to_read_for_themselves() -> None:
    store = Fingerprints(["r1"])
    poll = SharedChangePoll(store.read)
    store.fail = True
    with anyio.fail_after(5):
        assert await poll.wait("r1", 3.0, since=store.now["r1"]) is True


async def test_a_save_made_here_ends_its_waits_before_the_next_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("foundry_mcp.research.store.access.waits.POLL_SECONDS", 60.0)
    store = Fingerprints(["r1", "r2"])
    poll = SharedChangePoll(store.read)
    woken: dict[str, bool] = {}

    async def wait(research_id: str) -> None:
        woken[research_id] = await poll.wait(research_id, 1.0, since=store.now[research_id])

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(wait, "r1")
            group.start_soon(wait, "r2")
            await anyio.sleep(0.1)  # both waits took their first poll; the next is a minute off
            poll.wake("r1")
            await anyio.sleep(0.1)
            assert woken == {"r1": True}  # at once, and only the research saved
    assert woken == {"r1": True, "r2": False}
