"""Copying a SQLite research store into a PostgreSQL one: ``foundry-mcp migrate``.

Each research is copied with all the store keeps of it: its row (the state JSON as stored, id,
``created_at``, principal, status), branch states, events (same numbers), LLM journal, archived
originals, page texts and spend; not its lease. Each research is one PostgreSQL transaction: an
interrupted run leaves it whole or absent, and the next run copies what is absent and skips what
is there and identical. One there but different (it went on after an earlier run) is left as it
is, and reported. An active research is refused while a live process holds it; one whose
process is gone arrives ``interrupted`` (``INTERRUPTED_BY_MIGRATION``, which no server takes
over by itself). Both stores are opened once through ``opening.open_store`` first (each schema
brought up to date), then read and written with the small SQL below. The check is
:mod:`.check`; docs/team-server.md tells the user.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.models import Status
from foundry_mcp.research.store.opening import open_store
from foundry_mcp.research.store.owners import Owner, Ownership, split_host
from foundry_mcp.research.store.url import redact_url, scrub

# The columns copied, table by table, in one order for reading and writing (both stores name
# them alike). A research's own row; the rows of the tables that hold its other rows
# (``states.RESEARCH_TABLES``: a test checks they are the same); and the page texts.
RESEARCH_COLUMNS = (
    "id",
    "status",
    "phase",
    "iteration",
    "query",
    "principal",
    "created_at",
    "updated_at",
    "state",
)
CHILD_COLUMNS: dict[str, tuple[str, ...]] = {
    "events": ("research_id", "seq", "at", "kind", "data"),
    "branches": ("research_id", "branch_id", "updated_at", "state"),
    "llm_journal": ("research_id", "key", "at", "answer", "record"),
    "archived": (
        "research_id",
        "hash",
        "item_id",
        "item_type",
        "reason",
        "original_tokens",
        "metadata",
        "archived_at",
    ),
    "research_pages": ("research_id", "hash"),
}
PAGE_COLUMNS = ("hash", "content", "chars", "created_at")
# The spend ledger outlives its research: each research's rows are copied with it, and the rows
# of research deleted before the migration at its end (a principal's spend of the last day).
SPEND_COLUMNS = ("research_id", "principal", "hour", "cost_usd")
_ADD_SPEND = (
    f"INSERT INTO spend ({', '.join(SPEND_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(SPEND_COLUMNS))}) ON CONFLICT DO NOTHING"
)
# Who holds a research in SQLite, in the order of ``Ownership``'s fields.
OWNERSHIP_COLUMNS = tuple(
    ["owner_token", "owner_pid", "owner_host", "lease_until", "cancel_requested", "owner_started"]
)
# The PostgreSQL store's advisory lock of page writes (postgres/pages.py ``PAGES_LOCK``; a test
# checks they agree): held shared while a research's pages are linked, so that a deletion on a
# server of the target cannot remove a page this copy is linking.
PAGES_LOCK = 0x666F756E64727970

INTERRUPTED_BY_MIGRATION = (
    "The process that ran this research stopped before the store was migrated; resume it to "
    "continue."
)

Row = tuple[Any, ...]
Progress = Callable[[int, int], None]  # (research done, research in the source)


@dataclass
class Migration:
    """What a run did: research by outcome, rows and bytes written, and how long it took."""

    source: str
    target: str  # the URL with its password hidden
    in_source: int = 0
    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already in the target, identical
    interrupted: list[str] = field(default_factory=list)  # active in SQLite, owner gone
    refused: dict[str, str] = field(default_factory=dict)  # id -> why (a live owner)
    differ: list[str] = field(default_factory=list)  # in the target, not identical: left
    failed: dict[str, str] = field(default_factory=dict)  # id -> the database's error
    rows: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys([*CHILD_COLUMNS, "spend"], 0)
    )
    pages: int = 0  # page texts written (a page the target kept already is not)
    bytes: int = 0
    seconds: float = 0.0
    expected: dict[str, str] = field(default_factory=dict)  # id -> state, as it must arrive

    @property
    def present(self) -> list[str]:
        """The research that must now be in the target as the source has them."""
        return [*self.copied, *self.skipped]


def migrate_store(
    source_dir: Path,
    target_url: str,
    target_dir: Path,
    progress: Progress | None = None,
) -> Migration:
    """Copy every research of the SQLite store in ``source_dir`` into the PostgreSQL store of
    ``target_url`` (``target_dir``: that store's local folder); see the module's docstring.

    Raises ``FoundryError`` when either store cannot be opened; a research the target refuses
    is recorded in ``Migration.failed`` and the others go on.
    """
    began = time.monotonic()
    source_file = prepare_source(source_dir)
    prepare_target(target_url, target_dir)
    migration = Migration(str(source_file), redact_url(target_url))
    with closing(read_only(source_file)) as lite, target_connection(target_url) as pg:
        ids = [row[0] for row in lite.execute("SELECT id FROM research ORDER BY created_at, id")]
        migration.in_source = len(ids)
        there = target_hashes(pg, ids)
        for done, research_id in enumerate(ids, 1):
            with snapshot(lite):
                _migrate_one(lite, pg, research_id, there.get(research_id), migration)
            if progress is not None:
                progress(done, len(ids))
        migration.rows["spend"] += copy_deleted_spend(lite, pg)
    migration.seconds = time.monotonic() - began
    return migration


def prepare_source(source_dir: Path) -> Path:
    """Open the SQLite store once (migrating an older file's tables); its file."""
    store = open_store(ResearchSettings(research_dir=source_dir))
    try:
        return Path(store.describe().location)
    finally:
        store.close()


def prepare_target(url: str, research_dir: Path) -> None:
    """Open the PostgreSQL store once: its tables are created or upgraded there."""
    open_store(ResearchSettings(research_dir=research_dir, store_url=url)).close()


def read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to the SQLite file (transactions opened by hand)."""
    return sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30, isolation_level=None
    )


@contextmanager
def snapshot(lite: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every row of a research read from one committed state."""
    lite.execute("BEGIN")
    try:
        yield
    finally:
        lite.execute("COMMIT")


@contextmanager
def target_connection(url: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection to the target (autocommit: each research opens its own transaction)."""
    given = conninfo_to_dict(url)
    options: dict[str, Any] = {"autocommit": True}
    if "application_name" not in given:
        options["application_name"] = "foundry-mcp migrate"
    if "connect_timeout" not in given:
        options["connect_timeout"] = 10
    try:
        conn = psycopg.connect(url, **options)
    except psycopg.OperationalError as exc:
        raise StoreUnavailableError(
            f"The research store {redact_url(url)} cannot be reached: {scrub(str(exc), url)}.",
            remediation="Check that PostgreSQL answers (pg_isready) and run migrate again.",
        ) from None
    with conn:
        # Each research is its own transaction; one lost to a crash of the server right after
        # its commit is copied again by the next run, so commits need not wait for the disk.
        conn.execute("SET synchronous_commit TO off")
        yield conn


def target_hashes(pg: psycopg.Connection[Any], ids: Sequence[str]) -> dict[str, str]:
    """The SHA-256 of the state of each of ``ids`` the target holds, by id."""
    rows = pg.execute(
        "SELECT id, encode(sha256(convert_to(state, 'UTF8')), 'hex') FROM research "
        "WHERE id = ANY(%s)",
        (list(ids),),
    ).fetchall()
    return {row[0]: row[1] for row in rows}


def state_hash(state: str) -> str:
    return hashlib.sha256(state.encode("utf-8", "surrogatepass")).hexdigest()


def _migrate_one(
    lite: sqlite3.Connection,
    pg: psycopg.Connection[Any],
    research_id: str,
    there: str | None,
    migration: Migration,
) -> None:
    found = lite.execute(
        f"SELECT {', '.join(RESEARCH_COLUMNS)}, {', '.join(OWNERSHIP_COLUMNS)} "
        "FROM research WHERE id = ?",
        (research_id,),
    ).fetchone()
    if found is None:  # deleted in SQLite since the list was read
        migration.in_source -= 1
        return
    row, ownership = arriving(tuple(found[: len(RESEARCH_COLUMNS)]), found[len(RESEARCH_COLUMNS) :])
    if row is None:
        migration.refused[research_id] = (
            f"{found[1]} in a foundry-mcp process that still runs "
            f"(pid {ownership.pid} on {ownership.host})"
        )
        return
    state = row[RESEARCH_COLUMNS.index("state")]
    migration.expected[research_id] = state
    if there is not None:
        (migration.skipped if there == state_hash(state) else migration.differ).append(research_id)
        return
    try:
        written = copy_research(lite, pg, row)
    except psycopg.Error as exc:
        reason = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        if pg.broken or pg.closed:  # the database is gone: every other research would fail too
            raise StoreUnavailableError(
                f"The connection to {migration.target} was lost after {len(migration.copied)} "
                f"research were copied: {reason}.",
                remediation="Run foundry-mcp migrate again once PostgreSQL answers: the "
                "research copied are kept, and the rest is copied.",
            ) from None
        migration.failed[research_id] = reason
        return
    if written is None:  # created in the target meanwhile (another migrate run): compare later
        migration.differ.append(research_id)
        return
    if Status(found[1]).is_active:
        migration.interrupted.append(research_id)
    migration.copied.append(research_id)
    for table, count in written.rows.items():
        migration.rows[table] += count
    migration.pages += written.pages
    migration.bytes += written.bytes


def arriving(row: Row, owner_columns: Sequence[Any]) -> tuple[Row | None, Ownership]:
    """The research row as it must arrive in the target, and who holds it in SQLite: ``None``
    for a research that a live process runs, the row made ``interrupted`` for an active one
    whose process is gone (the same row every time: migrations are repeatable), else as it is."""
    token, pid, stored_host, lease_until, cancel, started = owner_columns
    host, node = split_host(stored_host)
    ownership = Ownership(token, pid, host, lease_until, bool(cancel), started, node)
    values = dict(zip(RESEARCH_COLUMNS, row, strict=True))
    if not Status(values["status"]).is_active:
        return row, ownership
    if ownership.is_alive(Owner(token="migrate"), running_here=False):
        return None, ownership
    state = json.loads(values["state"])
    state["status"] = Status.INTERRUPTED.value
    state["completed_at"] = state.get("completed_at") or values["updated_at"]
    state["error"] = INTERRUPTED_BY_MIGRATION
    metadata = state.setdefault("metadata", {})
    metadata.update(
        interrupted=True, abort_phase=state.get("phase"), abort_iteration=state.get("iteration")
    )
    values["status"] = Status.INTERRUPTED.value
    values["state"] = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    return tuple(values[column] for column in RESEARCH_COLUMNS), ownership


@dataclass
class Written:
    rows: dict[str, int]
    pages: int
    bytes: int


def copy_research(
    lite: sqlite3.Connection, pg: psycopg.Connection[Any], row: Row
) -> Written | None:
    """Copy one research (``row``: its ``RESEARCH_COLUMNS``) and its other rows in one
    transaction; ``None`` when the target got a research of this id meanwhile."""
    research_id = row[0]
    children = {
        table: lite.execute(
            f"SELECT {', '.join(columns)} FROM {table} WHERE research_id = ?", (research_id,)
        ).fetchall()
        for table, columns in CHILD_COLUMNS.items()
    }
    spend = lite.execute(
        f"SELECT {', '.join(SPEND_COLUMNS)} FROM spend WHERE research_id = ?", (research_id,)
    ).fetchall()
    hashes = [link[1] for link in children["research_pages"]]
    size = _size(row) + sum(_size(child) for rows in children.values() for child in rows)
    with pg.transaction():
        pg.execute("SELECT pg_advisory_xact_lock_shared(%s)", (PAGES_LOCK,))
        inserted = pg.execute(
            f"INSERT INTO research ({', '.join(RESEARCH_COLUMNS)}) "
            f"VALUES ({', '.join(['%s'] * len(RESEARCH_COLUMNS))}) ON CONFLICT (id) DO NOTHING",
            row,
        ).rowcount
        if not inserted:
            return None
        # Rows a deleted research of this id may have left behind (an event appended late).
        for table in CHILD_COLUMNS:
            pg.execute(f"DELETE FROM {table} WHERE research_id = %s", (research_id,))
        for table, rows in children.items():
            _copy_rows(pg, table, CHILD_COLUMNS[table], rows)
        pages = _new_pages(lite, pg, hashes)
        _copy_rows(pg, "pages", PAGE_COLUMNS, pages)
        with pg.cursor() as cursor:
            cursor.executemany(_ADD_SPEND, spend)
    size += sum(len(page[1]) for page in pages)
    written = {table: len(rows) for table, rows in children.items()}
    return Written({**written, "spend": len(spend)}, len(pages), size)


def copy_deleted_spend(lite: sqlite3.Connection, pg: psycopg.Connection[Any]) -> int:
    """Copy the spend of research deleted from SQLite (the ledger outlives them); how many rows
    the target did not hold yet."""
    rows = lite.execute(
        f"SELECT {', '.join(SPEND_COLUMNS)} FROM spend "
        "WHERE research_id NOT IN (SELECT id FROM research)"
    ).fetchall()
    if not rows:
        return 0
    with pg.transaction(), pg.cursor() as cursor:
        before = _spend_rows(pg)
        cursor.executemany(_ADD_SPEND, rows)
        return _spend_rows(pg) - before


def _spend_rows(pg: psycopg.Connection[Any]) -> int:
    found = pg.execute("SELECT count(*) FROM spend").fetchone()
    return int(found[0]) if found else 0


def _new_pages(
    lite: sqlite3.Connection, pg: psycopg.Connection[Any], hashes: list[str]
) -> list[Row]:
    """The pages of ``hashes`` the target does not keep yet, read from SQLite (text as UTF-8
    bytes, as the PostgreSQL store keeps it)."""
    if not hashes:
        return []
    kept = {
        found[0] for found in pg.execute("SELECT hash FROM pages WHERE hash = ANY(%s)", (hashes,))
    }
    wanted = [digest for digest in hashes if digest not in kept]
    if not wanted:
        return []
    rows = lite.execute(
        f"SELECT {', '.join(PAGE_COLUMNS)} FROM pages "
        "WHERE hash IN (SELECT value FROM json_each(?))",
        (json.dumps(wanted),),
    ).fetchall()
    return [(row[0], row[1].encode("utf-8", "surrogatepass"), row[2], row[3]) for row in rows]


def _copy_rows(
    pg: psycopg.Connection[Any], table: str, columns: Sequence[str], rows: Sequence[Row]
) -> None:
    if not rows:
        return
    with (
        pg.cursor() as cursor,
        cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)


def _size(row: Row) -> int:
    return sum(
        len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else 0
        for value in row
    )
