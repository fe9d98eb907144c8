"""The SQLite research store: ids, round trips, listing and paging, deletion, permissions."""

from __future__ import annotations

import base64
import random
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
from foundry_mcp.research.store import DB_NAME, ResearchStore, validate_research_id

BASE = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResearchStore]:
    opened = ResearchStore(tmp_path / "research")
    yield opened
    opened.close()


def _state(index: int = 0, **fields) -> ResearchState:
    base = {
        "query": f"question {index}",
        "llm_provider": "openai",
        "llm_model": "gpt-test",
        "created_at": BASE + timedelta(minutes=index),
    }
    return ResearchState(**{**base, **fields})


def _walk(store: ResearchStore, limit: int, completed_only: bool = False) -> list[str]:
    seen, cursor = [], None
    for _ in range(100):
        items, cursor = store.list_page(limit, cursor=cursor, completed_only=completed_only)
        assert len(items) <= limit
        seen += [item.research_id for item in items]
        if cursor is None:
            return seen
    raise AssertionError("paging never ended")


# --------------------------------------------------------------------------- ids


@pytest.mark.parametrize(
    "research_id",
    [
        "../x",
        "deepres-XYZ",
        "",
        "   ",
        None,
        42,
        "deepres-" + "a" * 13,
        "deepres-" + "a" * 11,
        "deepres-ABCDEF012345",
        "deepres-abcdef01234g",
        "deepres-abcdef012345\n",
        "../deepres-abcdef012345",
        "x" * 1000,
    ],
)
def test_invalid_research_ids_are_rejected(research_id: object) -> None:
    with pytest.raises(InvalidResearchIdError):
        validate_research_id(research_id)


def test_generated_ids_are_valid() -> None:
    for _ in range(20):
        state = _state()
        assert validate_research_id(state.id) == state.id


def test_load_and_delete_validate_the_id(store: ResearchStore) -> None:
    with pytest.raises(InvalidResearchIdError):
        store.load("../etc/passwd")
    with pytest.raises(InvalidResearchIdError):
        store.delete("deepres-XYZ")


# --------------------------------------------------------------------------- save / load


def test_round_trip_keeps_every_field(store: ResearchStore) -> None:
    state = _state(
        status=Status.RUNNING,
        phase=Phase.ANALYSIS,
        iteration=2,
        research_brief="brief",
        sub_queries=[SubQuery(query="a sub-query of length")],
        sources=[Source(title="T", url="https://t.example", content="text")],
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
    assert loaded.model_dump() == state.model_dump()
    total = loaded.llm_usage.total
    assert total.input_tokens + total.output_tokens == 15


def test_save_twice_keeps_the_latest_state(store: ResearchStore) -> None:
    state = _state()
    store.save(state)
    state.status = Status.COMPLETED
    state.report = "## Final"
    store.save(state)
    loaded = store.load(state.id)
    assert loaded.status is Status.COMPLETED
    assert loaded.report == "## Final"
    assert store.fingerprint(state.id) == (
        "completed",
        state.phase.value,
        state.iteration,
        state.updated_at.isoformat(),
    )
    assert len(store.list_page(10)[0]) == 1


def test_save_refreshes_updated_at(store: ResearchStore) -> None:
    state = _state(updated_at=BASE)
    store.save(state)
    assert state.updated_at > BASE
    assert store.load(state.id).updated_at == state.updated_at


def test_load_of_unknown_id_is_not_found(store: ResearchStore) -> None:
    store.save(_state())
    with pytest.raises(ResearchNotFoundError):
        store.load("deepres-000000000000")
    assert store.fingerprint("deepres-000000000000") is None


def test_delete(store: ResearchStore) -> None:
    keep, gone = _state(1), _state(2)
    store.save(keep)
    store.save(gone)
    assert store.delete(gone.id) is True
    assert store.delete(gone.id) is False
    with pytest.raises(ResearchNotFoundError):
        store.load(gone.id)
    assert store.load(keep.id).id == keep.id
    assert [item.research_id for item in store.list_page(10)[0]] == [keep.id]


# --------------------------------------------------------------------------- listing


@pytest.fixture
def many(store: ResearchStore) -> list[ResearchState]:
    """25 researches with distinct created_at, saved in random order; every third completed."""
    states = [
        _state(i, status=Status.COMPLETED if i % 3 == 0 else Status.FAILED) for i in range(25)
    ]
    for state in random.Random(7).sample(states, len(states)):
        store.save(state)
    return states


def test_list_is_newest_first(store: ResearchStore, many: list[ResearchState]) -> None:
    items, cursor = store.list_page(100)
    newest_first = sorted(many, key=lambda s: s.created_at, reverse=True)
    assert [item.research_id for item in items] == [s.id for s in newest_first]
    assert cursor is None
    assert items[0].query == newest_first[0].query
    assert items[0].status is newest_first[0].status


@pytest.mark.parametrize("limit", [1, 4, 5, 24, 25])
def test_paging_visits_every_research_once_in_order(
    store: ResearchStore, many: list[ResearchState], limit: int
) -> None:
    expected = [s.id for s in sorted(many, key=lambda s: s.created_at, reverse=True)]
    assert _walk(store, limit) == expected


def test_paging_with_identical_created_at_breaks_ties_by_id(store: ResearchStore) -> None:
    states = [_state(0) for _ in range(9)]  # all share one created_at
    for state in states:
        store.save(state)
    expected = sorted((s.id for s in states), reverse=True)
    assert _walk(store, 2) == expected


def test_completed_only(store: ResearchStore, many: list[ResearchState]) -> None:
    completed = [s for s in many if s.status is Status.COMPLETED]
    expected = [s.id for s in sorted(completed, key=lambda s: s.created_at, reverse=True)]
    items, _ = store.list_page(100, completed_only=True)
    assert [item.research_id for item in items] == expected
    assert all(item.status is Status.COMPLETED for item in items)
    assert _walk(store, 3, completed_only=True) == expected


def test_empty_store_lists_nothing(store: ResearchStore) -> None:
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
def test_bad_cursor_is_an_input_error(
    store: ResearchStore, many: list[ResearchState], cursor: str
) -> None:
    with pytest.raises(InputError):
        store.list_page(5, cursor=cursor)


# --------------------------------------------------------------------------- files and processes


def test_database_file_is_private(tmp_path: Path) -> None:
    directory = tmp_path / "fresh"
    opened = ResearchStore(directory)
    try:
        mode = stat.S_IMODE((directory / DB_NAME).stat().st_mode)
        assert mode == 0o600
        assert stat.S_IMODE(directory.stat().st_mode) & 0o077 == 0
    finally:
        opened.close()


def test_a_second_store_on_the_same_dir_sees_saved_states(
    tmp_path: Path, store: ResearchStore
) -> None:
    other = ResearchStore(store.research_dir)
    try:
        state = _state(3)
        store.save(state)
        assert other.load(state.id).query == state.query
        state.status = Status.CANCELLED
        store.save(state)
        assert other.load(state.id).status is Status.CANCELLED
        written_by_other = _state(4)
        other.save(written_by_other)
        assert [i.research_id for i in store.list_page(10)[0]] == [written_by_other.id, state.id]
        assert other.delete(state.id)
        with pytest.raises(ResearchNotFoundError):
            store.load(state.id)
    finally:
        other.close()
