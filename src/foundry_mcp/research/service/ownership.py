"""This process's side of research ownership: keeping its leases alive, and noticing research
whose owner stopped.

A run's lease lasts ``lease_seconds`` (``[research] lease_seconds``) and the heartbeat renews it
every quarter of that, at most ``RENEW_EVERY_SECONDS``, on the store's lease thread
(``AsyncStore.renew``): a renewal never queues behind the run's writes, which may wait up to
30 s for the store. Between renewals it waits on the store for a cancel request from another
process (``Store.wait_for_cancel``: a NOTIFY on PostgreSQL, frequent reads on SQLite), so a
cancel sent through any server of a team stops the run at once.

An active research whose owner is gone (``Ownership.is_alive`` in ``store.owners``) is recorded
``interrupted`` the next time this process reads it. The read may be stale, so the store
clears the owner's lease only if it has run out when the clearing statement runs
(``Store.disown``), unless the owner's process is known gone: a live run is never disowned.

A research no run of this process holds (a restore, a follow-up, a waiting plan cancelled, a
dead owner's research recorded ``interrupted``) is changed as a :class:`FencedEdit`: read,
checked and edited by the caller, then saved only while nobody has taken it up since the read.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import anyio

from foundry_mcp.errors import FoundryError, StoreUnavailableError
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.runs.ending import abort
from foundry_mcp.research.runs.jobs import JobRunner
from foundry_mcp.research.runs.runner import ResearchRunner
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import LeaseLostError, Owner, Ownership
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.records import Fingerprint, StatusRead

log = logging.getLogger(__name__)

LEASE_SECONDS = 20.0
RENEW_EVERY_SECONDS = 5.0
# Longest wait for a cancel request: a run started meanwhile is watched from the next wait on.
CANCEL_WAIT_SECONDS = 1.0
IDLE_SECONDS = 0.25  # between looks at the job list while nothing runs, or after a store error
FINISHING_SECONDS = 10.0  # a run that saved its end, letting go of its lease
OWNER_STOPPED = "The process running this research stopped before it finished."


class OwnershipWatch:
    """Renews this process's leases, obeys cancel requests, and marks dead owners' research."""

    def __init__(
        self, io: AsyncStore, jobs: JobRunner, runner: ResearchRunner, owner: Owner
    ) -> None:
        self.io = io
        self.jobs = jobs
        self.runner = runner
        self.owner = owner
        self.lease_seconds = LEASE_SECONDS  # of every lease this process takes (tests shorten it)

    async def heartbeat(self) -> None:
        """Keep this process's leases alive and obey cancel requests from other processes."""
        last_renewal = 0.0
        failing = False  # the store could not be reached: said once, until it can again
        while True:
            running = self.jobs.running_ids()
            watched = self.jobs.uncancelled_ids()  # a run winding down is not cancelled twice
            renew_every = min(RENEW_EVERY_SECONDS, self.lease_seconds / 4)
            cancel: set[str] = set()
            try:
                if time.monotonic() - last_renewal >= renew_every:
                    cancel = await self.io.renew(self.owner, running, self.lease_seconds)
                    last_renewal = time.monotonic()
                cancel &= set(watched)
                if not watched:
                    await anyio.sleep(IDLE_SECONDS)
                elif not cancel:
                    until_renewal = last_renewal + renew_every - time.monotonic()
                    window = max(0.0, min(CANCEL_WAIT_SECONDS, until_renewal))
                    cancel = await self.io.wait_for_cancel(self.owner, watched, window)
                if failing:
                    log.warning("heartbeat reached the store again")
                    failing = False
            except Exception as exc:  # a busy or failing store must not kill the heartbeat
                if not failing:
                    store_failed(log, "heartbeat", exc)
                failing = True
                await anyio.sleep(IDLE_SECONDS)
            for research_id in cancel:
                self.runner.event(research_id, "cancel_received", {"pid": self.owner.pid})
                self.jobs.cancel(research_id)

    async def claim_to_resume(self, state: ResearchState) -> bool:
        """Lease ``state``'s research to this process, to resume it: False when a lease on it
        runs (another worker resuming it holds one) or it was saved since ``state`` was read
        (it ran there meanwhile). Of two workers resuming it at once, exactly one runs it."""
        research_id, lease = state.id, self.lease_seconds
        # A run of this process that saved its end but has not let go of its lease yet: its
        # release (the same owner's) would undo this claim, so it goes first.
        if not await self.jobs.wait(research_id, FINISHING_SECONDS):
            return False

        def claim(store: Store) -> bool:
            ownership = store.ownership(research_id)
            expected = ownership.token if ownership else None
            if not store.claim(research_id, self.owner, lease, expected):
                return False
            if _saved_since(store.fingerprint(research_id), state):
                store.release(research_id, self.owner)
                return False
            return True

        return await self.io.write(claim)

    async def load_checked(self, research_id: str, *, patient: bool = False) -> ResearchState:
        """Load a state; an active one whose owner is gone is recorded ``interrupted``.
        ``patient``: the reads wait out a short outage of the database (a run's, a takeover's)."""

        def read(store: Store) -> tuple[ResearchState, Ownership | None]:
            state = store.load(research_id)
            return state, store.ownership(research_id) if state.status.is_active else None

        state, ownership = await self.io.read(read, patient=patient)
        if ownership is None or not self._orphaned(state, ownership):
            return state
        await self._interrupt(research_id, ownership)
        return await self.io.read(lambda store: store.load(research_id), patient=patient)

    async def settled(self, read: StatusRead) -> StatusRead:
        """``read`` (``Store.load_status``) as it is, or read again after recording its
        research ``interrupted`` when it is active and its owner is gone."""
        if not self._orphaned(read.state, read.ownership):
            return read
        await self._interrupt(read.state.id, read.ownership)
        return await self.io.read(lambda store: store.load_status(read.state.id))

    def _orphaned(self, state: ResearchState, ownership: Ownership) -> bool:
        """Whether ``state`` is active while no live process holds it."""
        running_here = self.jobs.is_running(state.id)
        return state.status.is_active and not ownership.is_alive(self.owner, running_here)

    async def _interrupt(self, research_id: str, ownership: Ownership) -> None:
        """Record a dead owner's research ``interrupted``, unless its lease was renewed since it
        was read (the owner lives) or another process took it over first."""
        process_gone = ownership.process_gone(self.owner)

        def disown(store: Store) -> bool:
            if not store.disown(research_id, ownership.token, process_gone=process_gone):
                return False
            edit = FencedEdit(store, store.load(research_id), None)  # disowned: nobody's now
            if not edit.state.status.is_active:
                return False
            abort(edit.state, Status.INTERRUPTED, "interrupted")
            edit.state.error = OWNER_STOPPED
            return edit.save()  # False: another worker took it over since the disown

        if await self.io.write(disown):
            self.runner.event(
                research_id, "interrupted", {"previous_owner_pid": ownership.pid}, owned=False
            )

    async def recover_orphans(self) -> list[str]:
        """Mark research left active by stopped processes as interrupted; returns their ids."""
        recovered = []
        for research_id in await self.io.read(lambda store: store.active_ids()):
            try:
                if (await self.load_checked(research_id)).status is Status.INTERRUPTED:
                    recovered.append(research_id)
            except FoundryError:
                continue
        return recovered


@dataclass(frozen=True)
class FencedEdit:
    """An edit of a research no run of this process holds, on the writer thread: its state as
    read, and the owner token it was read with, which the save is fenced on.

    The caller checks that ``state`` may change (raising, or not saving, when it may not), edits
    it and calls :meth:`save`, which lands only while nobody has taken the research up since the
    read (``Store.save_unowned``): a research resumed meanwhile is never overwritten.
    """

    store: Store
    state: ResearchState
    token: str | None  # its owner's token when read (None: nobody's)

    @classmethod
    def read(cls, store: Store, research_id: str) -> FencedEdit:
        """The research as saved now (``Store.load_status``: without its page text)."""
        read = store.load_status(research_id)
        return cls(store, read.state, read.ownership.token)

    def save(self) -> bool:
        """Save the edited state; False, saving nothing, when another process claimed the
        research since it was read, or it was deleted (``LeaseLostError``)."""
        try:
            self.store.save_unowned(self.state, self.token)
        except LeaseLostError:
            return False
        return True


def _saved_since(fingerprint: Fingerprint | None, state: ResearchState) -> bool:
    """Whether the research ran (or was deleted) after ``state`` was read: its status, phase or
    iteration moved. Its time is not compared: the row's and the state's may differ without a
    run (a repair by hand, a migration), and a run that ended where it began changes nothing a
    resume would repeat (its paid steps are in the journal)."""
    now = (state.status.value, state.phase.value, state.iteration)
    return fingerprint is None or tuple(fingerprint[:3]) != now


def store_failed(logger: logging.Logger, loop: str, exc: Exception) -> None:
    """Log that a background loop (the heartbeat, the takeover scan) could not reach the store:
    a warning for a store out of reach (a database restarting says so, it needs no traceback),
    the whole traceback for anything else."""
    if isinstance(exc, StoreUnavailableError):
        logger.warning("%s could not reach the store; retrying: %s", loop, exc.message)
    else:
        logger.error("%s could not reach the store; retrying", loop, exc_info=exc)
