"""Several workers sharing one store: research whose worker died is resumed by another.

When server processes share a PostgreSQL store, each research is run by exactly one of them,
the holder of its lease. A worker that dies without a clean stop (SIGKILL, a lost machine)
stops renewing its leases; once a lease has run out (:meth:`Ownership.is_alive`: across
hosts the lease decides; on the owner's host a dead pid is dead at once), every other
worker's takeover loop sees an orphan. Each one then tries a compare-and-swap claim from the
dead owner's token to its own, which the store grants only if that lease has still run out
when the claim runs (an owner that renewed it since the scan keeps its research): exactly one
wins and resumes the research, exactly as ``resume`` does (journaled LLM answers and finished
searches are replayed, not bought again); the losers change nothing.

An orphan is an active research (queued, running, cancelling) whose owner is not alive, or a
research recorded ``interrupted`` within ``ORPHAN_WINDOW`` because its server stopped: died (a
status read on any worker records that, see ``OwnershipWatch.load_checked``) or stopped cleanly
(a rolling restart: the research continues on another worker, not waiting for its user).
Research cancelled, failed or timed out is left alone.

Enabled by ``[research] take_over_orphans`` (default: on with a PostgreSQL store, off with
SQLite, where ``auto_resume`` covers a restart of the one server).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import anyio

from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.errors import FoundryError
from foundry_mcp.research.models import Status, utcnow
from foundry_mcp.research.runs.ending import SERVER_STOPPED, abort
from foundry_mcp.research.service.ownership import OWNER_STOPPED, store_failed
from foundry_mcp.research.store.owners import Ownership
from foundry_mcp.research.store.protocol import Store

if TYPE_CHECKING:
    from foundry_mcp.research.service.research_service import ResearchService

log = logging.getLogger(__name__)

ORPHAN_WINDOW = timedelta(hours=1)  # older interrupted research is resumed by a person only
STOPPED = (OWNER_STOPPED, SERVER_STOPPED)  # why research a worker takes over was interrupted
TAKEOVER_SCAN = 50  # candidates (lease run out, or just interrupted) looked at per scan


def takeover_enabled(research: ResearchSettings) -> bool:
    """Whether this worker takes over orphans: the setting, else on for a shared store."""
    if research.take_over_orphans is not None:
        return research.take_over_orphans
    return research.store_url is not None


@dataclass(frozen=True)
class Orphan:
    """A research some worker should resume, and its ownership as seen by the scan."""

    research_id: str
    ownership: Ownership


class Takeover:
    """This worker's side of the takeover: find orphans, claim them, resume them."""

    def __init__(
        self,
        service: ResearchService,
        *,
        interval: float | None = None,
        max_running: int | None = None,
    ) -> None:
        research = service.settings.research
        self.service = service
        self.interval = research.take_over_interval if interval is None else interval
        self.max_running = research.take_over_max_running if max_running is None else max_running

    async def loop(self) -> None:
        """Every ``interval`` seconds (jittered, so workers do not scan in step), take over."""
        log.info(
            "takeover of orphaned research is on: every %.1f s, owner %s",
            self.interval,
            self.service.owner.token[:8],
        )
        while True:
            await anyio.sleep(self.interval * random.uniform(0.5, 1.5))
            try:
                await self.scan()
            except Exception as exc:  # a store that is briefly unreachable must not end the loop
                store_failed(log, "takeover scan", exc)

    async def scan(self) -> list[str]:
        """One pass: the ids of the research this worker took over."""
        taken = []
        for orphan in await self.orphans():
            if self.full():
                log.info("takeover paused: this worker runs %d research", self.running())
                break
            if await self.take_over(orphan):
                taken.append(orphan.research_id)
        return taken

    def running(self) -> int:
        return len(self.service.jobs.running_ids())

    def full(self) -> bool:
        return self.max_running is not None and self.running() >= self.max_running

    async def orphans(self) -> list[Orphan]:
        """Research whose owner is not alive and that should run: active, or just interrupted
        by its server's stop (read on a reader thread)."""
        return await self.service.io.read(self._orphans)

    def _orphans(self, store: Store) -> list[Orphan]:
        found = []
        for research_id, ownership in store.takeover_candidates(
            self.service.owner, ORPHAN_WINDOW.total_seconds(), TAKEOVER_SCAN
        ):
            if self._alive(research_id, ownership) or ownership.cancel_requested:
                continue  # stopping, not to be resumed: left to reads
            found.append(Orphan(research_id, ownership))
        return found

    async def take_over(self, orphan: Orphan) -> bool:
        """Claim ``orphan`` from its dead owner and resume it here; False if another worker
        was first (or it no longer needs to run)."""
        with self.service.jobs.starting(orphan.research_id):  # ours before its run starts
            return await self._take_over(orphan)

    async def _take_over(self, orphan: Orphan) -> bool:
        service, research_id = self.service, orphan.research_id
        previous = orphan.ownership
        lease = service.watch.lease_seconds
        process_gone = previous.process_gone(service.owner)

        def claim(store: Store) -> str:
            """Compare and swap from the token the scan saw, once its lease has run out (the
            scan's read may be stale) unless its process is known gone: of several workers,
            one wins, and a live owner keeps its research."""
            if not store.claim(
                research_id, service.owner, lease, previous.token, process_gone=process_gone
            ):
                return "lost"
            state = store.load(research_id)
            if state.status.is_active:  # as ``load_checked`` records a dead owner's research
                abort(state, Status.INTERRUPTED, "interrupted")
                state.error = OWNER_STOPPED
                store.save(state, service.owner)
                return "interrupted"
            if not self._should_run(store, research_id):
                store.release(research_id, service.owner)
                return "done"
            return "claimed"

        try:
            claimed = await service.io.write(claim)
            if claimed == "lost":
                log.debug("research %s was taken over by another worker", research_id)
            if claimed in ("lost", "done"):
                return False
            if claimed == "interrupted":
                service.runner.event(
                    research_id, "interrupted", {"previous_owner_pid": previous.pid}
                )
            service.runner.event(
                research_id,
                "taken_over",
                {
                    "pid": service.owner.pid,
                    "host": service.owner.host,
                    "previous_owner_pid": previous.pid,
                    "previous_owner_host": previous.host,
                },
            )
            resumed = await service.writer.resume(research_id, patient=True)
        except FoundryError as exc:
            log.warning("takeover of research %s failed: %s", research_id, exc.message)
            await self._let_go(research_id)
            return False
        log.warning(
            "took over research %s from a stopped worker (host %s, pid %s): resumed at %s",
            research_id,
            previous.host,
            previous.pid,
            resumed["phase"],
        )
        return True

    async def _let_go(self, research_id: str) -> None:
        """Release a research whose takeover failed half-way, so the next scan (of any worker)
        takes it up without waiting for the lease; if the store cannot say so either, the lease
        runs out instead."""
        service = self.service
        try:
            await service.io.write(lambda store: store.release(research_id, service.owner))
        except FoundryError as exc:
            log.warning(
                "research %s stays claimed until its lease runs out: %s", research_id, exc.message
            )

    def _alive(self, research_id: str, ownership: Ownership) -> bool:
        running_here = self.service.jobs.is_running(research_id)
        return ownership.is_alive(self.service.owner, running_here)

    @staticmethod
    def _should_run(store: Store, research_id: str) -> bool:
        """Active, or interrupted by its server's stop within ``ORPHAN_WINDOW``."""
        state = store.load(research_id)
        if state.status.is_active:
            return True
        if state.status is not Status.INTERRUPTED or state.error not in STOPPED:
            return False
        ended = state.completed_at
        return ended is not None and utcnow() - ended <= ORPHAN_WINDOW
