"""A research store in PostgreSQL, shared by the foundry-mcp servers of a team.

The same interface as the SQLite store (:class:`foundry_mcp.research.store.protocol.Store`),
over a pool of connections (``psycopg_pool``). Most calls are one statement, so one round trip
(a connection is not checked when taken from the pool) and atomic on its own: a fenced save is
one conditional UPDATE and a deletion one statement over all the research's tables. A save that keeps new page text and
a deletion are one transaction of a few, under the page lock (``pages``). Several servers on
several hosts may use one database at once; leases are measured on the database's clock
(``leases``). A save or a cancel request is announced by NOTIFY, so waits end at once
(``notify``).

Use it through :func:`foundry_mcp.research.store.opening.open_store` with ``[research] store_url``.
Its parts live beside it: ``database`` (connecting, tables, migrations, errors), ``leases``
(ownership), ``pages`` (page text kept once, outside the states), ``events`` (audit trail and
LLM journal), ``notify`` (waits on NOTIFY), ``ledger`` and ``archived`` (the spend ledger,
which outlives deletions, and archived originals) and ``shared`` (the keys and admission lock
the servers of a team share).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.store.access.waits import poll_for_cancel, poll_for_change
from foundry_mcp.research.store.delegates import LeasesAndEvents
from foundry_mcp.research.store.owners import Owner, fenced
from foundry_mcp.research.store.pages import fill_pages, wanted_pages
from foundry_mcp.research.store.paging import decode_cursor, like_pattern, page
from foundry_mcp.research.store.postgres.archived import PgArchiveAndSpend
from foundry_mcp.research.store.postgres.database import Database, iso, open_database
from foundry_mcp.research.store.postgres.events import PgEventLog, PgJournal
from foundry_mcp.research.store.postgres.leases import (
    PgLeases,
    lease_columns,
)
from foundry_mcp.research.store.postgres.ledger import purge_orphans, save_statement, spend_of
from foundry_mcp.research.store.postgres.notify import Listener
from foundry_mcp.research.store.postgres.pages import (
    FORGET_PAGES,
    lock_for_deletion,
    read_pages,
    saving,
    write_pages,
)
from foundry_mcp.research.store.postgres.schema import (
    CANCEL_CHANNEL,
    CHANGED_CHANNEL,
    schema_version,
)
from foundry_mcp.research.store.postgres.shared import admission, shared_key
from foundry_mcp.research.store.postgres.status import STATUS_QUERY, status_parameters, status_read
from foundry_mcp.research.store.records import (
    Fingerprint,
    ResearchSummary,
    StatusRead,
    StoreInfo,
    research_not_found,
    validate_research_id,
)
from foundry_mcp.research.store.states import (
    RESEARCH_TABLES,
    Snapshot,
    decode_branches,
    decode_state,
    snapshot_to_save,
)

_ACTIVE = [status.value for status in Status if status.is_active]


class PostgresStore(PgArchiveAndSpend, LeasesAndEvents):
    """Sessions of research in a PostgreSQL database, readable and writable from any host."""

    _leases: PgLeases  # closed with the store: its renewals have a connection of their own

    def __init__(self, url: str, research_dir: Path) -> None:
        self.research_dir = research_dir  # this server's side files: caches, archive, keys
        self._db: Database = open_database(url)
        self._leases = PgLeases(self._db)
        self._events = PgEventLog(self._db)
        self.journal = PgJournal(self._db)
        self._listener = Listener(
            self._db.connect, lost=self._db.found_lost, reached=self._db.found_reachable
        )

    def close(self) -> None:
        self._listener.close()
        self._leases.close()
        self._db.close()

    def describe(self) -> StoreInfo:
        with self._db.connection() as conn:
            version = schema_version(conn)
            row = conn.execute("SHOW server_version").fetchone()
        return StoreInfo(
            "postgresql", self._db.shown, version, str(row[0]).split()[0] if row else None
        )

    def unavailable(self) -> StoreUnavailableError | None:
        """Why the last statement could not reach the database, until one does again."""
        return self._db.outage

    def shared_key(self, name: str) -> bytes:
        """The team's key ``name`` (a row of ``foundry_keys``), the same on every server."""
        return shared_key(self._db, name)

    def admitting(self, principal: str) -> AbstractContextManager[None]:
        """The principal's admission lock on every server (an advisory lock)."""
        return admission(self._db, principal)

    # ------------------------------------------------------------------ states

    def save(self, state: ResearchState | Snapshot, owner: Owner | None = None) -> None:
        """Write the whole state in one statement (insert or replace).

        With ``owner`` the write is fenced: it raises ``LeaseLostError`` unless ``owner`` still
        holds the research. The same statement books in the spend ledger what the state cost
        since its last save. Given a snapshot, the state is not touched (its taker applies
        it); given a state, it records what was saved (``states.Snapshot``).
        """
        if owner is None:
            self._write(state, None, ())
        else:
            self._write(state, "owner_token=%s", (owner.token,))

    def save_unowned(self, state: ResearchState, expected_token: str | None) -> None:
        """Write the state of a research this process does not run (a restore, a dead owner's
        research recorded ``interrupted``), fenced: only while its owner token is still
        ``expected_token`` (None: nobody's, as ``disown`` left it) and no lease with that token
        is running; ``LeaseLostError`` otherwise (another process took it, or it was deleted)."""
        self._write(
            state,
            "owner_token IS NOT DISTINCT FROM %s AND (lease_until IS NULL OR lease_until < now())",
            (expected_token,),
        )

    def _write(
        self, state: ResearchState | Snapshot, fence: str | None, params: tuple[object, ...]
    ) -> None:
        """Save ``state``: an insert or replace without ``fence``, else an update of the row
        that matches it (``LeaseLostError`` when none does); its new pages and its spend too."""
        with snapshot_to_save(state) as saved:
            statement, values = save_statement(saved, fence, params)
            with self._db.connection() as conn, saving(conn, saved.pages):
                row = conn.execute(statement, values).fetchone()
                fenced(row[0] if row else 0, saved.id)
                write_pages(conn, saved.id, saved.pages)

    def save_branch(self, branch: ResearchState | Snapshot, owner: Owner) -> None:
        """Write the state of one researcher of a research (a sub-question's), fenced."""
        if branch.branch is None:
            raise ValueError("a branch state needs its branch id")
        with (
            snapshot_to_save(branch) as saved,
            self._db.connection() as conn,
            saving(conn, saved.pages),
        ):
            cursor = conn.execute(
                "WITH held AS (SELECT id FROM research WHERE id=%s AND owner_token=%s "
                "FOR SHARE) "
                "INSERT INTO branches (research_id, branch_id, updated_at, state) "
                "SELECT id, %s, %s, %s FROM held ON CONFLICT (research_id, branch_id) "
                "DO UPDATE SET updated_at=excluded.updated_at, state=excluded.state",
                (saved.id, owner.token, saved.branch, saved.updated_at, saved.json),
            )
            fenced(cursor.rowcount, saved.id)
            write_pages(conn, saved.id, saved.pages)

    def load_branches(self, research_id: str) -> dict[str, ResearchState]:
        """The saved researcher states of a research, by branch id (unreadable ones left out)."""
        validate_research_id(research_id)
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT branch_id, state FROM branches WHERE research_id = %s", (research_id,)
            ).fetchall()
        return decode_branches(rows, research_id)

    def create(self, state: ResearchState, owner: Owner, lease_seconds: float) -> None:
        """Insert a new research, already leased to ``owner``."""
        with snapshot_to_save(state) as saved:
            row: list[tuple[str, str, object]] = [
                ("id", "%s", saved.id),
                ("status", "%s", saved.status),
                ("phase", "%s", saved.phase),
                ("iteration", "%s", saved.iteration),
                ("query", "%s", saved.query),
                ("created_at", "%s", saved.created_at),
                ("updated_at", "%s", saved.updated_at),
                ("state", "%s", saved.json),
                ("principal", "%s", saved.principal),
                *lease_columns(owner, lease_seconds),
            ]
            columns = ", ".join(column for column, _, _ in row)
            values = ", ".join(value for _, value, _ in row)
            spend, spend_params = spend_of(saved)
            with self._db.connection() as conn, saving(conn, saved.pages):
                conn.execute(
                    # Made again after a lost connection, the insert finds its own row: done.
                    f"WITH saved AS (INSERT INTO research ({columns}) VALUES ({values}) "
                    f"ON CONFLICT (id) DO NOTHING RETURNING id, principal){spend} "
                    "SELECT count(*) FROM saved",
                    (*(parameter for _, _, parameter in row), *spend_params),
                )
                write_pages(conn, saved.id, saved.pages)

    def load(self, research_id: str) -> ResearchState:
        """The saved state, without its page text; ``ResearchNotFoundError`` if there is none."""
        validate_research_id(research_id)
        with self._db.connection() as conn:
            found = conn.execute(
                "SELECT state FROM research WHERE id = %s", (research_id,)
            ).fetchone()
        if found is None:
            raise research_not_found(research_id)
        return decode_state(found[0], research_id)

    def load_status(self, research_id: str, known: ResearchState | None = None) -> StatusRead:
        """The state with its ownership, principal and newest event time, in one statement
        (``known`` given back when it is still the stored state); ``ResearchNotFoundError`` if
        there is none."""
        validate_research_id(research_id)
        with self._db.connection() as conn:
            found = conn.execute(STATUS_QUERY, status_parameters(research_id, known)).fetchone()
        return status_read(found, research_id, known)

    def load_pages(self, *states: ResearchState) -> None:
        """Give the sources of ``states`` their page text (one query for all)."""
        wanted = wanted_pages(*states)
        if not wanted:
            return
        with self._db.connection() as conn:
            texts = read_pages(conn, wanted)
        fill_pages(texts, *states)

    def fingerprint(self, research_id: str) -> Fingerprint | None:
        """(status, phase, iteration, updated_at) without loading the whole state."""
        with self._db.connection() as conn:
            found = conn.execute(
                "SELECT status, phase, iteration, updated_at FROM research WHERE id = %s",
                (research_id,),
            ).fetchone()
        return None if found is None else (found[0], found[1], found[2], iso(found[3]))

    def principal_of(self, research_id: str) -> str | None:
        """Whose research it is (None: the local user's); ``ResearchNotFoundError`` if none."""
        validate_research_id(research_id)
        with self._db.connection() as conn:
            found = conn.execute(
                "SELECT principal FROM research WHERE id = %s", (research_id,)
            ).fetchone()
        if found is None:
            raise research_not_found(research_id)
        principal: str | None = found[0]
        return principal

    def delete(self, research_id: str) -> bool:
        validate_research_id(research_id)
        others = " ".join(
            f", deleted_{table} AS (DELETE FROM {table} WHERE research_id = %(id)s)"
            for table in RESEARCH_TABLES
        )
        with self._db.connection() as conn, conn.transaction():
            lock_for_deletion(conn)
            row = conn.execute(
                f"WITH gone AS (DELETE FROM research WHERE id = %(id)s RETURNING id)"
                f"{others}{FORGET_PAGES} SELECT count(*) FROM gone",
                {"id": research_id},
            ).fetchone()
        return bool(row and row[0])

    def list_page(
        self,
        limit: int,
        cursor: str | None = None,
        completed_only: bool = False,
        statuses: Iterable[Status] = (),
        principal: str | None = None,
        words: Sequence[str] = (),
    ) -> tuple[list[ResearchSummary], str | None]:
        """Newest first, ``limit`` at a time; the second value is the next page's cursor.

        With ``principal``, only that principal's research; without, everyone's. With
        ``words``, only research whose question holds each of them, in any case.
        """
        clauses: list[str] = []
        params: list[Any] = []
        if principal is not None:
            clauses.append("principal = %s")
            params.append(principal)
        if cursor:
            created_at, research_id = decode_cursor(cursor)
            clauses.append("(created_at, id) < (%s, %s)")
            params += [datetime.fromisoformat(created_at), research_id]
        wanted = {Status.COMPLETED} if completed_only else set(statuses)
        if wanted:
            clauses.append("status = ANY(%s)")
            params.append(sorted(s.value for s in wanted))
        for word in words:
            clauses.append("query ILIKE %s ESCAPE '\\'")
            params.append(f"%{like_pattern(word)}%")
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT id, left(query, 400), status, phase, iteration, created_at, updated_at "
                f"FROM research {where} ORDER BY created_at DESC, id DESC LIMIT %s",
                (*params, limit + 1),
            ).fetchall()
        return page(
            [
                ResearchSummary(
                    row[0], row[1], Status(row[2]), row[3], row[4], iso(row[5]), iso(row[6])
                )
                for row in rows
            ],
            limit,
        )

    def active_ids(self) -> list[str]:
        """Ids of researches whose stored status says someone is working on them."""
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT id FROM research WHERE status = ANY(%s)", (_ACTIVE,)
            ).fetchall()
        return [row[0] for row in rows]

    def delete_older_than(self, days: float) -> int:
        """Delete research not active and untouched for ``days``; returns how many."""
        others = " ".join(
            f", deleted_{table} AS (DELETE FROM {table} WHERE research_id IN (SELECT id FROM gone))"
            for table in RESEARCH_TABLES
        )
        with self._db.connection() as conn, conn.transaction():
            lock_for_deletion(conn)
            row = conn.execute(
                "WITH gone AS (DELETE FROM research WHERE updated_at < "
                "now() - make_interval(secs => %s::float8) AND status <> ALL(%s) RETURNING id)"
                f"{others}{FORGET_PAGES} SELECT count(*) FROM gone",
                (days * 86400.0, _ACTIVE),
            ).fetchone()
            purge_orphans(conn)  # rows of research deleted before they were fenced
        return int(row[0]) if row else 0

    # ------------------------------------------------------------------ waiting for others

    async def listen(self) -> None:
        """Open the LISTENing connection now: a server learns of a restart of the database
        from it at once, before any wait has opened it."""
        await self._listener.ready()

    async def wait_for_change(
        self, research_id: str, timeout: float, since: Fingerprint | None = None
    ) -> bool:
        """Wait until the research is saved or deleted (NOTIFY), at most ``timeout`` seconds."""
        if not await self._listener.ready():
            return await poll_for_change(self, research_id, timeout, since)
        with self._listener.watch(CHANGED_CHANNEL, [research_id]) as waiter:
            if since is not None:  # a change made before we listened (read off the loop)
                now = await anyio.to_thread.run_sync(self.fingerprint, research_id)
                if now != since:
                    return True
            return await waiter.wait(timeout)

    def saved_here(self, research_id: str) -> None:
        """Nothing to do: the save's NOTIFY wakes the waits, here as in other servers."""

    async def wait_for_cancel(
        self, owner: Owner, research_ids: Iterable[str], timeout: float
    ) -> set[str]:
        """Wait until someone asks to cancel one of these research (NOTIFY); returns their
        ids, empty at the timeout."""
        ids = list(research_ids)
        if not await self._listener.ready():
            return await poll_for_cancel(self, owner, ids, timeout)
        with self._listener.watch(CANCEL_CHANNEL, ids) as waiter:
            # A request made before we listened (the reads run off the loop).
            asked = await anyio.to_thread.run_sync(self.cancel_requests, owner, ids)
            if asked:
                return asked
            if not await waiter.wait(timeout):
                return set()
        return await anyio.to_thread.run_sync(self.cancel_requests, owner, ids)
