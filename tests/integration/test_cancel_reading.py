"""A cancel while a research reads its pages: the reading runs in a worker thread (and a
reading process) that cannot be stopped, and the cancel does not wait for it."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import Status
from foundry_mcp.research.workflow.agents import analyzer
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


async def test_a_cancel_while_pages_are_read_ends_the_run_without_waiting_for_the_reading(
    settings: Settings,
    tavily_server: FakeHTTPServer,
    openai_server: FakeHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reading, release = threading.Event(), threading.Event()
    real = analyzer.read_pages

    def stuck(*args, **kwargs):  # type: ignore[no-untyped-def]
        reading.set()
        release.wait(30)  # a reading process that does not answer, until its deadline
        return real(*args, **kwargs)

    monkeypatch.setattr(analyzer, "read_pages", stuck)
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start("How do hash joins spill to disk?", max_iterations=1))[
            "research_id"
        ]
        assert await anyio.to_thread.run_sync(reading.wait, 20)
        try:
            began = time.monotonic()
            assert (await service.cancel(rid))["status"] == "cancelled"
            status = await wait_until(service, rid, TERMINAL, timeout=10)
            assert time.monotonic() - began < 5
        finally:
            release.set()
        assert status["status"] == "cancelled"
        state = service.store.load(rid)
        assert state.status is Status.CANCELLED
        assert state.metadata["abort_phase"] in {"gathering", "analysis"}
