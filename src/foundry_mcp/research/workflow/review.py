"""The pause after planning for the user's approval of the plan (``review_plan``); asking
the user for it is :mod:`foundry_mcp.research.service.asking`'s."""

from __future__ import annotations

from foundry_mcp.research.models import PlanReview, ResearchState


class AwaitingApproval(Exception):
    """The research stops after planning until its user approves the plan; its run ends with
    status waiting."""


def plan_to_approve(state: ResearchState) -> bool:
    """Whether the research now waits for its plan's approval: its own first plan (not a
    sub-question's), asked to be reviewed and not approved yet. Marks it waiting."""
    if state.branch is not None or not state.options.review_plan or state.iteration != 1:
        return False
    if state.plan_review is not None and state.plan_review.state != "waiting":
        return False
    state.plan_review = PlanReview(state="waiting")
    return True
