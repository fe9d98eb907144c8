"""What every research store offers: the one interface the service, the runner and the CLI use.

Two implementations satisfy it: :class:`~foundry_mcp.research.store.sqlite.store.ResearchStore`
(one SQLite database under ``research_dir``, the default) and
:class:`~foundry_mcp.research.store.postgres.store.PostgresStore` (a PostgreSQL database shared
by the servers of a team). :func:`~foundry_mcp.research.store.opening.open_store` picks one from
the configuration. The rows they hand back are in :mod:`~foundry_mcp.research.store.records`.

The interface is synchronous: a SQLite call takes microseconds and a PostgreSQL one a network
round trip, short enough to make from async code. The two waits are async, as they last up to
their timeout: a long poll and the owner's heartbeat await them without holding a thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from foundry_mcp.context.archive import ArchiveRecord
from foundry_mcp.errors import FoundryError
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.store.owners import Owner, Ownership
from foundry_mcp.research.store.records import (
    Event,
    Fingerprint,
    JournalEntry,
    ResearchSummary,
    StatusRead,
    StoreInfo,
)
from foundry_mcp.research.store.states import Snapshot


class Journal(Protocol):
    """The journal of LLM answers a research paid for, replayed when it resumes."""

    def get(self, research_id: str, key: str) -> JournalEntry | None: ...

    def put(
        self, research_id: str, key: str, answer: str, record: dict[str, Any], owner: Owner
    ) -> None:
        """Save an answer, fenced: ``LeaseLostError`` unless ``owner`` still holds the research."""
        ...

    def count(self, research_id: str) -> int: ...


class Store(Protocol):
    """Sessions of research, saved atomically and readable from any process."""

    @property
    def research_dir(self) -> Path:
        """The local folder of this server's side files (caches, archive, task-id key)."""
        ...

    @property
    def journal(self) -> Journal: ...

    def close(self) -> None: ...

    def describe(self) -> StoreInfo:
        """Where the research is kept; a store that cannot be reached raises a ``FoundryError``."""
        ...

    def unavailable(self) -> FoundryError | None:
        """Why the last statement could not reach the store, until one does again (None: it
        answered); read without a statement (``GET /health``)."""
        ...

    def shared_key(self, name: str) -> bytes:
        """A random key that every server of this store reads alike, made on first use."""
        ...

    def admitting(self, principal: str) -> AbstractContextManager[None]:
        """Held while a principal's running research is counted and a new one saved: one
        admission of that principal at a time, across every server of this store."""
        ...

    # ------------------------------------------------------------------ states

    def save(self, state: ResearchState | Snapshot, owner: Owner | None = None) -> None:
        """Write the whole state at once; with ``owner``, fenced (``LeaseLostError``).

        The page texts its sources got since they were last saved are kept first, in the same
        transaction (:mod:`~foundry_mcp.research.store.pages`); so do ``save_branch`` and
        ``create``. What the state's estimated cost grew by since the spend ledger last heard of
        it is booked there in the same transaction (``save_unowned`` and ``create`` too; a
        branch's cost is its research's).

        The store never writes to a snapshot's state: a run, whose state the event loop edits
        while the writer thread saves it, gives a :class:`Snapshot` taken there and applies it
        on the loop once the save returns. Given a state, the store takes the snapshot itself
        and applies it once the write committed (``save_branch``, ``create`` and
        ``save_unowned`` too): the caller finds the state as saved.
        """
        ...

    def save_unowned(self, state: ResearchState, expected_token: str | None) -> None:
        """Write the state of a research no run of this process holds (a restore of archived
        content; a dead owner's research recorded ``interrupted`` after ``disown``), fenced:
        only while its owner token is still ``expected_token`` (None: nobody's) and no lease
        with that token runs. ``LeaseLostError`` otherwise: another process claimed it since,
        or it was deleted. Pages and spend as ``save``."""
        ...

    def save_branch(self, branch: ResearchState | Snapshot, owner: Owner) -> None: ...

    def load_branches(self, research_id: str) -> dict[str, ResearchState]: ...

    def create(self, state: ResearchState, owner: Owner, lease_seconds: float) -> None: ...

    def load(self, research_id: str) -> ResearchState:
        """The saved state, without its page text (``load_pages``); ``ResearchNotFoundError``
        if there is none."""
        ...

    def load_status(self, research_id: str, known: ResearchState | None = None) -> StatusRead:
        """The state (without page text) with its ownership, principal and newest event time,
        read in one statement: all a status answer needs; ``ResearchNotFoundError`` if none.
        ``known``, a state of it read before, is given back when none was saved since (the
        same ``updated_at``): the stored state is then neither read nor decoded."""
        ...

    def load_pages(self, *states: ResearchState) -> None:
        """Give the sources of ``states`` (a research's, or its researchers') the page text the
        store keeps for them, in one query; what a run reads, and status or lists never need."""
        ...

    def fingerprint(self, research_id: str) -> Fingerprint | None: ...

    def principal_of(self, research_id: str) -> str | None:
        """Whose research it is (None: the local user's); ``ResearchNotFoundError`` if none."""
        ...

    def delete(self, research_id: str) -> bool:
        """Delete the research with its events, branches, journal, archived originals and the
        pages no other research links to, but not its spend; False if there was none."""
        ...

    def list_page(
        self,
        limit: int,
        cursor: str | None = None,
        completed_only: bool = False,
        statuses: Iterable[Status] = (),
        principal: str | None = None,
        words: Sequence[str] = (),
    ) -> tuple[list[ResearchSummary], str | None]:
        """Newest first; with ``principal``, only that principal's research; with ``words``,
        only research whose question holds each of them (any case)."""
        ...

    def active_ids(self) -> list[str]: ...

    def delete_older_than(self, days: float) -> int:
        """Delete (as ``delete``) research not active and untouched for ``days``, and the rows
        left by research that no longer exists; returns how many research."""
        ...

    # ------------------------------------------------------------------ ownership

    def ownership(self, research_id: str) -> Ownership | None: ...

    def claim(
        self,
        research_id: str,
        owner: Owner,
        lease_seconds: float,
        expected_token: str | None,
        *,
        process_gone: bool = False,
    ) -> bool:
        """Lease the research to ``owner`` for ``lease_seconds``, in one conditional statement:
        True if it is already ``owner``'s, or if its owner token is still ``expected_token``
        (compare and swap) and no lease with that token runs (released, or run out on the
        store's clock). ``process_gone``: the holder's process is known gone
        (``Ownership.process_gone``), so its lease is taken even before it runs out."""
        ...

    def release(self, research_id: str, owner: Owner) -> None: ...

    def renew(self, owner: Owner, research_ids: Iterable[str], lease_seconds: float) -> set[str]:
        """Extend ``owner``'s leases of ``research_ids``; the ids someone asked to cancel.
        On a connection of its own: never waiting for the store's other calls (a write holding
        the SQLite connection, a pool with no connection left to give)."""
        ...

    def cancel_requests(self, owner: Owner, research_ids: Iterable[str]) -> set[str]: ...

    def request_cancel(self, research_id: str) -> None: ...

    def disown(
        self, research_id: str, expected_token: str | None, *, process_gone: bool = False
    ) -> bool:
        """Clear the lease of an owner that stopped, so that a late write by it is refused:
        True only if its owner token is still ``expected_token`` and its lease no longer runs
        on the store's clock, judged in the same statement (a read that found it run out may
        be stale: the owner may have renewed it since). ``process_gone``: the holder's process
        is known gone (``Ownership.process_gone``), so the lease is cleared even while it runs."""
        ...

    def takeover_candidates(
        self, me: Owner, window_seconds: float, limit: int
    ) -> list[tuple[str, Ownership]]:
        """Research another worker may have to take over, with its ownership, without its
        state: active research whose lease ran out or was released, and research interrupted
        within the last ``window_seconds`` that nobody holds; plus those held by processes of
        ``me``'s own machine (and pid namespace), whose death ``Ownership.is_alive`` tells at
        once. Not asked to cancel; at most ``limit``, most recently updated first."""
        ...

    # ------------------------------------------------------------------ events

    def append_event(
        self, research_id: str, kind: str, data: dict[str, Any], owner: Owner | None = None
    ) -> int:
        """Append to the audit trail; with ``owner``, fenced (``LeaseLostError`` once another
        process holds the research, or it was deleted). Returns the event's number."""
        ...

    def events(self, research_id: str, after: int, limit: int) -> list[Event]: ...

    def last_event_at(self, research_id: str) -> str | None: ...

    # ------------------------------------------------------------------ spend and archive

    def spent_since(self, principal: str, since: datetime) -> float:
        """What ``principal``'s research cost from the start of the hour of ``since`` on, read
        in one statement from the spend ledger (which every save books and no deletion
        removes). ``StoreUnavailableError`` when the store cannot answer: never a guess."""
        ...

    def archive_content(
        self, research_id: str, record: ArchiveRecord, owner: Owner | None = None
    ) -> None:
        """Keep an archived original of ``research_id`` where every server reads it (its text
        as a page of the research, deleted with it); with ``owner``, fenced (``LeaseLostError``);
        without, ``ResearchNotFoundError`` if the research is gone."""
        ...

    def archived_content(self, research_id: str, content_hash: str) -> ArchiveRecord | None:
        """The original ``research_id`` archived under ``content_hash`` (its hash unchecked),
        or None."""
        ...

    def purge_archived(self, older_than_hours: float) -> int:
        """Forget archived originals older than ``older_than_hours``; how many."""
        ...

    # ------------------------------------------------------------------ waiting for others

    async def listen(self) -> None:
        """Begin hearing of other servers' saves and cancel requests, and of the database going
        away, now rather than on the first wait (a server does, at its start). Nothing to do
        where the waits poll."""
        ...

    async def wait_for_change(
        self, research_id: str, timeout: float, since: Fingerprint | None = None
    ) -> bool:
        """Wait until the research is saved or deleted, at most ``timeout`` seconds.

        True when it changed (or may have: callers read it again), False at the timeout. With
        ``since`` (a fingerprint read before), True at once if the research no longer has it,
        so that a save between that read and this call is not missed.
        """
        ...

    def saved_here(self, research_id: str) -> None:
        """This process saved the research (its status, phase or iteration moved): the waits
        for its change in this process may end now (call on the loop). Nothing to do where a
        save notifies its waits itself."""
        ...

    async def wait_for_cancel(
        self, owner: Owner, research_ids: Iterable[str], timeout: float
    ) -> set[str]:
        """Wait until someone asks to cancel one of ``owner``'s ``research_ids``; returns the
        ids asked to cancel (empty at the timeout)."""
        ...
