"""What the status and the start's answer say of the research's talk with its user: what was
asked before researching (or assumed), and the plan waiting for approval."""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.service.asking.plan_review import plan_of


def clarified(state: ResearchState) -> dict[str, Any]:
    """``{"clarification": ...}`` when the question was clarified or assumptions were made."""
    clarification = state.clarification
    if clarification is None:
        return {}
    return {
        "clarification": {
            "outcome": clarification.outcome,
            "asked": [
                {
                    "question": q.question,
                    **({"choices": q.choices} if q.choices else {}),
                    "answer": clarification.answers.get(q.id),
                }
                for q in clarification.questions
            ],
            "assumptions": clarification.assumptions,
        }
    }


def conversation_status(state: ResearchState) -> dict[str, Any]:
    """The status's part of it: the clarification, and the plan while it waits for approval."""
    shown = clarified(state)
    if state.status is Status.WAITING:
        shown["waiting_for"] = "plan_approval"
        shown["plan"] = plan_of(state)
    if state.plan_review is not None and state.status is not Status.WAITING:
        shown["plan_review"] = state.plan_review.state
    return shown


def waiting_hint(state: ResearchState) -> str:
    """What to do with a research waiting for its plan's approval."""
    rid = state.id
    return (
        "The plan waits for the user's approval; nothing has been searched. Show it to the "
        f"user, then approve it: action='deep-research-resume', research_id='{rid}' (give plan "
        "to change its queries), or cancel it: action='deep-research-cancel'."
    )


UNCLARIFIED = {
    "not_asked": "could not be clarified with the user",
    "dismissed": "was not clarified: the questions were closed unanswered",
    "timed_out": "was not clarified: the questions got no answer in time",
    "declined": "was not clarified: the user declined the questions",
}


def assumptions_hint(state: ResearchState) -> str:
    """A note for a caller whose user did not answer (could not be asked, closed the form,
    did not answer in time, declined): the research assumed things."""
    clarification = state.clarification
    why = UNCLARIFIED.get(clarification.outcome) if clarification is not None else None
    if why is None:
        return ""
    return (
        f" The question was ambiguous and {why}; the research assumed what "
        "clarification.assumptions says. If that is not what the user meant, start again with "
        "a sharper question."
    )
