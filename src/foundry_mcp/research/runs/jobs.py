"""Background runs: each research runs in its own cancel scope inside a long-lived task group.

The task group belongs to whoever hosts the service: the MCP server's lifespan, or the CLI.
When the host shuts down, every run is cancelled and records itself as interrupted. Runs begin
at a paced rate (:mod:`foundry_mcp.research.runs.pacing`), so that a crowd of starts or takeovers
does not stall the server's other requests.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

from foundry_mcp.research.runs.pacing import Pacer

log = logging.getLogger(__name__)


@dataclass
class Job:
    """One running research."""

    research_id: str
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    cancel_requested: bool = False


class JobRunner:
    """Starts, tracks and cancels the research runs of this process."""

    def __init__(self, task_group: TaskGroup, pacer: Pacer | None = None) -> None:
        self._task_group = task_group
        self._pacer = pacer or Pacer()
        self._jobs: dict[str, Job] = {}
        self._starting: dict[str, int] = {}  # research being saved or claimed to run here

    def start(self, research_id: str, work: Callable[[Job], Awaitable[None]]) -> Job:
        """Run ``work`` in the background; it receives its ``Job``."""
        job = Job(research_id)
        self._jobs[research_id] = job
        self._task_group.start_soon(self._run, job, work, name=f"research {research_id}")
        return job

    def get(self, research_id: str) -> Job | None:
        return self._jobs.get(research_id)

    def is_running(self, research_id: str) -> bool:
        """Whether this process runs the research, or is about to (see :meth:`starting`)."""
        return research_id in self._jobs or research_id in self._starting

    @contextmanager
    def starting(self, research_id: str) -> Iterator[None]:
        """Within the block the research counts as running here: it is being saved or claimed
        under this process's lease and its run is not scheduled yet. A status read or a
        takeover scan meanwhile must not take it for a dead owner's."""
        self._starting[research_id] = self._starting.get(research_id, 0) + 1
        try:
            yield
        finally:
            left = self._starting.pop(research_id) - 1
            if left:
                self._starting[research_id] = left

    def running_ids(self) -> list[str]:
        return list(self._jobs)

    def uncancelled_ids(self) -> list[str]:
        """The running research not yet asked to stop."""
        return [research_id for research_id, job in self._jobs.items() if not job.cancel_requested]

    def cancel(self, research_id: str) -> bool:
        """Ask a run to stop; in-flight provider calls are cancelled too."""
        job = self._jobs.get(research_id)
        if job is None:
            return False
        job.cancel_requested = True
        job.scope.cancel()
        return True

    async def wait(self, research_id: str, timeout: float) -> bool:
        """Wait until the run ends; False if it is still running after ``timeout``."""
        job = self._jobs.get(research_id)
        if job is None:
            return True
        with anyio.move_on_after(timeout):
            await job.done.wait()
        return job.done.is_set()

    async def _run(self, job: Job, work: Callable[[Job], Awaitable[None]]) -> None:
        try:
            with job.scope:
                try:
                    await self._pacer.turn()
                except anyio.get_cancelled_exc_class():
                    # Cancelled (or the server stopping) before its turn came: the run begins
                    # at once all the same, so that it records the cancel, or "interrupted", as
                    # it does at any other step (the scope stays cancelled: its next unshielded
                    # wait raises again).
                    pass
                await work(job)
        except Exception:  # the work records its own failures; this is a last resort
            log.exception("research %s crashed", job.research_id)
        finally:
            self._jobs.pop(job.research_id, None)
            job.done.set()
