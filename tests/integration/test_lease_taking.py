"""A lease that runs is never taken from a live owner, and its renewal waits for nothing else
(issue 38), on both stores.

- A reader's judgement that an owner is dead rests on a read that may be stale: the owner may
  have renewed its lease since. So ``disown`` and ``claim`` take a lease only if it has run out
  when their own statement runs; the one exception is an owner whose process is known gone (a
  pid of this node that no longer runs), whose lease is taken at once.
- A status read on another worker that found the lease run out, taken after the owner renewed
  it, leaves the research running.
- A renewal is made on a connection of its own: it lands while the store's connection is held
  by a long write (SQLite: its lock) or while the pool has no connection left to give
  (PostgreSQL: every one checked out, as by writes and reads waiting out an outage).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import cast

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import Status
from foundry_mcp.research.store.owners import LeaseLostError, Owner, Ownership, this_node
from foundry_mcp.research.store.postgres.store import PostgresStore
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.sqlite.store import ResearchStore
from foundry_mcp.runtime import research_runtime
from tests.stores import Stores, stores_on
from tests.support import exited_pid, stored_state

RENEWAL_WITHIN = 1.0


@pytest.fixture(params=["sqlite", "postgresql"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    yield from stores_on(request, tmp_path)


@pytest.fixture
def store(stores: Stores) -> Store:
    return stores.open()


def _elsewhere() -> Owner:
    """A worker on another machine: only its lease tells whether it lives."""
    return Owner(host="another-machine", node="node-of-another-machine")


# --------------------------------------------------------------------------- taking a lease


def test_a_lease_renewed_after_it_was_read_expired_is_neither_disowned_nor_claimed(
    stores: Stores, store: Store
) -> None:
    owner, reader = _elsewhere(), stores.open()
    state = stored_state(1, status=Status.RUNNING)
    store.create(state, owner, lease_seconds=-1)  # late: its lease has run out
    seen = reader.ownership(state.id)
    assert seen is not None and not seen.is_alive(Owner(), running_here=False)
    assert store.renew(owner, [state.id], 30) == set()  # the owner renews it after all
    assert reader.disown(state.id, seen.token) is False
    assert reader.claim(state.id, Owner(), 30, seen.token) is False
    store.save(state, owner)  # still the owner's: its saves land
    store.renew(owner, [state.id], 0.2)
    time.sleep(0.3)  # now it has really run out
    assert reader.disown(state.id, seen.token) is True
    with pytest.raises(LeaseLostError):
        store.save(state, owner)


def test_a_lease_whose_process_is_gone_is_taken_at_once(stores: Stores, store: Store) -> None:
    dead = Owner(pid=exited_pid(), node=this_node())  # a process of this node that exited
    state, other = stored_state(2, status=Status.RUNNING), stored_state(3, status=Status.RUNNING)
    store.create(state, dead, lease_seconds=30)
    store.create(other, dead, lease_seconds=30)
    seen = stores.open().ownership(state.id)
    assert seen is not None and seen.process_gone(Owner())
    assert store.disown(state.id, dead.token, process_gone=True) is True
    taker = Owner()
    assert store.claim(other.id, taker, 30, dead.token, process_gone=True) is True
    assert store.ownership(other.id).token == taker.token  # type: ignore[union-attr]


def test_a_process_that_lives_or_means_nothing_here_is_not_known_gone() -> None:
    me = Owner()
    assert not _held_by(me.pid, me.started, me.node).process_gone(Owner())  # this process
    assert not _held_by(exited_pid(), None, "another-node").process_gone(me)
    assert not _held_by(exited_pid(), None, None).process_gone(me)  # recorded before nodes


def _held_by(pid: int, started: float | None, node: str | None) -> Ownership:
    return Ownership("token", pid, "host", time.time() + 30, False, started, node)


@pytest.mark.anyio
async def test_a_status_read_before_the_owner_renewed_leaves_the_research_running(
    settings: Settings, tmp_path: Path
) -> None:
    async with research_runtime(settings, warm=False, serving=False) as reader:
        owner = _elsewhere()
        state = stored_state(4, status=Status.RUNNING)
        reader.store.create(state, owner, lease_seconds=-1)
        stale = reader.store.load_status(state.id)  # the lease as this worker read it: run out
        reader.store.renew(owner, [state.id], 30)  # meanwhile its owner renewed it
        settled = await reader.watch.settled(stale)
        assert settled.state.status is Status.RUNNING
        assert reader.store.load(state.id).status is Status.RUNNING
        assert reader.store.ownership(state.id).token == owner.token  # type: ignore[union-attr]
        reader.store.save(state, owner)  # its next save lands


# --------------------------------------------------------------------------- renewing it


@contextmanager
def _connection_held(store: Store) -> Iterator[None]:
    """The store's connection held, as a long write on the writer thread holds it."""
    with cast(ResearchStore, store)._lock:
        yield


@contextmanager
def _pool_emptied(store: Store) -> Iterator[None]:
    """Every connection of the store's pool checked out, as writes and reads waiting out an
    outage hold them."""
    pool = cast(PostgresStore, store)._db.pool
    taken = [pool.getconn(timeout=10) for _ in range(pool.max_size)]
    try:
        yield
    finally:
        for conn in taken:
            pool.putconn(conn)


HELD: dict[str, Callable[[Store], AbstractContextManager[None]]] = {
    "sqlite": _connection_held,
    "postgresql": _pool_emptied,
}


def test_a_renewal_does_not_wait_for_the_stores_busy_connections(
    stores: Stores, store: Store
) -> None:
    owner = Owner()
    state = stored_state(5, status=Status.RUNNING)
    store.create(state, owner, lease_seconds=2)
    renewed = threading.Event()

    def renew() -> None:
        store.renew(owner, [state.id], 30)
        renewed.set()

    with HELD[stores.backend](store):
        renewing = threading.Thread(target=renew, daemon=True)
        began = time.monotonic()
        renewing.start()
        assert renewed.wait(RENEWAL_WITHIN), "the renewal waited for the store's connection"
        took = time.monotonic() - began
    renewing.join(10)
    ownership = stores.open().ownership(state.id)
    assert ownership is not None and ownership.lease_until is not None
    assert ownership.lease_until - time.time() > 25, took
