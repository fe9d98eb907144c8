"""The store's writer thread never writes to the state a run is editing (issue 38).

A run saves its state on the store's writer thread while it goes on editing it on the event
loop. The save used to set ``updated_at``, each new source's ``content_hash`` and the text the
store keeps (``Source._kept``) on that live state, from the writer thread. Now the writer reads
the state into a snapshot (``store.states.Snapshot``) and writes that; what the save set is
recorded on the state on the loop, once the write returned.

Each test holds a run's save in the middle of its write, where the old code had already changed
the state: SQLite at its page write (a gate the test opens), PostgreSQL behind a row lock another
connection holds (seen waiting for it: ``pg_blocking_pids``), and looks at the state meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import psycopg
import pytest

from foundry_mcp.research.models import ResearchState, Source
from foundry_mcp.research.runs.runner import ResearchRunner
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.store import PostgresStore
from foundry_mcp.research.store.sqlite import store as sqlite_store
from foundry_mcp.research.store.sqlite.store import ResearchStore
from tests.support import stored_state

pytestmark = pytest.mark.anyio

PAGE = "Ice cores hold snow layers year by year; each keeps the air of its year. " * 50
WAIT_SECONDS = 10.0  # what a step the test waits for may take on a busy machine


class Gate:
    """Holds the SQLite store's page write (inside the save's transaction) until opened."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.opened = threading.Event()

    def wrap(self, write_pages: Callable[..., None]) -> Callable[..., None]:
        def held(*args: Any) -> None:
            self.reached.set()
            self.opened.wait(WAIT_SECONDS)
            write_pages(*args)

        return held


@asynccontextmanager
async def saving(runner: ResearchRunner, state: ResearchState) -> AsyncIterator[None]:
    """A run's save of ``state`` under way for the block, awaited when it ends."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(runner._save, state)
        yield


def _research_with_a_new_page(io: AsyncStore, owner: Owner) -> tuple[ResearchState, Source]:
    """A running research of ``owner``'s, saved, whose source has just got its page text."""
    state = stored_state()
    io.sync.create(state, owner, 60)
    source = Source(title="Ice core study", url="https://cores.example/a", content=PAGE)
    state.sources.append(source)
    return state, source


def _assert_untouched(state: ResearchState, source: Source, updated_at: Any) -> None:
    assert state.updated_at == updated_at
    assert source.content_hash is None
    assert not source.text_is_kept


def _assert_saved(io: AsyncStore, state: ResearchState, source: Source, before: Any) -> None:
    stored = io.sync.load(state.id)
    assert state.updated_at == stored.updated_at and stored.updated_at > before
    assert source.content_hash is not None
    assert source.content_hash == stored.sources[0].content_hash
    assert source.text_is_kept


async def test_a_sqlite_save_under_way_leaves_the_state_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    owner = Owner()
    gate = Gate()
    try:
        state, source = _research_with_a_new_page(io, owner)
        before = state.updated_at
        monkeypatch.setattr(sqlite_store, "write_pages", gate.wrap(sqlite_store.write_pages))
        async with saving(ResearchRunner(io, cast(Any, None), owner, None), state):
            try:
                assert await anyio.to_thread.run_sync(gate.reached.wait, WAIT_SECONDS)
                _assert_untouched(state, source, before)
            finally:
                gate.opened.set()
        _assert_saved(io, state, source, before)
    finally:
        gate.opened.set()
        io.close()


async def test_a_text_set_aside_during_a_save_stays_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save wrote the text the state held when it was read; the loop set it aside since
    (the degradation ladder): the state is not told the store keeps it, and the next save
    drops its reference, so it is not read back."""
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    owner = Owner()
    gate = Gate()
    runner = ResearchRunner(io, cast(Any, None), owner, None)
    try:
        state, source = _research_with_a_new_page(io, owner)
        monkeypatch.setattr(sqlite_store, "write_pages", gate.wrap(sqlite_store.write_pages))
        async with saving(runner, state):
            try:
                assert await anyio.to_thread.run_sync(gate.reached.wait, WAIT_SECONDS)
                source.content = None
            finally:
                gate.opened.set()
        assert io.sync.load(state.id).sources[0].content_hash is not None  # as it was read
        assert source.content_hash is None
        await runner._save(state)
        stored = io.sync.load(state.id)
        io.sync.load_pages(stored)
        assert stored.sources[0].content_hash is None
        assert stored.sources[0].content is None
    finally:
        gate.opened.set()
        io.close()


async def test_a_postgresql_save_waiting_for_a_row_lock_leaves_the_state_alone(
    postgres_url: str, tmp_path: Path
) -> None:
    io = AsyncStore(PostgresStore(postgres_url, tmp_path / "research"))
    owner = Owner()
    try:
        state, source = _research_with_a_new_page(io, owner)
        before = state.updated_at
        with psycopg.connect(postgres_url) as holder:  # another server's transaction
            holder.execute("SELECT 1 FROM research WHERE id = %s FOR UPDATE", (state.id,))
            async with saving(ResearchRunner(io, cast(Any, None), owner, None), state):
                try:
                    with anyio.fail_after(WAIT_SECONDS):
                        while not _blocked_by(postgres_url, holder.info.backend_pid):
                            await anyio.sleep(0.02)
                    _assert_untouched(state, source, before)
                finally:
                    holder.commit()
        _assert_saved(io, state, source, before)
    finally:
        io.close()


def _blocked_by(url: str, holder_pid: int) -> bool:
    """Whether a statement waits for a lock the backend ``holder_pid`` holds."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
            (holder_pid,),
        ).fetchone()
    return bool(row and row[0])
