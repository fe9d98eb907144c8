"""The plan's approval asked of the user when the caller can be asked (MCP elicitation, the
terminal): approve as shown, approve edited, or cancel.

Asked the first time a status of the waiting research is read by such a caller, at most once at
a time per research. An accepted answer approves (resumes) or cancels the research; a declined
form cancels it; a dismissed form or one unanswered in time leaves it waiting (and is not
shown again for ten minutes, however often the status is read), as does an answer that does
not fit the form (refused with an ``InputError``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from foundry_mcp.research.asking import Asker, checked_reply
from foundry_mcp.research.models import Status
from foundry_mcp.research.service.ownership import OwnershipWatch
from foundry_mcp.research.service.plan_review import approval_form, edited_queries
from foundry_mcp.research.service.stopping import ResearchStopper

# Approves a waiting plan (as shown, or the queries given) for the caller; the resume's answer.
Resume = Callable[[str, list[str] | None], Awaitable[dict[str, Any]]]
REASK_SECONDS = 600.0  # a plan left unanswered is not asked about again sooner


class PlanApprovals:
    """Asks the user to approve a waiting plan; see the module."""

    def __init__(self, stopper: ResearchStopper, watch: OwnershipWatch, timeout: float) -> None:
        self.stopper = stopper
        self.watch = watch
        self.timeout = timeout
        self._asking: set[str] = set()  # research whose plan is being asked about now
        # When each plan was last left unanswered: a caller that polls the status is not shown
        # the same form again at once.
        self._unanswered: dict[str, float] = {}

    async def ask(self, research_id: str, asker: Asker, resume: Resume) -> str | None:
        """Ask about the plan of ``research_id`` if it waits and nobody is asked yet; what was
        decided: "approved", "edited", "cancelled", or None (nothing asked or decided).

        ``resume(research_id, plan)`` approves it as the caller's own resume would (their
        limits and quota apply)."""
        left = self._unanswered.get(research_id)
        if research_id in self._asking or (left and time.monotonic() - left < REASK_SECONDS):
            return None
        self._asking.add(research_id)
        try:
            state = await self.watch.load_checked(research_id)
            if state.status is not Status.WAITING:
                return None
            form = approval_form(state)
            reply = checked_reply(form, await asker.ask(form, self.timeout))
            if reply.action == "decline" or reply.text("decision") == "cancel":
                await self.stopper.cancel(research_id)
                return "cancelled"
            if reply.action != "accept":  # dismissed or unanswered: it keeps waiting
                self._unanswered[research_id] = time.monotonic()
                return None
            self._unanswered.pop(research_id, None)
            queries = edited_queries(reply)
            resumed = await resume(research_id, queries)
            return str(resumed.get("plan", "approved"))
        finally:
            self._asking.discard(research_id)
