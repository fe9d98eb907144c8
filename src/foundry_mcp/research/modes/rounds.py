"""When a simple loop goes round again, and seed 003's evaluator loop over its rounds.

A :data:`StoppingRule` decides after each synthesis whether to refine and go round again
(an :class:`IterationCall`). Simple mode's own rule is :func:`gaps_rule`: iterate while
unaddressed gaps remain, at most ``MAX_EXTRA_ROUNDS`` rounds after the first even when
``max_iterations`` allows more. Each of its rounds ends with the evaluator's verdict
(:func:`record_verdict`, the ``evaluate_sufficiency`` decision): sufficient, or insufficient
with a reason, which the next round's refiner is given as guidance (:func:`round_feedback`).
What the supervisor asks itself after each phase of a round is :func:`phase_question`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from foundry_mcp.research.models import AgentDecision, AgentRole, Phase, ResearchState

MAX_EXTRA_ROUNDS = 2  # seed 003's evaluator loop: at most two rounds after the first


@dataclass(frozen=True)
class IterationCall:
    """Whether to go round again after a synthesis, and why (recorded as a decision)."""

    iterate: bool
    rationale: str
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)


StoppingRule = Callable[[ResearchState], IterationCall]


def gaps_rule(state: ResearchState) -> IterationCall:
    """Iterate while unaddressed gaps remain and iterations are left (the primary seed's rule),
    at most ``MAX_EXTRA_ROUNDS`` after the first (seed 003's cap)."""
    gaps = len(state.unaddressed_gaps())
    requested = state.limits.max_iterations
    limit = min(requested, 1 + MAX_EXTRA_ROUNDS)
    iterate = gaps > 0 and state.iteration < limit
    if iterate:
        rationale = f"{gaps} unaddressed gap(s) and iterations remain: refine."
    elif gaps and limit < requested:
        rationale = (
            f"{gaps} gap(s) remain but simple mode runs at most {MAX_EXTRA_ROUNDS} rounds after "
            f"the first, although max_iterations is {requested}: complete."
        )
    elif gaps:
        rationale = f"{gaps} gap(s) remain but the iteration limit is reached: complete."
    else:
        rationale = "No unaddressed gaps: complete."
    return IterationCall(
        iterate,
        rationale,
        {
            "gap_count": gaps,
            "iteration": state.iteration,
            "max_iterations": requested,
            "round_limit": limit,
        },
    )


def record_verdict(
    state: ResearchState, sufficient: bool, reason: str, *, another_round: bool
) -> None:
    """The evaluator's verdict on this round (seed 003): sufficient, or why not."""
    decide(
        state,
        "evaluate_sufficiency",
        f"{'Sufficient' if sufficient else 'Insufficient'}: {reason}",
        {"iteration": state.iteration, "extra_rounds_used": state.iteration - 1},
        {"sufficient": sufficient, "reason": reason, "another_round": another_round},
    )


def round_feedback(state: ResearchState) -> str | None:
    """Why the previous round was judged insufficient, as guidance for this round's refiner."""
    for decision in reversed(state.decisions):
        if (
            decision.action == "evaluate_sufficiency"
            and decision.inputs.get("iteration") == state.iteration - 1
            and decision.outputs is not None
            and not decision.outputs.get("sufficient", True)
        ):
            return (
                f"Round {state.iteration - 1} was judged insufficient: "
                f"{decision.outputs.get('reason', '')} Aim the follow-ups at what is still "
                "missing."
            )
    return None


def decide(
    state: ResearchState,
    action: str,
    rationale: str,
    inputs: dict[str, Any],
    outputs: dict[str, Any] | None,
) -> None:
    """Record the supervisor's decision on a round."""
    state.record(
        AgentDecision(
            agent=AgentRole.SUPERVISOR,
            action=action,
            rationale=rationale,
            inputs=inputs,
            outputs=outputs,
        )
    )


def phase_question(state: ResearchState, phase: Phase) -> str:
    """The supervisor's reflection question after ``phase`` of a round of simple mode."""
    iteration = f"{state.iteration}/{state.limits.max_iterations}"
    if phase is Phase.PLANNING:
        count = sum(1 for sq in state.sub_queries if sq.iteration == state.iteration)
        return (
            f"Planning done: {count} sub-queries, research brief "
            f"{'present' if state.research_brief else 'missing'}. Do the sub-queries cover the "
            "question, and is any aspect missing?"
        )
    if phase is Phase.GATHERING:
        return (
            f"Gathering done: {len(state.sources)} sources collected. Are the sources diverse "
            "enough, and how is their quality spread?"
        )
    if phase is Phase.ANALYSIS:
        return (
            f"Analysis done: {len(state.findings)} findings, {len(state.gaps)} gaps. Are the "
            "findings well supported, and which gaps are critical?"
        )
    if phase is Phase.SYNTHESIS:
        return (
            f"Synthesis done: report of {len(state.report or '')} characters, iteration "
            f"{iteration}. Is the report good enough, or does it need refinement?"
        )
    addressed = sum(1 for g in state.gaps if g.addressed)
    return (
        f"Refinement done: {addressed}/{len(state.gaps)} gaps addressed. Iterate again or finalise?"
    )
