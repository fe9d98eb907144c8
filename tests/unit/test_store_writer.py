"""The store's writer thread: in order, a write asked ``first`` before those queued."""

from __future__ import annotations

import threading

import pytest

from foundry_mcp.research.store.access.writer import OrderedWriter


def test_a_write_asked_first_goes_before_the_queued_ones_and_each_kind_keeps_its_order() -> None:
    writer = OrderedWriter("test-write")
    ran: list[str] = []
    gate = threading.Event()
    blocking = writer.submit(gate.wait, 5)  # holds the thread while the rest is queued
    queued = [writer.submit(ran.append, f"run {n}") for n in range(3)]
    firsts = [writer.submit(ran.append, f"create {n}", first=True) for n in range(2)]
    gate.set()
    for future in [blocking, *queued, *firsts]:
        future.result(timeout=5)
    assert ran == ["create 0", "create 1", "run 0", "run 1", "run 2"]
    writer.shutdown()


def test_a_failed_write_reaches_its_caller_and_the_thread_goes_on() -> None:
    writer = OrderedWriter("test-write")

    def fail() -> None:
        raise ValueError("the disk is full")

    with pytest.raises(ValueError, match="disk is full"):
        writer.submit(fail).result(timeout=5)
    assert writer.submit(lambda: 42).result(timeout=5) == 42
    writer.shutdown()


def test_shutdown_runs_what_is_queued_then_refuses_more() -> None:
    writer = OrderedWriter("test-write")
    gate = threading.Event()
    writer.submit(gate.wait, 5)
    late = writer.submit(lambda: "written")
    stopping = threading.Thread(target=writer.shutdown)
    stopping.start()
    gate.set()
    stopping.join(timeout=5)
    assert late.result(timeout=0) == "written"
    with pytest.raises(RuntimeError):
        writer.submit(lambda: None)
