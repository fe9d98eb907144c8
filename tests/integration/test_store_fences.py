"""Fenced writes, cascades, the spend ledger and the shared archive, on SQLite and PostgreSQL.

Every write lands only while its writer may still write: a run's (``owner``), and a write made
for a research no run of this process holds (a restore, a dead owner's research recorded
``interrupted``: ``save_unowned``). Deleting a research deletes everything of it but its spend,
which the ledger keeps; the ledger is read in one statement and never guesses when the store is
down. Archived originals live in the store, so any server restores them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from foundry_mcp.context.archive import ArchiveError, ContentArchive, new_record
from foundry_mcp.errors import ResearchNotFoundError, StoreUnavailableError
from foundry_mcp.research.models import ResearchState, Source, Status, utcnow
from foundry_mcp.research.service.ownership import FencedEdit
from foundry_mcp.research.store.archive import StoreArchive
from foundry_mcp.research.store.opening import open_store
from foundry_mcp.research.store.owners import LeaseLostError, Owner
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.workflow.fitting.fitter import Fitting
from tests.stores import Stores, stores_on
from tests.support import stored_state

ALICE = "alice"


@pytest.fixture(params=["sqlite", "postgresql"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    yield from stores_on(request, tmp_path)


@pytest.fixture
def store(stores: Stores) -> Store:
    return stores.open()


def _taken_over(stores: Stores, store: Store, state: ResearchState) -> Owner:
    """``state`` created by a first owner whose lease ran out, then claimed by another server."""
    first, second = Owner(), Owner()
    store.create(state, first, lease_seconds=0.2)
    time.sleep(0.3)
    assert stores.open().claim(state.id, second, 30, expected_token=first.token)
    return first


# ---------------------------------------------------------------------- fences


def test_a_restore_save_is_refused_once_another_server_claimed_the_research(
    stores: Stores, store: Store
) -> None:
    state = stored_state(1, status=Status.INTERRUPTED)
    store.save(state)  # stopped, nobody holds it
    read = store.load_status(state.id)
    assert read.ownership.token is None
    state.report = "restored"
    store.save_unowned(state, read.ownership.token)  # nobody took it: the save lands
    assert store.load(state.id).report == "restored"
    assert store.ownership(state.id).token is None  # type: ignore[union-attr]

    other, resumer = stores.open(), Owner()
    assert other.claim(state.id, resumer, 30, expected_token=None)  # a resume elsewhere
    other.save(state.model_copy(update={"report": "the resumer's"}), resumer)
    state.report = "a late restore"
    with pytest.raises(LeaseLostError):
        store.save_unowned(state, read.ownership.token)
    assert store.load(state.id).report == "the resumer's"


def test_a_save_unowned_is_refused_while_a_live_lease_holds_the_expected_token(
    store: Store,
) -> None:
    owner = Owner()
    state = stored_state(2, status=Status.COMPLETED)
    store.create(state, owner, lease_seconds=0.3)  # its run ended without releasing the lease
    with pytest.raises(LeaseLostError):
        store.save_unowned(state, owner.token)
    time.sleep(0.4)
    store.save_unowned(state, owner.token)  # the lease ran out: nobody runs it


def test_the_save_after_disowning_is_refused_once_another_server_claimed_it(
    stores: Stores, store: Store
) -> None:
    dead, taker = Owner(), Owner()
    state = stored_state(3, status=Status.RUNNING)
    store.create(state, dead, lease_seconds=0.2)
    time.sleep(0.3)
    assert store.disown(state.id, dead.token)
    interrupted = store.load(state.id)
    interrupted.status = Status.INTERRUPTED
    store.save_unowned(interrupted, None)  # nobody claimed it between: recorded interrupted
    assert store.load(state.id).status is Status.INTERRUPTED

    other = stores.open()
    assert other.claim(state.id, taker, 30, expected_token=None)
    other.save(state.model_copy(update={"status": Status.RUNNING}), taker)
    with pytest.raises(LeaseLostError):  # a second sweep, which read it before the claim
        store.save_unowned(interrupted, None)
    assert store.load(state.id).status is Status.RUNNING
    assert store.ownership(state.id).token == taker.token  # type: ignore[union-attr]


def test_a_save_unowned_never_brings_a_deleted_research_back(store: Store) -> None:
    state = stored_state(4, status=Status.FAILED)
    store.save(state)
    assert store.delete(state.id)
    with pytest.raises(LeaseLostError):
        store.save_unowned(state, None)
    with pytest.raises(ResearchNotFoundError):
        store.load(state.id)


def test_an_event_appended_after_losing_the_lease_is_refused(stores: Stores, store: Store) -> None:
    state = stored_state(5, status=Status.RUNNING)
    first, second = Owner(), Owner()
    store.create(state, first, lease_seconds=0.2)
    assert store.append_event(state.id, "run_started", {}, first) == 1
    time.sleep(0.3)
    other = stores.open()
    assert other.claim(state.id, second, 30, expected_token=first.token)
    with pytest.raises(LeaseLostError):
        store.append_event(state.id, "llm_call", {"late": True}, first)
    assert other.append_event(state.id, "run_started", {}, second) == 2
    assert [event.kind for event in store.events(state.id, 0, 10)] == ["run_started"] * 2
    assert store.delete(state.id)
    with pytest.raises(LeaseLostError):
        other.append_event(state.id, "run_ended", {}, second)
    assert store.events(state.id, 0, 10) == []


def test_a_fenced_edit_lands_unless_another_server_took_the_research_up_since_its_read(
    stores: Stores, store: Store
) -> None:
    first, resumer = Owner(), Owner()
    state = stored_state(17, status=Status.RUNNING)
    store.create(state, first, lease_seconds=0.2)  # its run ended without releasing the lease
    time.sleep(0.3)
    edit = FencedEdit.read(store, state.id)
    assert edit.token == first.token  # fenced on the token it was read with, not on nobody's
    edit.state.report = "kept"
    assert edit.save()
    assert store.load(state.id).report == "kept"

    late = FencedEdit.read(store, state.id)
    other = stores.open()
    assert other.claim(state.id, resumer, 30, expected_token=first.token)  # a resume elsewhere
    other.save(late.state.model_copy(update={"report": "the resumer's"}), resumer)
    late.state.report = "a late edit"
    assert not late.save()
    assert store.load(state.id).report == "the resumer's"


# ---------------------------------------------------------------------- cascades


def test_delete_takes_events_journal_branches_archive_and_pages_but_not_spend(
    stores: Stores, store: Store
) -> None:
    owner = Owner()
    state = stored_state(6, principal=ALICE, status=Status.RUNNING)
    state.sources.append(Source(id="src-1", url="https://a.example/1", title="A", content="a" * 50))
    state.llm_usage.total.cost_usd = 0.75
    store.create(state, owner, lease_seconds=30)
    store.append_event(state.id, "run_started", {}, owner)
    store.journal.put(state.id, "llm:k", "answer", {"tokens": 1}, owner)
    store.save_branch(state.model_copy(update={"branch": "sq-1"}), owner)
    digest = StoreArchive(store, state.id, Path("/nonexistent"), 24, owner).write(
        content="the original " * 20,
        item_id="src-1",
        item_type="source",
        reason="dropped",
        original_tokens=40,
    )
    for table in ("events", "llm_journal", "branches", "archived", "research_pages", "spend"):
        assert stores.count(table, state.id) >= 1, table
    assert store.delete(state.id)
    for table in ("events", "llm_journal", "branches", "archived", "research_pages"):
        assert stores.count(table, state.id) == 0, table
    assert stores.sql("SELECT count(*) FROM pages")[0][0] == 0
    assert store.archived_content(state.id, digest) is None
    assert stores.count("spend", state.id) == 1
    assert store.spent_since(ALICE, utcnow() - timedelta(hours=24)) == pytest.approx(0.75)


def test_retention_purges_the_rows_of_research_that_no_longer_exist(
    stores: Stores, store: Store
) -> None:
    kept = stored_state(7)
    store.save(kept)
    store.append_event(kept.id, "created", {})
    ghost = "deepres-" + "0" * 12
    store.append_event(ghost, "late", {})  # unfenced, after its research was deleted
    assert stores.count("events", ghost) == 1
    assert store.delete_older_than(365) == 0
    assert stores.count("events", ghost) == 0
    assert stores.count("events", kept.id) == 1


# ---------------------------------------------------------------------- spend


def _costing(store: Store, state: ResearchState, owner: Owner, *totals: float) -> None:
    for total in totals:
        state.llm_usage.total.cost_usd = total
        store.save(state, owner)


def test_spend_is_booked_as_it_grows_and_survives_deletion(stores: Stores, store: Store) -> None:
    since = utcnow() - timedelta(hours=24)
    first, second = stored_state(8, principal=ALICE), stored_state(9, principal=ALICE)
    bob = stored_state(10, principal="bob")
    owner = Owner()
    bob.llm_usage.total.cost_usd = 1.0  # created having cost already (a copy, a retry)
    for state in (first, second, bob):
        store.create(state, owner, lease_seconds=30)
    assert store.spent_since("bob", since) == pytest.approx(1.0)
    _costing(store, first, owner, 0.5, 1.25, 1.25, 1.0)  # a smaller total books nothing back
    _costing(store, second, owner, 0.25)
    _costing(store, bob, owner, 9.0)
    store.save_branch(second.model_copy(update={"branch": "sq-1"}), owner)  # books nothing
    assert store.spent_since(ALICE, since) == pytest.approx(1.5)
    assert store.delete(first.id) and store.delete(second.id)
    assert store.delete_older_than(0) >= 0
    assert stores.open().spent_since(ALICE, since) == pytest.approx(1.5)
    assert store.spent_since("bob", since) == pytest.approx(9.0)
    assert store.spent_since("carol", since) == 0.0
    assert store.spent_since(ALICE, utcnow() + timedelta(hours=2)) == 0.0


def test_spent_since_fails_closed_when_the_store_is_closed(stores: Stores) -> None:
    store = open_store(stores.settings)
    store.close()
    with pytest.raises(StoreUnavailableError):
        store.spent_since(ALICE, utcnow() - timedelta(hours=24))


def test_spent_since_fails_closed_when_the_database_fails(stores: Stores, store: Store) -> None:
    stores.sql("DROP TABLE spend")
    with pytest.raises(StoreUnavailableError):
        store.spent_since(ALICE, utcnow() - timedelta(hours=24))


def test_the_spend_of_research_stored_before_the_ledger_is_booked_on_upgrade(
    stores: Stores, store: Store
) -> None:
    state = stored_state(11, principal=ALICE)
    state.created_at = utcnow()
    state.llm_usage.total.cost_usd = 2.5
    store.save(state)
    stores.sql("DELETE FROM spend")
    if stores.backend == "sqlite":
        stores.sql("PRAGMA user_version = 6")
    else:
        stores.sql("DROP TABLE spend, archived")
        stores.sql("DELETE FROM foundry_schema WHERE version = 4")
    upgraded = stores.open()
    assert upgraded.spent_since(ALICE, utcnow() - timedelta(hours=1)) == pytest.approx(2.5)
    upgraded.save(state)  # the ledger already holds it: nothing booked twice
    assert upgraded.spent_since(ALICE, utcnow() - timedelta(hours=1)) == pytest.approx(2.5)


# ---------------------------------------------------------------------- archive


def test_an_original_archived_by_one_server_is_restored_by_another(
    stores: Stores, store: Store, tmp_path: Path
) -> None:
    owner = Owner()
    state = stored_state(12, status=Status.RUNNING)
    store.create(state, owner, lease_seconds=30)
    text = "Ünïcode original\x00 with a NUL " * 30
    writer = StoreArchive(store, state.id, tmp_path / "a", 24, owner)
    digest = writer.write(
        content=text,
        item_id="src-1",
        item_type="source",
        reason="dropped",
        original_tokens=99,
        metadata={"url": "https://a.example", "title": None},
    )
    assert (
        writer.write(
            content=text, item_id="src-1", item_type="source", reason="dropped", original_tokens=99
        )
        == digest
    )
    reader = StoreArchive(stores.open(), state.id, tmp_path / "b", 24)
    record = reader.read(digest)
    assert (record.content, record.item_id, record.original_tokens) == (text, "src-1", 99)
    assert record.metadata == {"url": "https://a.example"}
    assert record.archive_reason == "dropped" and record.archived_at.endswith("Z")
    with pytest.raises(ArchiveError):
        reader.read("sha256:" + "0" * 64)
    with pytest.raises(ArchiveError):
        reader.read("not a hash")
    assert not (tmp_path / "a").exists()  # nothing on this server's disk


def test_an_archive_write_after_losing_the_lease_is_refused(stores: Stores, store: Store) -> None:
    state = stored_state(13, status=Status.RUNNING)
    first = _taken_over(stores, store, state)
    archive = StoreArchive(store, state.id, Path("/nonexistent"), 24, first)
    with pytest.raises(LeaseLostError):
        archive.write(
            content="late",
            item_id="src-1",
            item_type="source",
            reason="dropped",
            original_tokens=1,
        )
    assert stores.count("archived", state.id) == 0
    with pytest.raises(ResearchNotFoundError):
        store.archive_content(
            "deepres-" + "1" * 12,
            new_record(
                content="x", item_id="i", item_type="source", reason="dropped", original_tokens=1
            ),
        )


def test_an_original_archived_on_disk_before_is_read_and_moved_into_the_store(
    store: Store, tmp_path: Path
) -> None:
    state = stored_state(14, status=Status.INTERRUPTED)
    store.save(state)
    folder = tmp_path / "archive"
    digest = ContentArchive(folder, 24).write(
        content="on disk",
        item_id="src-2",
        item_type="source",
        reason="compressed",
        original_tokens=3,
    )
    record = StoreArchive(store, state.id, folder, 24).read(digest)
    assert record.content == "on disk"
    moved = store.archived_content(state.id, digest)
    assert moved is not None and moved.content == "on disk" and moved.item_id == "src-2"


def test_expired_archive_records_are_purged(stores: Stores, store: Store) -> None:
    owner = Owner()
    state = stored_state(15, status=Status.RUNNING)
    store.create(state, owner, lease_seconds=30)
    archive = StoreArchive(store, state.id, Path("/nonexistent"), 24, owner)
    digest = archive.write(
        content="old", item_id="src-1", item_type="source", reason="dropped", original_tokens=1
    )
    assert store.purge_archived(1) == 0
    stores.sql(
        "UPDATE archived SET archived_at = ?",
        "2000-01-01T00:00:00Z",
    )
    assert archive.purge_expired() == 1
    assert store.archived_content(state.id, digest) is None


def test_a_store_archive_beside_a_disk_archive_keeps_its_folder_and_ttl(
    store: Store, tmp_path: Path
) -> None:
    disk = ContentArchive(tmp_path / "archive", 12)
    shared = StoreArchive.beside(disk, store, "deepres-" + "2" * 12)
    assert (shared.directory, shared.ttl_hours, shared.owner) == (disk.directory, 12, None)


def test_a_run_s_fitting_archives_where_its_llms_say(store: Store, tmp_path: Path) -> None:
    state = stored_state(16)
    state.options.token_budget.archive_enabled = True
    state.options.token_budget.archive_dir = str(tmp_path / "archive")
    shared = StoreArchive(store, state.id, tmp_path / "archive", 24)
    given = Fitting(SimpleNamespace(archive=shared), state, None, None)  # type: ignore[arg-type]
    assert given.archive() is shared
    own = Fitting(SimpleNamespace(), state, None, None).archive()  # type: ignore[arg-type]
    assert type(own) is ContentArchive and own.directory == tmp_path / "archive"
    state.options.token_budget.archive_enabled = False
    assert given.archive() is None
