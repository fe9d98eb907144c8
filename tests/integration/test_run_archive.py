"""A running research's content archive reaches the store as the run's other calls do (issue 38).

Token fitting archives the originals of dropped or heavily shortened sources from a worker
thread (``fitting.sources``: ``anyio.to_thread``). Those writes used to go to the store directly,
outside ``AsyncStore``: not patient, so a PostgreSQL outage of a few seconds failed the
research at its next archive write, and a statement whose connection died was not made again.
Now they go through the run's ``AsyncStore`` (``RunArchive``): on the writer thread, patient.
Each test archives an original as ``fitting.sources`` does, with the runner's archive.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, cast

import anyio
import psycopg
import pytest

from foundry_mcp.context.archive import ArchiveRecord
from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.runs.runner import ResearchRunner
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.access.patience import StatementLost
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.store import PostgresStore
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.sqlite.store import ResearchStore
from tests.support import stored_state

pytestmark = pytest.mark.anyio

ORIGINAL = "The original page of an ice core study, dropped to fit the analysis budget."


def _archiving_research(store: Store, owner: Owner, archive_dir: Path) -> ResearchState:
    """A research of ``owner``'s, stored, with the content archive on."""
    state = stored_state()
    state.options.token_budget.archive_enabled = True
    state.options.token_budget.archive_dir = str(archive_dir)
    store.create(state, owner, 60)
    return state


async def _archive_as_fitting_does(io: AsyncStore, owner: Owner, state: ResearchState) -> str:
    """Archive ``ORIGINAL`` with the runner's archive, from a worker thread; its hash."""
    runner = ResearchRunner(io, cast(Any, None), owner, None)
    archive = runner._archive(state)
    assert archive is not None
    write = functools.partial(
        archive.write,
        content=ORIGINAL,
        item_id="src-1",
        item_type="source",
        reason="dropped",
        original_tokens=15,
        metadata={"url": "https://cores.example/a", "title": "Ice core study"},
    )
    return await anyio.to_thread.run_sync(write)


async def test_an_archive_write_whose_connection_died_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    io = AsyncStore(ResearchStore(tmp_path / "research"))
    owner = Owner()
    state = _archiving_research(io.sync, owner, tmp_path / "archive")
    archive_content = io.sync.archive_content
    attempts: list[bool] = []

    def lost_once(research_id: str, record: ArchiveRecord, owner: Owner | None = None) -> None:
        attempts.append(True)
        if len(attempts) == 1:  # the database restarted while the statement ran
            raise StatementLost("The research store cannot be reached: the connection died.")
        archive_content(research_id, record, owner)

    monkeypatch.setattr(io.sync, "archive_content", lost_once)
    try:
        digest = await _archive_as_fitting_does(io, owner, state)
        assert len(attempts) == 2
        record = io.sync.archived_content(state.id, digest)
        assert record is not None and record.content == ORIGINAL
    finally:
        io.close()


async def test_an_archive_write_waits_out_an_outage_of_postgresql(
    postgres_url: str, tmp_path: Path
) -> None:
    store = PostgresStore(postgres_url, tmp_path / "research")
    io = AsyncStore(store)
    owner = Owner()
    try:
        state = _archiving_research(store, owner, tmp_path / "archive")
        # A call found the database lost (a restart): for a few seconds every call that is
        # not patient fails at once, as a status does here; a run's calls wait for it.
        store._db.found_lost(psycopg.errors.AdminShutdown("terminating connection"))
        with pytest.raises(StoreUnavailableError):
            store.fingerprint(state.id)
        digest = await _archive_as_fitting_does(io, owner, state)
        record = store.archived_content(state.id, digest)
        assert record is not None and record.content == ORIGINAL
    finally:
        io.close()
