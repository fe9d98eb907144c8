"""The store contract: every test runs against SQLite and against a real PostgreSQL server.

Both stores satisfy ``foundry_mcp.research.store.protocol.Store``; what a caller may rely on is
tested here once. What only one of them does lives beside: ``tests/unit/test_store.py`` (the
SQLite file) and ``test_store_postgres.py`` (migrations under a lock, errors, the listener).
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from foundry_mcp.errors import InputError, InvalidResearchIdError, ResearchNotFoundError
from foundry_mcp.research.models import (
    Finding,
    LLMCallRecord,
    Phase,
    ResearchState,
    Source,
    Status,
    SubQuery,
)
from foundry_mcp.research.store.access.waits import POLL_SECONDS
from foundry_mcp.research.store.owners import (
    LeaseLostError,
    Owner,
)
from foundry_mcp.research.store.protocol import Store
from tests.stores import Stores, stores_on
from tests.support import STATE_BASE, stored_state


@pytest.fixture(params=["sqlite", "postgresql"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    yield from stores_on(request, tmp_path)


@pytest.fixture
def store(stores: Stores) -> Store:
    return stores.open()


def _walk(store: Store, limit: int, **filters) -> list[str]:
    seen, cursor = [], None
    for _ in range(100):
        items, cursor = store.list_page(limit, cursor=cursor, **filters)
        assert len(items) <= limit
        seen += [item.research_id for item in items]
        if cursor is None:
            return seen
    raise AssertionError("paging never ended")


def _newest_first(states: list[ResearchState]) -> list[str]:
    return [s.id for s in sorted(states, key=lambda s: (s.created_at, s.id), reverse=True)]


# --------------------------------------------------------------------------- save / load


def test_a_status_read_reuses_a_state_not_saved_since(stores: Stores) -> None:
    """A state read before is given back while unchanged; another server's save is seen."""
    store, other = stores.open(), stores.open()
    state = stored_state(status=Status.RUNNING, research_brief="before")
    store.save(state)
    first = store.load_status(state.id)
    assert first.state.research_brief == "before"
    again = store.load_status(state.id, first.state)
    assert again.state is first.state  # not read, not decoded
    saved = other.load(state.id)
    saved.research_brief = "after"
    other.save(saved)
    moved = store.load_status(state.id, first.state)
    assert moved.state is not first.state and moved.state.research_brief == "after"


def test_round_trip_keeps_every_field(store: Store) -> None:
    state = stored_state(
        status=Status.RUNNING,
        phase=Phase.ANALYSIS,
        iteration=2,
        research_brief="brief",
        sub_queries=[SubQuery(query="a sub-query of length")],
        sources=[Source(title="T", url="https://t.example", content="text ünïcode ✓")],
        findings=[Finding(content="claim", source_ids=["src-00000000"])],
        report="## Report\n\nbody",
        metadata={"abort_phase": "gathering", "nested": {"n": [1, 2]}},
        warnings=["careful"],
    )
    state.llm_usage.add(
        LLMCallRecord(
            provider="openai",
            model="m",
            phase="analysis",
            purpose="analysis",
            input_tokens=10,
            output_tokens=5,
        )
    )
    store.save(state)
    loaded = store.load(state.id)
    store.load_pages(loaded)  # the page text is kept apart
    assert loaded.model_dump() == state.model_dump()
    total = loaded.llm_usage.total
    assert total.input_tokens + total.output_tokens == 15


def test_save_twice_keeps_the_latest_state_and_changes_the_fingerprint(store: Store) -> None:
    state = stored_state()
    store.save(state)
    before = store.fingerprint(state.id)
    state.status = Status.COMPLETED
    state.report = "## Final"
    store.save(state)
    loaded = store.load(state.id)
    assert loaded.status is Status.COMPLETED
    assert loaded.report == "## Final"
    after = store.fingerprint(state.id)
    assert after == ("completed", state.phase.value, state.iteration, state.updated_at.isoformat())
    assert after != before
    assert len(store.list_page(10)[0]) == 1


def test_save_refreshes_updated_at(store: Store) -> None:
    state = stored_state(updated_at=STATE_BASE)
    store.save(state)
    assert state.updated_at > STATE_BASE
    assert store.load(state.id).updated_at == state.updated_at


def test_load_of_unknown_id_is_not_found(store: Store) -> None:
    store.save(stored_state())
    with pytest.raises(ResearchNotFoundError):
        store.load("deepres-000000000000")
    with pytest.raises(ResearchNotFoundError):
        store.principal_of("deepres-000000000000")
    assert store.fingerprint("deepres-000000000000") is None


def test_load_and_delete_validate_the_id(store: Store) -> None:
    with pytest.raises(InvalidResearchIdError):
        store.load("../etc/passwd")
    with pytest.raises(InvalidResearchIdError):
        store.delete("deepres-XYZ")


def test_delete_removes_the_research_and_everything_of_it(store: Store) -> None:
    keep, owner = stored_state(1), Owner()
    gone = stored_state(2)
    store.save(keep)
    store.create(gone, owner, lease_seconds=30)
    store.append_event(gone.id, "started", {})
    store.journal.put(gone.id, "llm:k", "answer", {"tokens": 1}, owner)
    store.save_branch(gone.model_copy(update={"branch": "sq-1"}), owner)
    assert store.delete(gone.id) is True
    assert store.delete(gone.id) is False
    with pytest.raises(ResearchNotFoundError):
        store.load(gone.id)
    assert store.events(gone.id, 0, 10) == []
    assert store.journal.count(gone.id) == 0
    assert store.load_branches(gone.id) == {}
    assert store.load(keep.id).id == keep.id
    assert [item.research_id for item in store.list_page(10)[0]] == [keep.id]


def test_a_second_store_sees_what_the_first_saved(stores: Stores, store: Store) -> None:
    other = stores.open()  # another process, or another server of the team
    state = stored_state(3)
    store.save(state)
    assert other.load(state.id).query == state.query
    state.status = Status.CANCELLED
    store.save(state)
    assert other.load(state.id).status is Status.CANCELLED
    written_by_other = stored_state(4)
    other.save(written_by_other)
    assert [i.research_id for i in store.list_page(10)[0]] == [written_by_other.id, state.id]
    assert other.delete(state.id)
    with pytest.raises(ResearchNotFoundError):
        store.load(state.id)


def test_opening_twice_migrates_once_and_keeps_the_data(stores: Stores, store: Store) -> None:
    state = stored_state()
    store.save(state)
    again = stores.open()
    assert again.load(state.id).model_dump() == state.model_dump()
    info = again.describe()
    assert info.backend == stores.backend
    assert info.schema_version == store.describe().schema_version >= 1


# --------------------------------------------------------------------------- listing


@pytest.fixture
def many(store: Store) -> list[ResearchState]:
    """25 researches with distinct created_at, saved in random order; every third completed."""
    states = [
        stored_state(i, status=Status.COMPLETED if i % 3 == 0 else Status.FAILED) for i in range(25)
    ]
    for state in random.Random(7).sample(states, len(states)):
        store.save(state)
    return states


def test_list_is_newest_first(store: Store, many: list[ResearchState]) -> None:
    items, cursor = store.list_page(100)
    assert [item.research_id for item in items] == _newest_first(many)
    assert cursor is None
    newest = max(many, key=lambda s: s.created_at)
    assert items[0].query == newest.query
    assert items[0].status is newest.status
    assert items[0].created_at == newest.created_at.isoformat()


@pytest.mark.parametrize("limit", [1, 4, 25])
def test_paging_visits_every_research_once_in_order(
    store: Store, many: list[ResearchState], limit: int
) -> None:
    assert _walk(store, limit) == _newest_first(many)


def test_paging_with_identical_created_at_breaks_ties_by_id(store: Store) -> None:
    states = [stored_state(0) for _ in range(9)]  # all share one created_at
    for state in states:
        store.save(state)
    assert _walk(store, 2) == sorted((s.id for s in states), reverse=True)


def test_status_filters(store: Store, many: list[ResearchState]) -> None:
    completed = _newest_first([s for s in many if s.status is Status.COMPLETED])
    items, _ = store.list_page(100, completed_only=True)
    assert [item.research_id for item in items] == completed
    assert _walk(store, 3, completed_only=True) == completed
    failed = _newest_first([s for s in many if s.status is Status.FAILED])
    assert _walk(store, 4, statuses=[Status.FAILED]) == failed
    both = _walk(store, 7, statuses=[Status.FAILED, Status.COMPLETED])
    assert both == _newest_first(many)
    assert store.list_page(10, statuses=[Status.RUNNING]) == ([], None)


def test_principal_filter(store: Store) -> None:
    alice = [stored_state(i, principal="alice") for i in range(3)]
    bob = [stored_state(10 + i, principal="bob") for i in range(2)]
    local = stored_state(20)
    for state in [*alice, *bob, local]:
        store.save(state)
    created = stored_state(30, principal="alice")
    store.create(created, Owner(), lease_seconds=30)
    assert _walk(store, 2, principal="alice") == _newest_first([*alice, created])
    assert _walk(store, 10, principal="bob") == _newest_first(bob)
    assert len(_walk(store, 2)) == 7
    assert store.principal_of(bob[0].id) == "bob"
    assert store.principal_of(local.id) is None


def test_empty_store_lists_nothing(store: Store) -> None:
    assert store.list_page(10) == ([], None)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "not a cursor!",
        "abc",
        "é",
        _b64(b"42"),
        _b64(b'["only-one"]'),
        _b64(b'["a", "b", "c"]'),
        _b64(b"\xff\xfe\x00"),
    ],
)
def test_bad_cursor_is_an_input_error(store: Store, many: list[ResearchState], cursor: str) -> None:
    with pytest.raises(InputError):
        store.list_page(5, cursor=cursor)


def test_active_ids(store: Store) -> None:
    running, queued, done = (
        stored_state(1, status=Status.RUNNING),
        stored_state(2, status=Status.QUEUED),
        stored_state(3, status=Status.COMPLETED),
    )
    for state in (running, queued, done):
        store.save(state)
    assert sorted(store.active_ids()) == sorted([running.id, queued.id])


def test_retention_deletes_only_old_finished_research(store: Store) -> None:
    old_done, old_running = (
        stored_state(1, status=Status.COMPLETED),
        stored_state(2, status=Status.RUNNING),
    )
    store.save(old_done)
    store.save(old_running)
    store.append_event(old_done.id, "completed", {})
    time.sleep(0.8)
    fresh = stored_state(3, status=Status.FAILED)
    store.save(fresh)
    # Untouched for half a second: the old, not the fresh one, even on a machine that stalls.
    assert store.delete_older_than(0.5 / 86400) == 1
    assert sorted(store.active_ids()) == [old_running.id]
    assert {i.research_id for i in store.list_page(10)[0]} == {old_running.id, fresh.id}
    assert store.events(old_done.id, 0, 10) == []
    assert store.delete_older_than(365) == 0


# --------------------------------------------------------------------------- branches, events, journal


def test_branch_states_are_fenced_and_read_back(stores: Stores, store: Store) -> None:
    owner, thief = Owner(), Owner()
    state = stored_state()
    store.create(state, owner, lease_seconds=30)
    first = state.model_copy(update={"branch": "sq-1", "report": "one"})
    second = state.model_copy(update={"branch": "sq-2", "report": "two"})
    store.save_branch(first, owner)
    store.save_branch(second, owner)
    first.report = "one, again"
    store.save_branch(first, owner)
    branches = stores.open().load_branches(state.id)
    assert {key: b.report for key, b in branches.items()} == {"sq-1": "one, again", "sq-2": "two"}
    with pytest.raises(LeaseLostError):
        store.save_branch(second, thief)
    with pytest.raises(ValueError):
        store.save_branch(state, owner)  # no branch id
    assert store.load_branches("deepres-000000000000") == {}


def test_events_are_numbered_and_paged(store: Store) -> None:
    state = stored_state()
    store.save(state)
    assert store.last_event_at(state.id) is None
    moment = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    seqs = [store.append_event(state.id, f"kind-{i}", {"i": i, "at": moment}) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    first = store.events(state.id, 0, 2)
    assert [(e.seq, e.kind) for e in first] == [(1, "kind-0"), (2, "kind-1")]
    assert first[0].data == {"i": 0, "at": moment.isoformat()}
    assert [e.seq for e in store.events(state.id, 2, 10)] == [3, 4, 5]
    assert store.events(state.id, 5, 10) == []
    last = store.last_event_at(state.id)
    assert last is not None and datetime.fromisoformat(last) >= datetime.fromisoformat(first[0].at)
    assert store.events("deepres-000000000000", 0, 10) == []


def test_events_appended_by_two_stores_at_once_get_distinct_numbers(stores: Stores) -> None:
    first, second = stores.open(), stores.open()
    state = stored_state()
    first.save(state)
    barrier = threading.Barrier(2)
    numbers: list[int] = []

    def append(store: Store) -> None:
        barrier.wait()
        numbers.extend(store.append_event(state.id, "tick", {}) for _ in range(10))

    _in_threads([lambda: append(first), lambda: append(second)])
    assert sorted(numbers) == list(range(1, 21))


def test_the_journal_is_fenced_and_replayed(stores: Stores, store: Store) -> None:
    owner, other = Owner(), Owner()
    state = stored_state()
    store.create(state, owner, lease_seconds=30)
    assert store.journal.get(state.id, "llm:plan:1") is None
    store.journal.put(state.id, "llm:plan:1", "the plan", {"input_tokens": 3}, owner)
    store.journal.put(state.id, "llm:plan:2", "another", {"input_tokens": 4}, owner)
    store.journal.put(state.id, "llm:plan:2", "replaced", {"input_tokens": 5}, owner)
    entry = stores.open().journal.get(state.id, "llm:plan:1")
    assert entry is not None and (entry.answer, entry.record) == ("the plan", {"input_tokens": 3})
    replaced = store.journal.get(state.id, "llm:plan:2")
    assert replaced is not None and replaced.answer == "replaced"
    assert store.journal.count(state.id) == 2
    with pytest.raises(LeaseLostError):
        store.journal.put(state.id, "llm:plan:3", "stolen", {}, other)
    assert store.journal.count(state.id) == 2


# --------------------------------------------------------------------------- page text

FACT = "The last core reached ice 41,200 years old."


def _page(chars: int, name: str = "") -> str:
    """A page of about ``chars`` characters whose fact is at its very end."""
    line = f"{name} line of a long page about ice cores and the climates they record.\n"
    return line * (chars // len(line)) + FACT


def _with_pages(*texts: str | None, index: int = 0, **fields: Any) -> ResearchState:
    sources = [Source(title=f"Page {n}", content=text) for n, text in enumerate(texts)]
    return stored_state(index, sources=sources, **fields)


def _stored_json(stores: Stores, research_id: str) -> str:
    (row,) = stores.sql("SELECT state FROM research WHERE id = ?", research_id)
    return str(row[0])


def _page_count(stores: Stores) -> int:
    return int(stores.sql("SELECT count(*) FROM pages")[0][0])


def _texts(store: Store, research_id: str) -> list[str | None]:
    state = store.load(research_id)
    store.load_pages(state)
    return [source.content for source in state.sources]


def test_page_text_is_kept_apart_from_the_state_and_read_back_whole(
    stores: Stores, store: Store
) -> None:
    small, large = _with_pages(_page(20_000), index=1), _with_pages(_page(400_000), index=2)
    for state in (small, large):
        store.save(state)
    rows = {chars: _stored_json(stores, s.id) for chars, s in ((20, small), (400, large))}
    print(f"\nstate row with a 20 KB page: {len(rows[20])} bytes, 400 KB: {len(rows[400])}")
    assert FACT not in rows[400] and len(rows[400]) < 5_000
    assert abs(len(rows[400]) - len(rows[20])) < 20  # only the hash and ids differ
    loaded = store.load(large.id)
    assert loaded.sources[0].content is None  # status, lists and reports never read pages
    assert loaded.sources[0].content_hash == large.sources[0].content_hash
    store.load_pages(loaded)
    assert loaded.sources[0].content == _page(400_000)
    assert loaded.model_dump() == large.model_dump()


def test_any_text_round_trips(store: Store) -> None:
    odd = "NUL \x00 inside, ünïcode ✓, emoji 🧊, CRLF\r\nend"
    state = _with_pages(odd, "", None)
    store.save(state)
    assert _texts(store, state.id) == [odd, "", None]


def test_a_save_of_an_unchanged_state_writes_no_page(stores: Stores, store: Store) -> None:
    state = _with_pages(_page(50_000))
    store.save(state)
    stores.sql("DELETE FROM pages")  # a page written again would be back
    state.status = Status.RUNNING
    store.save(state)
    assert _page_count(stores) == 0
    state.sources.append(Source(title="new", content="a new page"))
    store.save(state)
    assert _page_count(stores) == 1  # only the new text was written
    loaded = store.load(state.id)
    store.load_pages(loaded)  # the page deleted by hand: that source keeps its snippet
    assert [s.content for s in loaded.sources] == [None, "a new page"]


def test_create_and_branches_keep_their_pages(store: Store) -> None:
    owner = Owner()
    state = _with_pages("the research's page")
    store.create(state, owner, lease_seconds=30)
    one = state.model_copy(update={"branch": "sq-1", "sources": [Source(title="a", content="A")]})
    two = state.model_copy(update={"branch": "sq-2", "sources": [Source(title="b", content="B")]})
    store.save_branch(one, owner)
    store.save_branch(two, owner)
    assert _texts(store, state.id) == ["the research's page"]
    branches = store.load_branches(state.id)
    assert all(b.sources[0].content is None for b in branches.values())
    store.load_pages(*branches.values())
    assert {key: b.sources[0].content for key, b in branches.items()} == {"sq-1": "A", "sq-2": "B"}


def test_a_page_shared_by_two_research_is_kept_once_until_neither_uses_it(
    stores: Stores, store: Store
) -> None:
    shared = _page(30_000, "shared")
    first, second = _with_pages(shared, "first's own", index=1), _with_pages(shared, index=2)
    store.save(first)
    store.save(second)
    assert _page_count(stores) == 2
    assert store.delete(first.id)
    assert _page_count(stores) == 1
    assert _texts(store, second.id) == [shared]
    assert store.delete(second.id)
    assert _page_count(stores) == 0
    assert stores.sql("SELECT count(*) FROM research_pages")[0][0] == 0


def test_retention_deletes_the_pages_only_old_research_used(stores: Stores, store: Store) -> None:
    shared = "a page both research read"
    old = _with_pages(shared, "only the old one's page", index=1, status=Status.COMPLETED)
    store.save(old)
    time.sleep(0.8)
    fresh = _with_pages(shared, index=2, status=Status.COMPLETED)
    store.save(fresh)
    assert store.delete_older_than(0.5 / 86400) == 1
    assert _page_count(stores) == 1
    assert _texts(store, fresh.id) == [shared]


def test_a_text_set_aside_is_not_read_back(store: Store) -> None:
    """The degradation ladder may set a text aside (``content = None``): it stays aside."""
    state = _with_pages("kept", "set aside", "set aside unread")
    store.save(state)
    loaded = store.load(state.id)
    store.load_pages(loaded)
    loaded.sources[1].content = None
    store.save(loaded)
    unread = store.load(state.id)
    unread.sources[2].content = None  # its text never read back
    store.save(unread)
    assert _texts(store, state.id) == ["kept", None, None]


def test_a_save_refused_by_the_fence_is_written_in_full_by_the_next(
    stores: Stores, store: Store
) -> None:
    owner, thief = Owner(), Owner()
    state = _with_pages()
    store.create(state, owner, lease_seconds=30)
    state.sources.append(Source(title="late", content="a page read late"))
    with pytest.raises(LeaseLostError):
        store.save(state, thief)
    assert _page_count(stores) == 0  # rolled back with the state
    store.save(state, owner)
    assert _texts(store, state.id) == ["a page read late"]


def test_a_state_with_its_text_inline_loads_and_moves_it_out_on_save(
    stores: Stores, store: Store
) -> None:
    """States saved before pages had their own table carry the text in their JSON."""
    state = _with_pages()
    store.save(state)
    inline = json.loads(_stored_json(stores, state.id))
    inline["sources"] = [{"id": "src-0000aaaa", "title": "old", "content": _page(40_000)}]
    stores.sql("UPDATE research SET state = ? WHERE id = ?", json.dumps(inline), state.id)
    loaded = store.load(state.id)
    assert loaded.sources[0].content == _page(40_000)
    store.save(loaded)
    assert FACT not in _stored_json(stores, state.id)
    assert _texts(store, state.id) == [_page(40_000)]


# --------------------------------------------------------------------------- ownership


def test_claim_renew_release_disown(store: Store) -> None:
    owner, other = Owner(), Owner()
    state = stored_state(status=Status.RUNNING)
    store.create(state, owner, lease_seconds=30)
    held = store.ownership(state.id)
    assert held is not None and (held.token, held.pid, held.host) == (
        owner.token,
        owner.pid,
        owner.host,
    )
    assert held.lease_until is not None and 25 < held.lease_until - time.time() <= 31
    assert not held.cancel_requested
    assert held.is_alive(other, running_here=False)  # a live process (this one) holds it
    assert store.ownership("deepres-000000000000") is None

    assert store.claim(state.id, other, 30, expected_token="someone-else") is False
    assert store.claim(state.id, other, 30, expected_token=None) is False
    assert store.renew(owner, [state.id], 60) == set()
    renewed = store.ownership(state.id)
    assert renewed is not None and renewed.lease_until is not None
    assert renewed.lease_until - time.time() > 55
    assert store.renew(owner, [], 60) == set()

    store.release(state.id, other)  # not the owner: nothing happens
    assert store.ownership(state.id).token == owner.token  # type: ignore[union-attr]
    store.release(state.id, owner)
    released = store.ownership(state.id)
    assert released is not None and released.token is None and released.lease_until is None
    assert store.claim(state.id, other, 30, expected_token=None) is True
    assert store.ownership(state.id).token == other.token  # type: ignore[union-attr]

    assert store.disown(state.id, expected_token=owner.token) is False
    assert store.disown(state.id, expected_token=other.token) is False  # its lease runs
    assert store.disown(state.id, expected_token=other.token, process_gone=True) is True
    assert store.ownership(state.id).token is None  # type: ignore[union-attr]
    with pytest.raises(LeaseLostError):
        store.save(state, other)


def test_a_fenced_save_fails_once_another_owner_claimed_the_expired_lease(
    stores: Stores, store: Store
) -> None:
    first, second = Owner(), Owner()
    state = stored_state(status=Status.RUNNING)
    store.create(state, first, lease_seconds=0.2)
    store.save(state, first)  # still ours
    time.sleep(0.3)
    other_server = stores.open()
    ownership = other_server.ownership(state.id)
    assert ownership is not None and not ownership.is_alive(second, running_here=False)
    assert other_server.claim(state.id, second, 30, expected_token=ownership.token)
    with pytest.raises(LeaseLostError):
        store.save(state, first)
    with pytest.raises(LeaseLostError):
        store.save_branch(state.model_copy(update={"branch": "sq-1"}), first)
    with pytest.raises(LeaseLostError):
        store.journal.put(state.id, "llm:k", "late", {}, first)
    assert store.renew(first, [state.id], 30) == set()  # renewing a lost lease takes nothing
    state.report = "the new owner's"
    other_server.save(state, second)
    assert store.load(state.id).report == "the new owner's"


def test_cancel_requests_reach_the_owner(stores: Stores, store: Store) -> None:
    owner = Owner()
    mine, untouched = stored_state(1, status=Status.RUNNING), stored_state(2, status=Status.RUNNING)
    store.create(mine, owner, lease_seconds=30)
    store.create(untouched, owner, lease_seconds=30)
    assert store.cancel_requests(owner, [mine.id, untouched.id]) == set()
    stores.open().request_cancel(mine.id)  # from another process
    assert store.cancel_requests(owner, [mine.id, untouched.id]) == {mine.id}
    assert store.cancel_requests(Owner(), [mine.id]) == set()  # only the owner is asked
    assert store.cancel_requests(owner, []) == set()
    assert store.renew(owner, [mine.id, untouched.id], 30) == {mine.id}
    status = store.ownership(mine.id)
    assert status is not None and status.cancel_requested
    # A new owner, once the first let go, starts with no request pending.
    successor = Owner()
    store.release(mine.id, owner)
    assert store.claim(mine.id, successor, 30, expected_token=None)
    assert store.cancel_requests(successor, [mine.id]) == set()


def test_two_owners_racing_to_claim_exactly_one_wins(stores: Stores) -> None:
    first = stores.open()
    ghost = Owner()
    state = stored_state(status=Status.INTERRUPTED)
    first.create(state, ghost, lease_seconds=-1)
    contenders = [(stores.open(), Owner()) for _ in range(4)]
    barrier = threading.Barrier(len(contenders))
    won: list[Owner] = []
    lock = threading.Lock()

    def claim(store: Store, owner: Owner) -> None:
        barrier.wait()
        if store.claim(state.id, owner, 30, expected_token=ghost.token):
            with lock:
                won.append(owner)

    _in_threads([lambda s=s, o=o: claim(s, o) for s, o in contenders])
    assert len(won) == 1
    assert first.ownership(state.id).token == won[0].token  # type: ignore[union-attr]


# --------------------------------------------------------------------------- waiting for others


@pytest.mark.anyio
async def test_wait_for_change_is_woken_by_a_save_of_another_store(stores: Stores) -> None:
    waiting, writing = stores.open(), stores.open()
    state = stored_state(status=Status.RUNNING)
    writing.save(state)
    assert await waiting.wait_for_change(state.id, 0.2) is False  # nothing happens: timeout
    since = waiting.fingerprint(state.id)
    saved_at: list[float] = []

    async def save_soon() -> None:
        await anyio.sleep(0.3)
        state.phase = Phase.ANALYSIS
        writing.save(state)
        saved_at.append(time.monotonic())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(save_soon)
            assert await waiting.wait_for_change(state.id, 3.0, since=since) is True
            woken_at = time.monotonic()
    latency = woken_at - saved_at[0]
    # PostgreSQL is told (well under SQLite's poll); SQLite finds it at its next poll, give or
    # take a loaded machine's thread hop.
    assert latency < (0.2 if stores.backend == "postgresql" else POLL_SECONDS + 0.35), latency
    # A save made before the wait began is not missed when the caller says what it saw.
    assert await waiting.wait_for_change(state.id, 2.0, since=since) is True


@pytest.mark.anyio
async def test_wait_for_change_ends_when_the_research_is_deleted(stores: Stores) -> None:
    waiting, deleting = stores.open(), stores.open()
    state = stored_state()
    deleting.save(state)
    since = waiting.fingerprint(state.id)

    async def delete_soon() -> None:
        await anyio.sleep(0.2)
        deleting.delete(state.id)

    async with anyio.create_task_group() as group:
        group.start_soon(delete_soon)
        assert await waiting.wait_for_change(state.id, 3.0, since=since) is True
    assert waiting.fingerprint(state.id) is None


@pytest.mark.anyio
async def test_wait_for_cancel_is_woken_by_a_request_of_another_store(stores: Stores) -> None:
    owning, asking = stores.open(), stores.open()
    owner = Owner()
    state, other = stored_state(1, status=Status.RUNNING), stored_state(2, status=Status.RUNNING)
    owning.create(state, owner, lease_seconds=30)
    owning.create(other, owner, lease_seconds=30)
    assert await owning.wait_for_cancel(owner, [state.id, other.id], 0.2) == set()
    asked_at: list[float] = []

    async def ask_soon() -> None:
        await anyio.sleep(0.3)
        asking.request_cancel(state.id)
        asked_at.append(time.monotonic())

    async with anyio.create_task_group() as group:
        group.start_soon(ask_soon)
        assert await owning.wait_for_cancel(owner, [state.id, other.id], 3.0) == {state.id}
        woken_at = time.monotonic()
    assert woken_at - asked_at[0] < (0.1 if stores.backend == "postgresql" else 0.25)
    # A request made before the wait began is returned at once.
    assert await owning.wait_for_cancel(owner, [state.id], 3.0) == {state.id}


def _in_threads(targets: list[Callable[[], None]]) -> None:
    errors: list[BaseException] = []

    def run(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    if errors:
        raise errors[0]


def test_a_page_another_server_deletes_meanwhile_is_never_lost(stores: Stores) -> None:
    """One server links a page while another deletes the only other research using it."""
    saver, deleter = stores.open(), stores.open()
    shared = _page(5_000, "shared")
    kept = _with_pages(index=1)
    saver.save(kept)

    def save_again_and_again() -> None:
        for n in range(20):
            copy = shared[:-1] + shared[-1]  # an equal text in a new object: written again
            kept.sources = [Source(title=f"copy {n}", content=copy)]
            saver.save(kept)
            assert _texts(saver, kept.id) == [shared]

    def delete_again_and_again() -> None:
        for n in range(20):
            other = _with_pages(shared, index=2 + n)
            deleter.save(other)
            deleter.delete(other.id)

    _in_threads([save_again_and_again, delete_again_and_again])


# --------------------------------------------------------------------------- shared by servers


def test_a_shared_key_is_made_once_and_read_alike_by_every_server(stores: Stores) -> None:
    first, second = stores.open(), stores.open()
    made = first.shared_key("task")
    assert len(made) == 32
    assert second.shared_key("task") == made == first.shared_key("task")
    reopened = stores.open()
    assert reopened.shared_key("task") == made  # it outlives the server that made it
    assert second.shared_key("other") not in (made, b"")


def test_a_shared_key_made_by_two_servers_at_once_is_one_key(stores: Stores) -> None:
    servers = [stores.open() for _ in range(4)]
    keys: list[bytes] = []
    _in_threads([lambda store=store: keys.append(store.shared_key("raced")) for store in servers])
    assert len(keys) == 4 and len(set(keys)) == 1


def test_admissions_of_a_principal_take_turns_across_servers(stores: Stores) -> None:
    first, second = stores.open(), stores.open()
    inside: list[str] = []
    overlaps: list[str] = []
    entered = threading.Event()

    def admit(store: Store, name: str, hold: float) -> None:
        with store.admitting("alice"):
            if inside:
                overlaps.append(f"{name} entered while {inside} held the lock")
            inside.append(name)
            entered.set()
            time.sleep(hold)
            inside.remove(name)

    def later() -> None:
        entered.wait(5)
        admit(second, "second", 0.0)

    _in_threads([lambda: admit(first, "first", 0.3), later])
    assert overlaps == []
    with first.admitting("alice"):  # released after each use: taken again at once
        pass


def test_the_list_finds_research_by_the_words_of_its_question(store: Store) -> None:
    questions = [
        "How does Python's Garbage Collector pause threads?",
        "Garbage collection in Go: pause times",
        "Über die Größe von Wörterbüchern",
        "What does 100% CPU with a_b mean?",
        "How do generational collectors work?",
    ]
    states = [stored_state(i, query=q) for i, q in enumerate(questions)]
    for state in states:
        store.save(state)

    def found(*words: str) -> list[str]:
        return [item.query for item in store.list_page(10, words=words)[0]]

    # Every word must be there, in any case, anywhere in the question; newest first.
    assert found("garbage", "PAUSE") == [questions[1], questions[0]]
    assert found("collector") == [questions[4], questions[0]]
    assert found("garbage", "generational") == []
    assert found("ÜBER", "wörterbüchern") == [questions[2]]
    # LIKE's wildcards are letters like any other: % and _ match only themselves.
    assert found("100%") == [questions[3]]
    assert found("a_b") == [questions[3]]
    assert found("%") == [questions[3]] and found("_") == [questions[3]]
    # Words combine with the other filters and with paging.
    assert _walk(store, 1, words=["garbage"]) == [states[1].id, states[0].id]
    assert store.list_page(10, words=["garbage"], completed_only=True) == ([], None)
