"""The content archive of one research, kept in the research store: any server can restore.

:class:`~foundry_mcp.context.archive.ContentArchive` keeps the originals of dropped or heavily
shortened sources in one server's folder, where a restore or resume on another server of a team
cannot find them. :class:`StoreArchive` has the same face (``write``, ``read``,
``purge_expired``) and keeps each original in the store instead: its text as a page of the
research (kept once, like every page text, and deleted with the research) and its record (item,
reason, tokens, title and URL) in ``archived``. A record is read back by its hash, which is
checked against the text. A record that is not in the store but in this server's folder (written
there by an earlier foundry-mcp) is read from the folder and moved into the store.

Build one where the archive was built, with the store, the research and, in a run, the owner
(whose lease fences the writes)::

    StoreArchive(store, research_id, directory, ttl_hours, owner)
    StoreArchive.beside(disk_archive, store, research_id)  # its folder and TTL

A :class:`StoreArchive` calls its store directly: for code already on a store's thread (a
restore runs on the writer thread). A running research's archive is a :class:`RunArchive`: its
calls go through the run's :class:`~foundry_mcp.research.store.access.aio.AsyncStore` like every other
call of the run, so its writes queue in order with the run's saves on the writer thread, and a
short outage of the database delays them instead of failing the research (``patience``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from foundry_mcp.context.archive import (
    ArchiveError,
    ArchiveRecord,
    ContentArchive,
    check_record,
    new_record,
    normal_hash,
)
from foundry_mcp.errors import FoundryError
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import LeaseLostError, Owner
from foundry_mcp.research.store.protocol import Store

log = logging.getLogger(__name__)

T = TypeVar("T")


class StoreArchive(ContentArchive):
    """The archived originals of one research, in the store (this server's folder read too)."""

    def __init__(
        self,
        store: Store,
        research_id: str,
        directory: Path,
        ttl_hours: float,
        owner: Owner | None = None,
    ) -> None:
        super().__init__(directory, ttl_hours)
        self.store = store
        self.research_id = research_id
        self.owner = owner

    @classmethod
    def beside(
        cls, disk: ContentArchive, store: Store, research_id: str, owner: Owner | None = None
    ) -> StoreArchive:
        """The store archive of ``research_id`` that reads ``disk``'s folder for older records
        and keeps its TTL."""
        return cls(store, research_id, disk.directory, disk.ttl_hours, owner)

    def write(
        self,
        *,
        content: str,
        item_id: str,
        item_type: str,
        reason: str,
        original_tokens: int,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Archive ``content`` of the research in the store (fenced by the owner's lease when
        there is one); returns its ``sha256:...`` hash. Same content, same record."""
        record = new_record(
            content=content,
            item_id=item_id,
            item_type=item_type,
            reason=reason,
            original_tokens=original_tokens,
            metadata=metadata,
        )
        self._write(lambda store: store.archive_content(self.research_id, record, self.owner))
        return record.content_hash

    def read(self, content_hash: str) -> ArchiveRecord:
        """The record of ``content_hash``; ``ArchiveError`` if missing or damaged."""
        digest = normal_hash(content_hash)
        record = self._read(lambda store: store.archived_content(self.research_id, digest))
        if record is not None:
            return check_record(record, digest, f"{digest} of {self.research_id}")
        try:
            found = super().read(digest)  # archived on this server's disk by an earlier version
        except ArchiveError:
            raise ArchiveError(f"No archived content has hash {digest}.") from None
        with contextlib.suppress(FoundryError, LeaseLostError):
            self._write(lambda store: store.archive_content(self.research_id, found, self.owner))
            log.info("moved archived original %s of %s into the store", digest, self.research_id)
        return found

    def purge_expired(self, now: float | None = None) -> int:
        """Remove the records older than the TTL: in the store (every research's) and in this
        server's folder; returns how many."""
        purged = self._write(lambda store: store.purge_archived(self.ttl_hours))
        return purged + super().purge_expired(now)

    def _write(self, call: Callable[[Store], T]) -> T:
        """``call(store)`` for a write of the archive."""
        return call(self.store)

    def _read(self, call: Callable[[Store], T]) -> T:
        """``call(store)`` for a read of the archive."""
        return call(self.store)


class RunArchive(StoreArchive):
    """The archive of a running research, whose token fitting calls it from worker threads
    (``anyio.to_thread``): each call goes through the run's ``AsyncStore``, on the event loop's
    behalf. Its writes queue on the writer thread in order with the run's saves, and its reads
    run on the patient reader threads; both wait out a short outage of the database, and one
    whose connection died during its statement is made again, as every call of a run is."""

    def __init__(
        self, io: AsyncStore, research_id: str, directory: Path, ttl_hours: float, owner: Owner
    ) -> None:
        super().__init__(io.sync, research_id, directory, ttl_hours, owner)
        self.io = io

    def _write(self, call: Callable[[Store], T]) -> T:
        return anyio.from_thread.run(self.io.write, call)

    def _read(self, call: Callable[[Store], T]) -> T:
        return anyio.from_thread.run(functools.partial(self.io.read, call, patient=True))
