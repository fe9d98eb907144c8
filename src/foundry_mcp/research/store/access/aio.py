"""The research store, called from the event loop without ever blocking it.

Every store call waits on something the loop must not wait on: a disk, a lock another process
holds (SQLite's writer lock; its busy timeout is 30 s), a pool or a network (PostgreSQL). So the
service and the runner reach the store through :class:`AsyncStore`, which runs each call on a
worker thread:

* **Writes** run one at a time, in the order they were asked, on one writer thread
  (:mod:`.writer`). A research's events, journal entries and saves therefore reach the store in
  the order the run made them, and a write stuck on a lock holds up only the writes behind it.
  A new research's creation is asked ``first``: no queued write can name it yet, and its
  caller waits for it.
* **Reads** run on reader threads, on a store of their own where the backend needs one (SQLite:
  a second connection, which WAL lets read while another connection, or process, writes). A
  status is answered while a save waits for the lock.
* **Renewals** of the leases run on a thread of their own, and the store makes them on a
  connection of their own (``Store.renew``): never behind the writes, which a lock or an
  outage may hold for up to 30 s while the lease lasts 20. A lease is renewed as soon as the
  database answers, whatever the writer waits for.

Writes, and the reads asked ``patient`` (a run's), wait out a short outage of the database
(:mod:`foundry_mcp.research.store.access.patience`) instead of failing: a research outlives a database
paused for a few seconds. The other reads (a status, a report) fail at once; they have reader
threads of their own, so they never queue behind a run's reads that wait for the database.

:meth:`AsyncStore.write_soon` queues a write without waiting for it (an event, a journal entry:
the run goes on, and the order still holds); :meth:`AsyncStore.drain` waits for the queue.
``AsyncStore.sync`` is the store itself, for code that already runs on a worker thread and for
tests that look inside.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from foundry_mcp.research.store.access import patience
from foundry_mcp.research.store.access.writer import OrderedWriter
from foundry_mcp.research.store.owners import LeaseLostError, Owner
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.records import Fingerprint

log = logging.getLogger(__name__)

T = TypeVar("T")
READER_THREADS = 4


class AsyncStore:
    """A store's calls on worker threads: writes in order on one thread, reads beside them."""

    def __init__(self, store: Store, reader: Store | None = None) -> None:
        self.sync = store
        self._reader = reader or store
        self._writes = OrderedWriter("store-write")
        self._reads = ThreadPoolExecutor(READER_THREADS, thread_name_prefix="store-read")
        # A run's reads wait out an outage: on threads of their own, so that a status never
        # queues behind them while the database is away.
        self._patient_reads = ThreadPoolExecutor(
            READER_THREADS, thread_name_prefix="store-read-patient"
        )
        # A lease never waits behind the writes: its renewals go on a thread of their own.
        self._renewals = ThreadPoolExecutor(1, thread_name_prefix="store-lease")
        self._queued: set[Future[object]] = set()

    @property
    def reader(self) -> Store:
        """The store the reads use (``sync`` itself, or its second connection)."""
        return self._reader

    async def read(self, call: Callable[[Store], T], *, patient: bool = False) -> T:
        """``call(store)`` on a reader thread; ``patient``: waiting out a short outage of the
        database (a run's reads) instead of failing at once."""
        if patient:
            future = self._patient_reads.submit(_patiently, call, self._reader)
            return await asyncio.wrap_future(future)
        return await asyncio.wrap_future(self._reads.submit(call, self._reader))

    async def write(self, call: Callable[[Store], T], *, first: bool = False) -> T:
        """``call(store)`` on the writer thread, after the writes asked before it (patient);
        ``first``: before the writes queued that are not (a write no queued one may precede:
        see :mod:`.writer`)."""
        result: T = await self.write_queued(call, first=first)
        return result

    def write_queued(self, call: Callable[[Store], T], *, first: bool = False) -> asyncio.Future[T]:
        """Queue ``call(store)`` as :meth:`write` does, now: its place among the writes is
        taken before this returns; its outcome, to await or not."""
        return asyncio.wrap_future(self._writes.submit(_patiently, call, self.sync, first=first))

    def write_soon(self, call: Callable[[Store], object], what: str) -> None:
        """Queue ``call(store)`` on the writer thread without waiting (patient); a failure is
        logged as ``could not <what>``."""
        try:
            future: Future[object] = self._writes.submit(_logged, call, self.sync, what)
        except RuntimeError:  # the store is closed: the process is stopping
            log.warning("could not %s: the research store is closed", what)
            return
        self._queued.add(future)
        future.add_done_callback(self._queued.discard)

    async def renew(
        self, owner: Owner, research_ids: Iterable[str], lease_seconds: float
    ) -> set[str]:
        """``Store.renew`` on the lease thread, beside the writes (never queued behind them):
        the ids someone asked to cancel."""
        ids = list(research_ids)
        return await asyncio.wrap_future(
            self._renewals.submit(self.sync.renew, owner, ids, lease_seconds)
        )

    async def listen(self) -> None:
        """``Store.listen`` on the reading side."""
        await self._reader.listen()

    async def wait_for_change(
        self, research_id: str, timeout: float, since: Fingerprint | None = None
    ) -> bool:
        """Wait until the research is saved or deleted, at most ``timeout`` seconds
        (``Store.wait_for_change``, on the reading side)."""
        return await self._reader.wait_for_change(research_id, timeout, since)

    def saved_here(self, research_id: str) -> None:
        """This process saved the research and it moved: waits for its change end now
        (``Store.saved_here``, on the reading side)."""
        self._reader.saved_here(research_id)

    async def wait_for_cancel(
        self, owner: Owner, research_ids: Iterable[str], timeout: float
    ) -> set[str]:
        """The ids of ``research_ids`` someone asked to cancel, once there are any; empty after
        ``timeout`` seconds (``Store.wait_for_cancel``, on the reading side)."""
        return await self._reader.wait_for_cancel(owner, research_ids, timeout)

    async def drain(self) -> None:
        """Wait until every write queued so far is done."""
        await self.write(lambda _: None)

    def close(self) -> None:
        """Finish the queued writes, stop the threads and close the store (and its reader)."""
        self._writes.shutdown(wait=True)
        self._renewals.shutdown(wait=True, cancel_futures=True)
        self._reads.shutdown(wait=True, cancel_futures=True)
        self._patient_reads.shutdown(wait=True, cancel_futures=True)
        if self._reader is not self.sync:
            self._reader.close()
        self.sync.close()


def _patiently(call: Callable[[Store], T], store: Store) -> T:
    """``call(store)``, waiting out a short outage; made again while its connection is lost
    during a statement (each time on another: the pool drops the lost one), for as long as
    the outage is young enough for patience."""
    began = time.monotonic()
    with patience.patient():
        while True:
            try:
                return call(store)
            except patience.StatementLost:
                if time.monotonic() - began > patience.PATIENT_SECONDS:
                    raise
                log.info("the research store's connection was lost during a statement; again")


def _logged(call: Callable[[Store], object], store: Store, what: str) -> object:
    try:
        return _patiently(call, store)
    except LeaseLostError:
        # The run ended (or another process took the research) before this write came up:
        # what it said is no longer the owner's to say.
        log.info("did not %s: this process no longer holds the research", what)
    except Exception:
        log.exception("could not %s", what)
    return None
