"""The SQLite research store: research ids, and what is particular to its file.

What every store does (round trips, listing and paging, deletion, leases, events, the journal,
waits) is tested against SQLite and PostgreSQL alike in
``tests/integration/test_store_contract.py``.
"""

from __future__ import annotations

import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import pytest

from foundry_mcp.errors import InvalidResearchIdError
from foundry_mcp.research.store.records import validate_research_id
from foundry_mcp.research.store.sqlite.store import (
    DB_NAME,
    DB_VERSION,
    ResearchStore,
)
from tests.support import stored_state

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
        state = stored_state()
        assert validate_research_id(state.id) == state.id


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


def test_the_database_is_in_wal_mode(tmp_path: Path) -> None:
    """Readers in other processes see committed states without blocking the writer."""
    opened = ResearchStore(tmp_path / "research")
    try:
        other = sqlite3.connect(tmp_path / "research" / DB_NAME)
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        other.close()
    finally:
        opened.close()


def test_a_version_five_file_gets_the_page_tables(tmp_path: Path) -> None:
    """A database written before pages had their own table is migrated when opened."""
    directory = tmp_path / "research"
    state = stored_state()
    first = ResearchStore(directory)
    first.save(state)
    first.close()
    with closing(sqlite3.connect(directory / DB_NAME)) as db, db:
        db.executescript("DROP TABLE pages; DROP TABLE research_pages; PRAGMA user_version = 5;")
    reopened = ResearchStore(directory)
    try:
        assert reopened.load(state.id).id == state.id
        with closing(sqlite3.connect(directory / DB_NAME)) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == DB_VERSION == 7
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        assert {"pages", "research_pages", "research_pages_by_hash"} <= tables
    finally:
        reopened.close()
