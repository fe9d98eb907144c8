"""``foundry-mcp migrate``: a SQLite store of 1,000 research copied into PostgreSQL, counted and
sampled; a second run copies nothing; an interrupted run is continued by the next; a research
that a live process runs is refused until it ends, one whose process died arrives interrupted;
and the PostgreSQL store then serves every migrated research (status, report, events, pages,
journal, branches, archived originals)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.cli import main as cli
from foundry_mcp.context.archive import ContentArchive, new_record
from foundry_mcp.research.models import (
    Phase,
    ResearchState,
    Source,
    Status,
)
from foundry_mcp.research.store.migration import copy as migrate
from foundry_mcp.research.store.migration.copy import CHILD_COLUMNS, INTERRUPTED_BY_MIGRATION
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.pages import PAGES_LOCK
from foundry_mcp.research.store.postgres.store import PostgresStore
from foundry_mcp.research.store.sqlite.store import ResearchStore
from foundry_mcp.research.store.states import RESEARCH_TABLES
from tests.postgres import PostgresServer

RESEARCH = 1_000
PASSWORD = "pw-migrate-Sekr3t"
PAGES = 60  # page texts shared among the research (the store keeps each once)


@dataclass
class Built:
    """A SQLite store as a user's machine holds it, and what the test needs to know of it."""

    research_dir: Path
    ids: list[str]
    running: str  # held by a live process: refused
    orphan: str  # active, its process gone: arrives interrupted
    with_everything: str  # branches, journal, archived original, pages


def _text(n: int, size: int) -> str:
    words = f"Finding {n}: glaciers retreat; ice cores record carbon dioxide. "
    return (words * (size // len(words) + 1))[:size]


def _state(n: int, rng: random.Random) -> ResearchState:
    sources = [
        Source(
            title=f"Source {n}-{k}",
            url=f"https://example.org/{n}/{k}",
            snippet=f"snippet {k}",
            content=_text((n + k) % PAGES, 500 + ((n + k) % PAGES) * 40),
        )
        for k in range(rng.randint(0, 4))
    ]
    state = ResearchState(
        query=f"Question number {n} about climate records?",
        llm_provider="openai",
        llm_model="gpt-test",
        principal=rng.choice([None, "alice", "bob"]),
        status=rng.choice([Status.COMPLETED] * 6 + [Status.FAILED, Status.CANCELLED]),
        phase=Phase.SYNTHESIS,
        sources=sources,
        report=f"# Report {n}\n\n" + _text(n, rng.randint(200, 8_000)),
    )
    state.llm_usage.total.cost_usd = round(rng.random() / 10, 4)
    return state


def _build(research_dir: Path) -> Built:
    rng = random.Random(31)
    store = ResearchStore(research_dir)
    ids = []
    try:
        for n in range(RESEARCH):
            state = _state(n, rng)
            store.save(state)
            for seq in range(n % 4):
                store.append_event(state.id, "phase_completed", {"phase": "gathering", "n": seq})
            ids.append(state.id)
        owner = Owner()
        full = _state(RESEARCH, rng)
        full.status = Status.COMPLETED
        store.create(full, owner, 60)
        store.journal.put(full.id, "llm:plan:abc", "the plan", {"tokens": 12}, owner)
        store.journal.put(full.id, "llm:report:def", "the report", {"tokens": 99}, owner)
        branch = _state(RESEARCH + 1, rng).model_copy(update={"id": full.id, "branch": "sq-1"})
        store.save_branch(branch, owner)
        original = new_record(
            content=_text(7, 3_000),
            item_id="src-1",
            item_type="source",
            reason="dropped",
            original_tokens=700,
            metadata={"url": "https://example.org/original"},
        )
        store.archive_content(full.id, original, owner)
        store.release(full.id, owner)
        ids.append(full.id)
        running = _state(RESEARCH + 2, rng)
        running.status = Status.RUNNING
        store.create(running, owner, 600)  # this process: alive
        dead = Owner(pid=_dead_pid(), started=1.0)
        orphan = _state(RESEARCH + 3, rng)
        orphan.status = Status.RUNNING
        store.create(orphan, dead, -1)  # its lease ran out and its process is gone
        ids += [running.id, orphan.id]
    finally:
        store.close()
    return Built(research_dir, ids, running.id, orphan.id, full.id)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _build(tmp_path_factory.mktemp("sqlite") / "research")


@pytest.fixture
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user with an empty configuration; the target's local research_dir."""
    home = tmp_path / "home"
    home.mkdir()
    local = tmp_path / "local"
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "foundry-mcp-user.toml").write_text("")
    monkeypatch.setenv("FOUNDRY_MCP_CONFIG", str(tmp_path / "foundry-mcp-user.toml"))
    monkeypatch.setenv("FOUNDRY_MCP_RESEARCH_DIR", str(local))
    monkeypatch.delenv("FOUNDRY_MCP_STORE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    return local


def _migrate(
    capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, Any] | str, str]:
    code = cli.main(["migrate", *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if "--json" in args and out.strip() else out), err


@pytest.fixture
def url(postgres_server: PostgresServer, postgres_url: str) -> Iterator[str]:
    schema = postgres_url.rpartition("search_path%3D")[2]
    yield postgres_server.url(schema=schema, password=PASSWORD)  # trusted: the password is unused


def test_the_columns_copied_are_the_stores_tables() -> None:
    assert set(CHILD_COLUMNS) == set(RESEARCH_TABLES)
    assert migrate.PAGES_LOCK == PAGES_LOCK


def test_a_store_of_1000_research_moves_resumably_and_verified(
    built: Built,
    url: str,
    environment: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = ["--from", str(built.research_dir), "--to", url, "--json"]
    # Interrupted after 300 research (Ctrl-C): what was copied is whole, the rest is not there.
    copy = migrate.copy_research
    calls = {"n": 0}

    def interrupted(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > 300:
            raise KeyboardInterrupt
        return copy(*args)

    monkeypatch.setattr(migrate, "copy_research", interrupted)
    code, _, err = _migrate(capsys, *source)
    assert code == 130 and "run foundry-mcp migrate again" in err.lower(), err
    monkeypatch.setattr(migrate, "copy_research", copy)

    began = time.monotonic()
    code, done, err = _migrate(capsys, *source)
    took = time.monotonic() - began
    assert isinstance(done, dict), err
    research = done["research"]
    assert research["in_source"] == len(built.ids)
    assert research["skipped"] == 300
    assert research["copied"] == len(built.ids) - 300 - 1
    assert list(research["refused"]) == [built.running]
    assert research["arrived_interrupted"] == [built.orphan]
    assert research["failed"] == {} and research["differ"] == []
    check = done["verification"]
    assert check["ok"], check["problems"]
    assert check["sampled_reports"] == 20
    for table, counts in check["tables"].items():
        assert counts["source"] == counts["target"], table
    assert check["tables"]["events"]["source"] == sum(n % 4 for n in range(RESEARCH))
    assert check["tables"]["llm_journal"]["source"] == 2
    assert check["tables"]["archived"]["source"] == 1
    assert done["rows"]["spend"] > 0
    assert code == 1  # one research refused: not everything moved
    assert took < 20, f"{RESEARCH - 300} research took {took:.1f} s"
    assert PASSWORD not in json.dumps(done) + err
    assert done["to"].startswith("postgresql://foundry:***@")

    # The running research ends; the next run copies it alone, and then nothing is left to do.
    store = ResearchStore(built.research_dir)
    try:
        state = store.load(built.running)
        state.status = Status.COMPLETED
        store.save(state)
        holder = store.ownership(built.running)
        assert holder is not None and holder.token is not None
        store.release(built.running, Owner(token=holder.token))  # the run that held it ended
    finally:
        store.close()
    code, done, _ = _migrate(capsys, *source)
    assert code == 0 and isinstance(done, dict)
    assert done["research"]["copied"] == 1
    assert done["verification"]["ok"] and done["success"]
    code, text, _ = _migrate(capsys, "--from", str(built.research_dir), "--to", url)
    assert code == 0 and isinstance(text, str)
    assert "0 copied, 1,003 already there (skipped)" in text
    assert "verification: OK" in text and PASSWORD not in text

    # The PostgreSQL store serves what was migrated.
    target = PostgresStore(url, tmp_path / "served")
    try:
        assert len(_all_ids(target)) == len(built.ids)
        orphan = target.load(built.orphan)
        assert orphan.status is Status.INTERRUPTED and orphan.error == INTERRUPTED_BY_MIGRATION
        assert target.ownership(built.orphan).token is None  # type: ignore[union-attr]
        lite = ResearchStore(built.research_dir)
        try:
            for research_id in random.Random(5).sample(built.ids[:RESEARCH], 25):
                _same(lite, target, research_id)
            _same(lite, target, built.with_everything)
            assert target.journal.get(built.with_everything, "llm:report:def") is not None
            assert set(target.load_branches(built.with_everything)) == {"sq-1"}
            record = lite.archived_content(built.with_everything, _archived_hash(lite, built))
            assert record is not None
            again = target.archived_content(built.with_everything, record.content_hash)
            assert again is not None and again.content == record.content
        finally:
            lite.close()
    finally:
        target.close()


def _all_ids(store: PostgresStore) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page, cursor = store.list_page(200, cursor)
        ids += [item.research_id for item in page]
        if cursor is None:
            return ids


def _same(lite: ResearchStore, target: PostgresStore, research_id: str) -> None:
    mine, theirs = lite.load(research_id), target.load(research_id)
    assert (theirs.status, theirs.report, theirs.principal, theirs.created_at) == (
        mine.status,
        mine.report,
        mine.principal,
        mine.created_at,
    )
    lite.load_pages(mine)
    target.load_pages(theirs)
    assert [s.content for s in theirs.sources] == [s.content for s in mine.sources]
    mine_events = lite.events(research_id, 0, 100)
    their_events = target.events(research_id, 0, 100)
    assert [(e.seq, e.kind, e.data) for e in their_events] == [
        (e.seq, e.kind, e.data) for e in mine_events
    ]


def _archived_hash(lite: ResearchStore, built: Built) -> str:
    rows = lite._db.execute(
        "SELECT hash FROM archived WHERE research_id = ?", (built.with_everything,)
    ).fetchall()
    return str(rows[0][0])


def test_without_a_target_or_a_source_it_says_what_to_name(
    environment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _migrate(capsys)
    assert code == 2
    assert "no SQLite research store to migrate" in err and "--from" in err
    ResearchStore(environment).close()
    code, _, err = _migrate(capsys)
    assert code == 2
    assert "no PostgreSQL store to migrate to" in err and "--to" in err
    code, _, err = _migrate(capsys, "--to", "mysql://u:secret@h/db")
    assert code == 2 and "PostgreSQL URL" in err and "secret" not in err
    other = tmp_path / "other.db"
    other.write_bytes(b"")
    code, _, err = _migrate(capsys, "--from", str(other), "--to", "postgresql://h/db")
    assert code == 2 and "not a foundry-mcp research store" in err


def test_archive_records_beside_another_research_dir_are_copied(
    url: str, environment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "old-machine"
    store = ResearchStore(elsewhere)
    state = _state(1, random.Random(1))
    store.save(state)
    store.close()
    archive = ContentArchive(elsewhere / "archive", 24.0)
    written = archive.write(
        content="the original",
        item_id="src-1",
        item_type="source",
        reason="dropped",
        original_tokens=3,
    )
    code, done, _ = _migrate(capsys, "--from", str(elsewhere), "--to", url, "--json")
    assert code == 0 and isinstance(done, dict), done
    assert done["archive"]["copied"] == 1 and done["archive"]["missing"] == 0
    copied = ContentArchive(environment / "archive", 24.0).read(written)
    assert copied.content == "the original"
    assert (
        os.stat(environment / "archive" / f"{written.removeprefix('sha256:')}.json").st_mode & 0o077
        == 0
    )


def test_a_research_that_went_on_in_postgresql_is_left_as_it_is(
    url: str, environment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "small"
    store = ResearchStore(source)
    states = [_state(n, random.Random(n)) for n in range(3)]
    for state in states:
        store.save(state)
    store.close()
    args = ("--from", str(source), "--to", url, "--json")
    code, done, _ = _migrate(capsys, *args)
    assert code == 0 and isinstance(done, dict) and done["research"]["copied"] == 3
    target = PostgresStore(url, tmp_path / "served")
    try:
        went_on = target.load(states[1].id)
        went_on.report = "A newer report, written after the migration."
        target.save(went_on)
    finally:
        target.close()
    code, done, _ = _migrate(capsys, *args)
    assert code == 1 and isinstance(done, dict)
    assert done["research"]["differ"] == [states[1].id]
    assert done["research"]["skipped"] == 2 and done["verification"]["ok"]
    target = PostgresStore(url, tmp_path / "served")
    try:
        assert target.load(states[1].id).report == "A newer report, written after the migration."
    finally:
        target.close()


def test_a_lost_connection_stops_the_run_and_the_next_continues(
    url: str,
    postgres_server: PostgresServer,
    environment: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import psycopg

    source = tmp_path / "small"
    store = ResearchStore(source)
    for n in range(12):
        store.save(_state(n, random.Random(n)))
    store.close()
    copy = migrate.copy_research
    calls = {"n": 0}

    def cut(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 6:  # the database drops the migration's connection
            with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = 'foundry-mcp migrate'"
                )
        return copy(*args)

    monkeypatch.setattr(migrate, "copy_research", cut)
    args = ("--from", str(source), "--to", url, "--json")
    code, done, err = _migrate(capsys, *args)
    assert code == 2 and "connection to postgresql://foundry:***@" in err
    assert "after 5 research were copied" in err and PASSWORD not in err
    monkeypatch.setattr(migrate, "copy_research", copy)
    code, done, _ = _migrate(capsys, *args)
    assert code == 0 and isinstance(done, dict)
    assert (done["research"]["skipped"], done["research"]["copied"]) == (5, 7)
