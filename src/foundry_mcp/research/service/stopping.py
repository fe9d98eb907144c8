"""Stopping research: cancel (a run here or elsewhere, or a plan waiting for approval, which
:mod:`.asking.plan_cancel` ends) and delete."""

from __future__ import annotations

from typing import Any

import anyio

from foundry_mcp.errors import InvalidStateError
from foundry_mcp.research.models import Status
from foundry_mcp.research.runs.jobs import JobRunner
from foundry_mcp.research.runs.runner import ResearchRunner
from foundry_mcp.research.service.asking.plan_cancel import cancel_waiting
from foundry_mcp.research.service.ownership import OwnershipWatch
from foundry_mcp.research.service.reads import WAIT_POLL_SECONDS, status_of
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.records import Fingerprint, validate_research_id

CANCEL_WAIT_SECONDS = 2.0
DELETE_WAIT_SECONDS = 10.0


def _is_active(fingerprint: Fingerprint | None) -> bool:
    """Whether a research's stored status (read without its state) says it is being worked on."""
    return fingerprint is not None and Status(fingerprint[0]).is_active


class ResearchStopper:
    """Cancels and deletes any research, run by this process, another, or none."""

    def __init__(
        self,
        *,
        io: AsyncStore,
        jobs: JobRunner,
        runner: ResearchRunner,
        owner: Owner,
        watch: OwnershipWatch,
    ) -> None:
        self.io = io
        self.jobs = jobs
        self.runner = runner
        self.owner = owner
        self.watch = watch

    async def cancel(self, research_id: Any) -> dict[str, Any]:
        """Stop a running research; its partial results stay and it can be resumed."""
        research_id = validate_research_id(research_id)
        state = await self.watch.load_checked(research_id)
        if state.status in (Status.CANCELLING, Status.CANCELLED):
            return {"research_id": research_id, "status": state.status.value}
        if state.status is Status.WAITING:  # nobody runs it: ended here
            return await self._cancel_waiting(research_id)
        if not state.status.is_active:
            raise InvalidStateError(
                f"Research {research_id} is {state.status.value}; there is nothing to cancel.",
                remediation="Only queued or running research can be cancelled.",
            )
        self.runner.event(research_id, "cancel_requested", {"by_pid": self.owner.pid}, owned=False)
        # Status says "cancelling" until the run stops.
        await self.io.write(lambda store: store.request_cancel(research_id))
        if self.jobs.cancel(research_id):
            await self.jobs.wait(research_id, CANCEL_WAIT_SECONDS)
        else:  # run by another process: its heartbeat picks the request up
            with anyio.move_on_after(CANCEL_WAIT_SECONDS):
                while _is_active(await self.io.read(lambda store: store.fingerprint(research_id))):
                    await anyio.sleep(WAIT_POLL_SECONDS)
        status = status_of(await self.io.read(lambda store: store.load_status(research_id)))[
            "status"
        ]
        return {"research_id": research_id, "status": status}

    async def _cancel_waiting(self, research_id: str) -> dict[str, Any]:
        """Cancel a research waiting for its plan's approval, or, resumed meanwhile, ask its
        run to stop."""
        await cancel_waiting(self.watch, research_id)
        status = await self.io.read(lambda store: store.load_status(research_id))
        if status.state.status.is_active:
            return await self.cancel(research_id)
        return {"research_id": research_id, "status": status.state.status.value}

    async def delete(self, research_id: Any) -> dict[str, Any]:
        """Delete a research, cancelling it first if it runs here or elsewhere."""
        research_id = validate_research_id(research_id)
        # RESEARCH_NOT_FOUND before anything else.
        state = await self.watch.load_checked(research_id)
        if self.jobs.cancel(research_id):
            await self.jobs.wait(research_id, DELETE_WAIT_SECONDS)

        def delete(store: Store) -> None:
            if state.status.is_active:
                store.request_cancel(research_id)
            store.delete(research_id)

        await self.io.write(delete)
        # Once the delete is done, and not before: a delete that failed leaves the research
        # as it was, saved as usual (a run still going is refused by the fence from now on).
        self.runner.forget(research_id)
        return {"research_id": research_id, "deleted": True}
