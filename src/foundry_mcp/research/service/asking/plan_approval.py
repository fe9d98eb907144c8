"""The plan's approval asked of the user when the caller can be asked (MCP elicitation, the
terminal): approve as shown, approve edited, or cancel.

Asked the first time a status of the waiting research is read by such a caller, at most once at
a time per research. An accepted answer approves (resumes) or cancels the research; a declined
form cancels it; a dismissed form or one unanswered in time leaves it waiting (and is not
shown again for ten minutes, however often the status is read), as does an answer that does
not fit the form (refused with an ``InputError``).

An answer may come minutes after the form was shown: it applies only while the research still
waits for the plan the form showed, undecided (:func:`.plan_review.waits_for`), checked in the
same fenced read and write that applies it. A research another client approved or cancelled
meanwhile is left as they left it, and the answer says why it was not applied.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from foundry_mcp.errors import InvalidStateError
from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.service.asking.asker import Asker, checked_reply
from foundry_mcp.research.service.asking.plan_cancel import cancel_waiting
from foundry_mcp.research.service.asking.plan_review import approval_form, edited_queries, plan_of
from foundry_mcp.research.service.ownership import OwnershipWatch

# Approves a waiting plan (as shown, or the queries given) for the caller, only while it waits
# for the plan shown (the third argument, as ``plan_of`` gives it); the resume's answer.
Resume = Callable[[str, list[str] | None, dict[str, Any]], Awaitable[dict[str, Any]]]
REASK_SECONDS = 600.0  # a plan left unanswered is not asked about again sooner
Answer = Literal["approve", "cancel"]


@dataclass(frozen=True)
class PlanAnswer:
    """What became of an answer to the plan's form: ``decided`` ("approved", "edited",
    "cancelled") when applied, else None and ``reason``, what the research did meanwhile."""

    answer: Answer
    decided: str | None
    reason: str = ""

    def shown(self) -> dict[str, Any]:
        """What the status says of it."""
        said: dict[str, Any] = {"answer": self.answer, "applied": self.decided is not None}
        if self.decided is None:
            return {"plan_answer": {**said, "reason": self.reason}}
        return {"plan_review": self.decided, "plan_answer": said}


class PlanApprovals:
    """Asks the user to approve a waiting plan; see the module."""

    def __init__(self, watch: OwnershipWatch, timeout: float) -> None:
        self.watch = watch
        self.timeout = timeout
        self._asking: set[str] = set()  # research whose plan is being asked about now
        # When each plan was last left unanswered: a caller that polls the status is not shown
        # the same form again at once.
        self._unanswered: dict[str, float] = {}

    async def ask(self, research_id: str, asker: Asker, resume: Resume) -> PlanAnswer | None:
        """Ask about the plan of ``research_id`` if it waits and nobody is asked yet; what
        became of the answer (None: nothing asked, or nothing answered).

        ``resume(research_id, plan, shown)`` approves it as the caller's own resume would
        (their limits and quota apply)."""
        left = self._unanswered.get(research_id)
        if research_id in self._asking or (left and time.monotonic() - left < REASK_SECONDS):
            return None
        self._asking.add(research_id)
        try:
            state = await self.watch.load_checked(research_id)
            if state.status is not Status.WAITING:
                return None
            shown = plan_of(state)
            form = approval_form(state)
            reply = checked_reply(form, await asker.ask(form, self.timeout))
            if reply.action == "decline" or reply.text("decision") == "cancel":
                if await cancel_waiting(self.watch, research_id, shown):
                    return PlanAnswer("cancel", "cancelled")
                return await self._moved_on(research_id, "cancel")
            if reply.action != "accept":  # dismissed or unanswered: it keeps waiting
                self._unanswered[research_id] = time.monotonic()
                return None
            self._unanswered.pop(research_id, None)
            try:
                resumed = await resume(research_id, edited_queries(reply), shown)
            except InvalidStateError:  # no longer waits for that plan, or taken up meanwhile
                return await self._moved_on(research_id, "approve")
            return PlanAnswer("approve", str(resumed.get("plan", "approved")))
        finally:
            self._asking.discard(research_id)

    async def _moved_on(self, research_id: str, answer: Answer) -> PlanAnswer:
        """An answer not applied: the research as it is now says why."""
        state = await self.watch.load_checked(research_id)
        return PlanAnswer(answer, None, moved_on(state, answer))


def moved_on(state: ResearchState, answer: Answer) -> str:
    """Why an answer to the plan's form was not applied: what the research did while it was
    open."""
    review = state.plan_review.state if state.plan_review is not None else "waiting"
    if state.status in (Status.CANCELLING, Status.CANCELLED):
        what = "was cancelled"
    elif review != "waiting":
        what = f"had its plan {review} by another client (it is {state.status.value} now)"
    elif state.status is Status.WAITING:
        what = "had its plan changed (the form showed an older one)"
    else:
        what = f"became {state.status.value}"
    verb = "approval" if answer == "approve" else "cancellation"
    return (
        f"The research {what} while the form was open, so the {verb} given in the form was "
        "not applied."
    )
