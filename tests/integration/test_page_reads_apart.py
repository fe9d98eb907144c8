"""On SQLite, a status read does not wait behind a run's page load (issue 38).

``AsyncStore`` reads on the SQLite store's second connection. A run's ``load_pages`` (megabytes
of page text when it starts, or when a hierarchical research reads its researchers back) used
to hold that connection, and its lock, while a status read waited for it: past
``STATUS_READ_SECONDS`` the status answered its last read, marked stale. Page text now has a
connection of its own. The test holds a run's page load inside its query (a gate the test
opens) and reads a status meanwhile.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import anyio
import pytest

from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.research.models import Source, Status
from foundry_mcp.research.store.opening import open_async_store
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.sqlite import store as sqlite_store
from foundry_mcp.research.store.sqlite.pages import read_pages
from tests.support import stored_state

pytestmark = pytest.mark.anyio

PAGE = "Ice cores hold snow layers year by year; each keeps the air of its year. " * 2000
WAIT_SECONDS = 10.0  # what a step the test waits for may take on a busy machine


async def test_a_status_read_answers_while_a_run_loads_its_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    io = open_async_store(ResearchSettings(research_dir=tmp_path / "research"))
    reached, opened = threading.Event(), threading.Event()

    def held(db: sqlite3.Connection, hashes: list[str]) -> dict[str, str]:
        reached.set()
        opened.wait(3 * WAIT_SECONDS)  # longer than the status may take: held until opened
        return read_pages(db, hashes)

    try:
        state = stored_state(status=Status.RUNNING)
        state.sources.append(Source(title="Ice core study", content=PAGE))
        io.sync.create(state, Owner(), 60)
        loaded = io.sync.load(state.id)  # as a run starts: without its page text
        monkeypatch.setattr(sqlite_store, "read_pages", held)

        async def load_pages() -> None:  # a run starting
            await io.read(lambda store: store.load_pages(loaded), patient=True)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(load_pages)
            try:
                assert await anyio.to_thread.run_sync(reached.wait, WAIT_SECONDS)
                with anyio.fail_after(WAIT_SECONDS):
                    read = await io.read(lambda store: store.load_status(state.id))
                assert read.state.status is Status.RUNNING
            finally:
                opened.set()
        assert loaded.sources[0].content == PAGE
    finally:
        opened.set()
        io.close()
