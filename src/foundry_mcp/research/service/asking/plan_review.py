"""A plan shown before anything is searched (``review_plan``): what the user sees, the edits
they may make, and the approval form.

A research started with ``review_plan`` stops after planning with status ``waiting``: no
process works on it, so it survives restarts. The plan is in its status; resuming it approves
the plan (as shown, or as edited with ``plan``); cancelling it ends it (resumable as any
cancelled research). A client that can be asked gets the plan as a form the first time it asks
for the status of the waiting research; its answer applies only while the research still waits
for the plan the form showed (:func:`waits_for`, :mod:`.plan_approval`).
"""

from __future__ import annotations

from typing import Any

from foundry_mcp.errors import InputError
from foundry_mcp.research.models import (
    PlanReview,
    ResearchMode,
    ResearchState,
    Status,
    SubQuery,
    SubQuestion,
    utcnow,
)
from foundry_mcp.research.service.asking.asker import Form, Question, Reply
from foundry_mcp.research.service.inputs import check_preferred_sources

MAX_QUERY_CHARS = 400


def plan_of(state: ResearchState) -> dict[str, Any]:
    """The plan as the user reviews it: the parts or searches, and the sources to prefer."""
    return {
        "mode": state.mode.value,
        "research_brief": state.research_brief or "",
        "queries": _queries(state),
        "editable": state.mode is not ResearchMode.HYPOTHESES,
        "preferred_sources": list(state.options.preferred_sources),
        "source_types": list(state.options.search.source_types),
    }


def waits_for(state: ResearchState, plan: dict[str, Any] | None) -> bool:
    """Whether ``state`` waits for its plan's approval; with ``plan`` (:func:`plan_of`, as a
    form showed it), for that very plan, undecided since."""
    if state.status is not Status.WAITING:
        return False
    if plan is None:
        return True
    review = state.plan_review
    return review is not None and review.state == "waiting" and plan_of(state) == plan


def _queries(state: ResearchState) -> list[str]:
    if state.mode is ResearchMode.HIERARCHICAL:
        return [sq.question for sq in state.sub_questions]
    if state.mode is ResearchMode.HYPOTHESES:
        return [h.statement for h in state.hypotheses]
    return [sq.query for sq in state.sub_queries if sq.iteration == state.iteration]


def approve(state: ResearchState, plan: Any) -> bool:
    """Approve the waiting plan, replaced by ``plan`` when one is given; True when edited.

    ``plan`` is a list of queries (sub-questions in hierarchical mode) or an object with
    ``queries`` and/or ``preferred_sources``. A malformed plan is an ``InputError`` and the
    state is left as it was.
    """
    edited = False
    if plan is not None:
        queries, preferred = _read_plan(state, plan)
        if queries is not None and queries != _queries(state):
            _replace_queries(state, queries)
            edited = True
        if preferred is not None and preferred != state.options.preferred_sources:
            state.options.preferred_sources = preferred
            edited = True
    state.plan_review = PlanReview(state="edited" if edited else "approved", decided_at=utcnow())
    return edited


def _read_plan(state: ResearchState, plan: Any) -> tuple[list[str] | None, list[str] | None]:
    """The queries and preferred sources of an edited plan, checked (None: not given)."""
    if isinstance(plan, list):
        plan = {"queries": plan}
    if not isinstance(plan, dict) or not plan or set(plan) - {"queries", "preferred_sources"}:
        raise _malformed("an object with queries and/or preferred_sources, or a list of queries")
    queries = plan.get("queries")
    if queries is not None:
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise _malformed("queries as a list of texts")
        queries = list(dict.fromkeys(" ".join(q.split()) for q in queries if q.strip()))
        most = _most_queries(state)
        if not queries or len(queries) > most:
            raise _malformed(f"between 1 and {most} queries (got {len(queries)})")
        if any(len(q) > MAX_QUERY_CHARS for q in queries):
            raise _malformed(f"queries of at most {MAX_QUERY_CHARS} characters each")
        if state.mode is ResearchMode.HYPOTHESES and queries != _queries(state):
            raise InputError(
                "A hypotheses research's plan can be approved or cancelled, not edited.",
                remediation="Resume it without plan to approve it, or cancel it and start a "
                "new research with mode='simple' or 'hierarchical' to choose its parts.",
                details={"field": "plan"},
            )
    preferred = plan.get("preferred_sources")
    if preferred is not None:
        preferred = check_preferred_sources(preferred)
    return queries, preferred


def _most_queries(state: ResearchState) -> int:
    if state.mode is ResearchMode.HIERARCHICAL:
        return state.options.mode.max_sub_questions
    return state.limits.max_sub_queries


def _malformed(expected: str) -> InputError:
    return InputError(
        f"The edited plan is malformed: it must be {expected}.",
        remediation="Resume again with plan as a list of queries, or an object with queries "
        "and preferred_sources; leave plan out to approve the plan as shown. The research "
        "keeps waiting meanwhile.",
        details={"field": "plan"},
    )


def _replace_queries(state: ResearchState, queries: list[str]) -> None:
    """The plan's parts or searches become ``queries``; those kept keep their ids."""
    if state.mode is ResearchMode.HIERARCHICAL:
        kept = {sq.question: sq for sq in state.sub_questions}
        budget = state.sub_questions[0].iteration_budget if state.sub_questions else 1
        state.sub_questions = [
            kept.get(q) or SubQuestion(question=q, iteration_budget=budget, rationale="the user's")
            for q in queries
        ]
        return
    current = [sq for sq in state.sub_queries if sq.iteration == state.iteration]
    kept_queries = {sq.query: sq for sq in current}
    earlier = [sq for sq in state.sub_queries if sq.iteration != state.iteration]
    state.sub_queries = earlier + [
        kept_queries.get(q)
        or SubQuery(query=q, rationale="the user's", priority=i, iteration=state.iteration)
        for i, q in enumerate(queries, start=1)
    ]


# ---------------------------------------------------------------------- the approval form

DECISIONS = ["approve", "cancel"]


def approval_form(state: ResearchState) -> Form:
    """The plan as a form: approve or cancel, and the queries to edit (one per line)."""
    plan = plan_of(state)
    listed = "\n".join(f"{i}. {q}" for i, q in enumerate(plan["queries"], start=1))
    what = "parts" if state.mode is ResearchMode.HIERARCHICAL else "searches"
    message = (
        f"Research plan for: {state.query}\n\n{plan['research_brief']}\n\n"
        f"Planned {what}:\n{listed}\n\nApprove to start searching, or cancel."
    )
    questions = [
        Question(
            name="decision",
            title="Approve this plan?",
            kind="choice",
            choices=DECISIONS,
            default="approve",
            required=True,
        )
    ]
    if plan["editable"]:
        questions.append(
            Question(
                name="queries",
                title=f"The {what}, one per line (edit to change them)",
                default="\n".join(plan["queries"]),
            )
        )
    return Form(message=message, questions=questions)


def edited_queries(reply: Reply) -> list[str] | None:
    """The queries of an accepted approval form (None: not given)."""
    text = reply.text("queries")
    if not text:
        return None
    return [line.strip() for line in text.splitlines() if line.strip()]
