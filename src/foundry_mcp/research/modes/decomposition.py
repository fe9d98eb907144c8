"""A question cut into parts: the decomposition's sub-questions kept, repaired and adopted, a
decomposition that leaves too few falling back to simple mode, and the parts whose answers are
too weak to build on."""

from __future__ import annotations

from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    BranchStatus,
    Confidence,
    Decomposition,
    ModeOptions,
    ResearchMode,
    ResearchState,
    SubQuestion,
)
from foundry_mcp.research.modes.branch import allocate_budgets

MIN_QUESTION_CHARS = 10


def sub_questions_from(
    decomposition: Decomposition | None, question: str, modes: ModeOptions
) -> list[SubQuestion]:
    """The usable sub-questions of a decomposition, repaired.

    Blank, too short, repeated ones and the question itself are dropped; beyond
    ``max_sub_questions`` the least important are dropped. Fewer than ``min_sub_questions``
    remaining means the decomposition is not usable (the caller falls back).
    """
    if decomposition is None:
        return []
    whole = _key(question)
    seen: set[str] = set()
    kept: list[SubQuestion] = []
    for proposed in decomposition.sub_questions:
        text = " ".join(proposed.question.split())
        key = _key(text)
        if len(text) < MIN_QUESTION_CHARS or key in seen or key == whole:
            continue
        seen.add(key)
        kept.append(
            SubQuestion(question=text, priority=proposed.priority, rationale=proposed.rationale)
        )
    if len(kept) > modes.max_sub_questions:
        ranked = sorted(kept, key=lambda sq: sq.priority, reverse=True)[: modes.max_sub_questions]
        kept = [sq for sq in kept if sq in ranked]
    return kept


def adopt_decomposition(
    state: ResearchState, decomposition: Decomposition | None, sub_questions: list[SubQuestion]
) -> None:
    """Make ``sub_questions`` the research's, with their budgets, and record the decomposition."""
    allocate_budgets(sub_questions, state.limits.max_iterations, state.options.mode)
    state.sub_questions = sub_questions
    state.decomposition_strategy = (decomposition.strategy if decomposition else "") or None
    state.record(
        AgentDecision(
            agent=AgentRole.PLANNER,
            action="decompose",
            rationale=(
                f"The question was split into {len(sub_questions)} sub-questions"
                + (f" ({state.decomposition_strategy})" if state.decomposition_strategy else "")
                + "."
            ),
            inputs={"question": state.query[:300]},
            outputs={
                "strategy": state.decomposition_strategy,
                "sub_questions": [
                    {
                        "id": sq.id,
                        "question": sq.question,
                        "priority": sq.priority,
                        "iteration_budget": sq.iteration_budget,
                        "rationale": sq.rationale,
                    }
                    for sq in sub_questions
                ],
            },
        )
    )


def fall_back_to_simple(state: ResearchState, reason: str) -> None:
    """Research the question in simple mode after all, saying why."""
    state.mode = ResearchMode.SIMPLE
    if state.mode_decision is not None:
        state.mode_decision.mode = ResearchMode.SIMPLE
        state.mode_decision.fallback = reason
    state.record_fallback(AgentRole.PLANNER, reason)


def _key(text: str) -> str:
    return " ".join(text.lower().strip(" ?.!").split())


def weak_parts(state: ResearchState) -> list[SubQuestion]:
    """The sub-questions whose answer is too weak to build on: not answered, answered by code
    (the writer failed), or with low confidence."""
    return [
        sq
        for sq in state.sub_questions
        if sq.status is not BranchStatus.COMPLETED
        or sq.synthesis is None
        or sq.synthesis.fallback is not None
        or sq.synthesis.confidence is Confidence.LOW
    ]
