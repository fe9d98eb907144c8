"""A statement whose PostgreSQL connection dies while it runs (the server restarted under it):
a run's call is made again, on another connection each time, and lands; a status read fails at
once. Every call a run makes
can be made twice without harm: a save, a create, a claim by the owner already holding it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.access.patience import StatementLost
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.store import PostgresStore
from foundry_mcp.research.store.protocol import Store


@pytest.fixture
def store(postgres_url: str, tmp_path: Path) -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url, tmp_path)
    yield opened
    opened.close()


def _state() -> ResearchState:
    return ResearchState(query="q", llm_provider="openai", llm_model="m")


def _lose_connection_once(store: PostgresStore, attempts: list[int], times: int = 1) -> None:
    """On the first ``times`` attempts, the server ends the connection in the middle of a
    statement."""
    attempts.append(1)
    if len(attempts) <= times:
        with store._db.connection() as conn:
            conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")


def test_the_store_says_a_statement_was_lost_not_only_unreachable(store: PostgresStore) -> None:
    with pytest.raises(StatementLost) as lost:
        _lose_connection_once(store, [])
    assert "cannot be reached" in lost.value.message


@pytest.mark.anyio
async def test_a_runs_save_whose_connection_died_is_made_again(store: PostgresStore) -> None:
    io = AsyncStore(store)
    owner, state = Owner(), _state()
    store.create(state, owner, lease_seconds=30)
    state.status = Status.RUNNING
    state.metadata["saved"] = "after the loss"
    attempts: list[int] = []

    def save(writer: Store) -> None:
        _lose_connection_once(store, attempts)
        writer.save(state, owner)

    await io.write(save)
    assert len(attempts) == 2
    assert store.load(state.id).metadata["saved"] == "after the loss"


@pytest.mark.anyio
async def test_a_runs_save_is_made_again_as_often_as_its_connection_dies(
    store: PostgresStore,
) -> None:
    """After a restart several pooled connections can be dead: each one lost is dropped."""
    io = AsyncStore(store)
    owner, state = Owner(), _state()
    store.create(state, owner, lease_seconds=30)
    state.metadata["saved"] = "after three losses"
    attempts: list[int] = []

    def save(writer: Store) -> None:
        _lose_connection_once(store, attempts, times=3)
        writer.save(state, owner)

    await io.write(save)
    assert len(attempts) == 4
    assert store.load(state.id).metadata["saved"] == "after three losses"


@pytest.mark.anyio
async def test_a_status_read_whose_connection_died_fails_at_once(store: PostgresStore) -> None:
    io = AsyncStore(store)
    attempts: list[int] = []
    with pytest.raises(StoreUnavailableError):
        await io.read(lambda _: _lose_connection_once(store, attempts))
    assert attempts == [1]


def test_a_create_made_again_is_one_research(store: PostgresStore) -> None:
    owner, state = Owner(), _state()
    store.create(state, owner, lease_seconds=30)
    store.create(state, owner, lease_seconds=30)
    listed, _ = store.list_page(limit=10)
    assert [summary.research_id for summary in listed] == [state.id]


def test_a_claim_made_again_by_its_winner_still_wins(store: PostgresStore) -> None:
    dead, taker, other = Owner(), Owner(), Owner()
    state = _state()
    store.create(state, dead, lease_seconds=-1)  # its lease ran out
    assert store.claim(state.id, taker, 30, dead.token)
    assert store.claim(state.id, taker, 30, dead.token)  # its first answer was lost
    assert not store.claim(state.id, other, 30, dead.token)
    ownership = store.ownership(state.id)
    assert ownership is not None and ownership.token == taker.token
