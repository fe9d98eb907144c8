"""A PostgreSQL store's status reads on the event loop (psycopg's async pool): the same answers
as the store's own, the state given back unchanged, the store's errors, and the outage state
shared with the rest of the store."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from foundry_mcp.errors import ResearchNotFoundError, StoreUnavailableError
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.store.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.database import OUTAGE_SECONDS
from foundry_mcp.research.store.postgres.status_reads import AsyncStatusReads
from foundry_mcp.research.store.postgres.store import PostgresStore

pytestmark = pytest.mark.anyio


@pytest.fixture
async def io(postgres_url: str, tmp_path: Path) -> AsyncIterator[AsyncStore]:
    opened = AsyncStore(PostgresStore(postgres_url, tmp_path))
    yield opened
    await opened.aclose()


OWNER = Owner()


def _stored(io: AsyncStore) -> ResearchState:
    state = ResearchState(query="How does MVCC work?", llm_provider="openai", llm_model="m")
    io.sync.create(state, OWNER, lease_seconds=30)
    io.sync.append_event(state.id, "run_started", {"pid": 1})
    return state


async def test_a_status_read_on_the_loop_is_the_stores_own(io: AsyncStore) -> None:
    assert isinstance(io.sync.status_reads(), AsyncStatusReads)
    state = _stored(io)

    on_loop = await io.load_status(state.id)
    own = io.sync.load_status(state.id)

    assert on_loop.state == own.state
    assert on_loop.principal == own.principal and on_loop.last_event_at == own.last_event_at
    # The lease is measured on the database's clock at each read: it moved a little.
    assert on_loop.ownership.token == own.ownership.token == OWNER.token
    assert on_loop.ownership.lease_until == pytest.approx(own.ownership.lease_until, abs=1.0)
    assert await io.fingerprint(state.id) == io.sync.fingerprint(state.id)
    assert await io.fingerprint("deepres-000000000000") is None


async def test_an_unchanged_state_is_given_back_and_a_saved_one_read(io: AsyncStore) -> None:
    state = _stored(io)
    first = await io.load_status(state.id)

    again = await io.load_status(state.id, first.state)
    assert again.state is first.state  # neither sent nor decoded

    saved = io.sync.load(state.id)
    saved.status = Status.RUNNING
    io.sync.save(saved, OWNER)
    moved = await io.load_status(state.id, first.state)
    assert moved.state is not first.state and moved.state.status is Status.RUNNING


async def test_an_unknown_or_invalid_id_is_the_stores_error(io: AsyncStore) -> None:
    with pytest.raises(ResearchNotFoundError):
        await io.load_status("deepres-000000000000")
    with pytest.raises(Exception, match="research_id"):
        await io.load_status("../../etc/passwd")


async def test_during_an_outage_a_status_read_fails_at_once(io: AsyncStore) -> None:
    state = _stored(io)
    await io.load_status(state.id)  # the pool is open
    store = io.sync
    assert isinstance(store, PostgresStore)
    # Another call of the store found the database lost a moment ago.
    store._db._outage = StoreUnavailableError("The research store cannot be reached: gone.")
    store._db._outage_until = time.monotonic() + OUTAGE_SECONDS

    began = time.monotonic()
    with pytest.raises(StoreUnavailableError, match="cannot be reached"):
        await io.load_status(state.id)
    assert time.monotonic() - began < 0.1

    store._db._outage_until = time.monotonic()  # the outage window has passed
    assert (await io.load_status(state.id)).state.id == state.id
    assert store._db.outage is None  # a read that reached the database ends the outage
