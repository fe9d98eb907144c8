"""AsyncStore: writes in the order they were asked, reads beside a write that waits, nothing on
the event loop."""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from typing import Any, cast

import anyio
import pytest

from foundry_mcp.research.store.access.aio import READER_THREADS, AsyncStore
from foundry_mcp.research.store.owners import LeaseLostError
from foundry_mcp.research.store.protocol import Store

pytestmark = pytest.mark.anyio


class Recorder:
    """A stand-in store that notes which thread ran each call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.gate = threading.Event()
        self.closed = False

    def note(self, what: str) -> str:
        self.calls.append((what, threading.current_thread().name))
        return what

    def close(self) -> None:
        self.closed = True


def _store(recorder: Recorder) -> Store:
    return cast(Store, recorder)


def _note(what: str) -> Any:
    return lambda store: store.note(what)


async def test_writes_keep_their_order_queued_or_awaited() -> None:
    recorder = Recorder()
    io = AsyncStore(_store(recorder))
    io.write_soon(_note("event 1"), "note event 1")
    io.write_soon(_note("event 2"), "note event 2")
    assert await io.write(_note("save")) == "save"
    await io.drain()
    assert [what for what, _ in recorder.calls] == ["event 1", "event 2", "save"]
    assert {thread for _, thread in recorder.calls} == {"store-write"}
    io.close()
    assert recorder.closed


async def test_a_read_answers_while_a_write_waits_for_a_lock() -> None:
    writer, reader = Recorder(), Recorder()
    io = AsyncStore(_store(writer), _store(reader))

    def stuck(store: Any) -> None:
        writer.gate.wait(5)  # a lock another process holds

    io.write_soon(stuck, "wait for the lock")
    began = time.monotonic()
    with anyio.fail_after(1):
        assert await io.read(_note("status")) == "status"
    assert time.monotonic() - began < 0.5
    assert reader.calls[0][1].startswith("store-read")
    writer.gate.set()
    io.close()


async def test_a_status_answers_while_every_patient_read_waits_for_the_database() -> None:
    """Runs' reads waiting out an outage (as many as there are reader threads, and more) do
    not hold up a read that fails fast, such as a status's."""
    recorder = Recorder()
    io = AsyncStore(_store(recorder))

    def waiting(store: Any) -> None:
        recorder.gate.wait(5)  # a connection the pool has not got back yet

    async with anyio.create_task_group() as tg:
        for _ in range(READER_THREADS + 1):
            tg.start_soon(partial(io.read, waiting, patient=True))
        await anyio.sleep(0.05)  # they hold their threads
        with anyio.fail_after(1):
            assert await io.read(_note("status")) == "status"
        recorder.gate.set()
    io.close()


async def test_a_write_queued_after_close_is_said_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    io = AsyncStore(_store(Recorder()))
    io.close()
    io.write_soon(_note("late event"), "record the late event")
    assert "could not record the late event: the research store is closed" in caplog.text


async def test_a_failed_queued_write_is_logged_and_the_queue_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = Recorder()
    io = AsyncStore(_store(recorder))

    def broken(store: Any) -> None:
        raise RuntimeError("disk full")

    io.write_soon(broken, "record the broken event")
    assert await io.write(_note("save")) == "save"
    assert "could not record the broken event" in caplog.text
    io.close()


async def test_a_queued_write_after_the_lease_was_lost_is_dropped_without_alarm(
    caplog: pytest.LogCaptureFixture,
) -> None:
    io = AsyncStore(_store(Recorder()))

    def fenced(store: Any) -> None:
        raise LeaseLostError("deepres-0123456789ab")

    caplog.set_level(logging.INFO)
    io.write_soon(fenced, "record the cancel_received event of deepres-0123456789ab")
    await io.drain()
    io.close()
    dropped = [r for r in caplog.records if "cancel_received" in r.getMessage()]
    assert [(r.levelno, r.exc_info) for r in dropped] == [(logging.INFO, None)]
    assert "no longer holds the research" in dropped[0].getMessage()
