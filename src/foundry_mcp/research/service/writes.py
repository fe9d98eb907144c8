"""The write side of the research service: resume and restore (a start is the ``starting``
room's, cancel and delete are ``stopping``'s).

A resume checks its input and the providers before anything is saved, as a start does, so a
research that cannot go on fails at once, naming the fix, instead of in the background.
"""

from __future__ import annotations

from typing import Any

import anyio

from foundry_mcp.config.research_settings import LimitArgs
from foundry_mcp.errors import InputError, InvalidStateError
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    Phase,
    ResearchMode,
    Status,
    SubQueryStatus,
)
from foundry_mcp.research.service.asking.plan_review import approve, waits_for
from foundry_mcp.research.service.inputs import check_can_continue, research_limits, stopped_parts
from foundry_mcp.research.service.ownership import FencedEdit
from foundry_mcp.research.service.parts import ServiceParts
from foundry_mcp.research.service.restore import restore_content
from foundry_mcp.research.service.starting.again import check_providers, run_again
from foundry_mcp.research.store.archive import StoreArchive
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.records import validate_research_id


class ResearchWriter(ServiceParts):
    """Resumes this process's runs; restores content into any research."""

    async def resume(
        self,
        research_id: Any,
        limits: LimitArgs | None = None,
        *,
        plan: Any = None,
        patient: bool = False,
        shown: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Continue an unfinished research from its saved phase, without redoing work.

        A completed research given a larger ``max_iterations`` continues with a refinement
        round, if gaps are still open. A research waiting for its plan's approval goes on with
        the plan, or with ``plan`` (:mod:`.asking.plan_review`); with ``shown`` (the plan an approval
        form showed) only while it still waits for that plan, undecided: ``InvalidStateError``
        otherwise. ``patient``: its reads wait out a short outage of the database, as its
        writes do (a takeover, which no user is waiting on).
        """
        research_id = validate_research_id(research_id)
        # Claimed under our lease before its run starts, and never left claimed but not run
        # by a caller that gives up meanwhile (shielded).
        with self.jobs.starting(research_id), anyio.CancelScope(shield=True):
            resumed = await self._resume(research_id, limits, patient, plan, shown)
        return resumed

    async def _resume(
        self,
        research_id: str,
        limits: LimitArgs | None,
        patient: bool,
        plan: Any,
        shown: dict[str, Any] | None,
    ) -> dict[str, Any]:
        state = await self.watch.load_checked(research_id, patient=patient)
        # A form's late approval: the claim below fails if it changes between this read and then.
        if shown is not None and not waits_for(state, shown):
            raise InvalidStateError(
                f"Research {research_id} no longer waits for the plan the form showed.",
                remediation="Read its status: action='deep-research-status'.",
            )
        if state.status.is_active:
            raise InvalidStateError(
                f"Research {research_id} is {state.status.value}; it is still being worked on.",
                remediation="Wait for it with action='deep-research-status' and wait=true.",
            )
        if plan is not None and state.status is not Status.WAITING:
            raise InputError(
                f"Research {research_id} is {state.status.value}, not waiting for its plan's "
                "approval; plan applies only to a research started with review_plan=true "
                "whose status is waiting.",
                remediation="Resume it without plan.",
                details={"field": "plan"},
            )
        edited = approve(state, plan) if state.status is Status.WAITING else None
        continuing = state.status is Status.COMPLETED
        given = limits or {}
        if continuing:
            check_can_continue(state, given.get("max_iterations"))
        state.limits = research_limits(self.settings.research, state.limits, given)
        check_providers(self, state)
        if not await self.watch.claim_to_resume(state):
            raise InvalidStateError(
                f"Research {research_id} was just resumed by another process.",
                remediation="Follow it with action='deep-research-status'.",
            )
        previous = state.status
        if continuing:  # a round more, or the sub-questions that were stopped
            state.phase = Phase.GATHERING if stopped_parts(state) else Phase.REFINEMENT
        state.record(
            AgentDecision(
                agent=AgentRole.SUPERVISOR,
                action="resume",
                rationale=f"Resumed from {previous.value} at {state.phase.value}.",
                inputs={"phase": state.phase.value, "iteration": state.iteration},
                outputs={"limits": state.limits.model_dump()},
            )
        )
        for key in (
            "cancelled",
            "timeout",
            "interrupted",
            "failed",
            "timeout_phase",
            "cost_ceiling_reached",
        ):
            state.metadata.pop(key, None)
        if state.phase is Phase.GATHERING:  # searches that failed get another chance
            for sub_query in state.sub_queries:
                if (
                    sub_query.iteration == state.iteration
                    and sub_query.status is SubQueryStatus.FAILED
                ):
                    sub_query.status = SubQueryStatus.PENDING
                    sub_query.error = None
        await run_again(
            self, state, "resumed", {"from": previous.value, "phase": state.phase.value}
        )
        resumed = {
            "research_id": research_id,
            "status": state.status.value,
            "phase": state.phase.value,
            "iteration": state.iteration,
            "resumed_from": previous.value,
        }
        if edited is not None:
            resumed["plan"] = "edited" if edited else "approved"
        return resumed

    async def restore_content(self, research_id: Any, item_id: Any) -> dict[str, Any]:
        """Bring a dropped (archived) source back into a stopped research; resume it next."""
        research_id = validate_research_id(research_id)
        if not isinstance(item_id, str) or not item_id.strip():
            raise InputError("item_id must name a source id.", details={"field": "item_id"})
        state = await self.watch.load_checked(research_id)
        if state.mode is not ResearchMode.SIMPLE:
            raise InvalidStateError(
                f"Research {research_id} ran in {state.mode.value} mode, whose sources belong to "
                "its researchers; restoring archived content works for simple research only.",
                remediation=(
                    "Start a new research in simple mode (mode='simple') on the part you need, "
                    "or raise the token budget (model_context_overrides) so nothing is dropped."
                ),
            )
        enabled = state.options.token_budget.archive_enabled
        item = item_id.strip()

        def restore(store: Store) -> dict[str, Any]:
            """Read what the restore needs (the pages the store keeps, the archive in the store)
            and save, fenced: only while nobody has taken the research up meanwhile."""
            edit = FencedEdit.read(store, research_id)
            store.load_pages(edit.state)  # a text the store still keeps needs no archive
            disk = self.context.archive()
            archive = StoreArchive.beside(disk, store, research_id) if enabled else None
            result = restore_content(edit.state, item, archive)
            if not edit.save():
                raise InvalidStateError(
                    f"Research {research_id} was resumed by another server meanwhile.",
                    remediation="Restore the source once it stops "
                    "(action='deep-research-status' says when).",
                )
            return result

        result = await self.io.write(restore)
        self.runner.event(research_id, "content_restored", {"item_id": item}, owned=False)
        return result
