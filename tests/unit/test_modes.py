"""Choosing a mode, repairing a decomposition, sharing the budget, and when a sub-question stops."""

from __future__ import annotations

import pytest

from foundry_mcp.research.models import (
    ComplexityAssessment,
    Confidence,
    Decomposition,
    Finding,
    Gap,
    ModeOptions,
    PlannedSubQuestion,
    PlannerOutput,
    ResearchLimits,
    ResearchMode,
    ResearchState,
    Severity,
    SubQuestion,
)
from foundry_mcp.research.modes.branch import allocate_budgets, sub_question_rule
from foundry_mcp.research.modes.decomposition import sub_questions_from
from foundry_mcp.research.modes.routing import choose_mode, lexical_prior

# --------------------------------------------------------------------------- the lexical prior


@pytest.mark.parametrize(
    ("question", "mode"),
    [
        ("Compare PostgreSQL, MySQL and SQLite for embedded analytics", "hierarchical"),
        ("React vs Vue for a small team?", "hierarchical"),
        ("What are the causes, effects and solutions of urban heat islands?", "hierarchical"),
        ("Three experts disagree; evaluate each position on the 2030 deadline.", "hierarchical"),
        ("Which explanation best accounts for the decline of honeybee colonies?", "hypotheses"),
        ("What is the boiling point of water at sea level?", "simple"),
        ("How does WAL mode work in SQLite?", "simple"),
    ],
)
def test_the_wording_suggests_a_mode(question: str, mode: str) -> None:
    assert lexical_prior(question).suggests.value == mode


def test_the_prior_names_its_signals() -> None:
    prior = lexical_prior("Compare PostgreSQL, MySQL and SQLite for embedded analytics")
    assert "comparison" in prior.hierarchical_signals and prior.strength >= 2


# --------------------------------------------------------------------------- combining


def _assessment(mode: str) -> ComplexityAssessment:
    return ComplexityAssessment.model_validate(
        {"is_complex": mode != "simple", "recommended_mode": mode, "reasoning": "because"}
    )


def test_agreement_is_simple() -> None:
    prior = lexical_prior("Compare A, B and C for X")
    decision = choose_mode(ResearchMode.AUTO, prior, _assessment("hierarchical"), 3, 2)
    assert decision.mode is ResearchMode.HIERARCHICAL
    assert any("planner recommends hierarchical" in r for r in decision.reasons)


def test_strong_wording_outweighs_a_simple_verdict() -> None:
    prior = lexical_prior("Compare PostgreSQL, MySQL and SQLite for embedded analytics")
    decision = choose_mode(ResearchMode.AUTO, prior, _assessment("simple"), 3, 2)
    assert decision.mode is ResearchMode.HIERARCHICAL


def test_one_signal_does_not_outweigh_the_planner() -> None:
    prior = lexical_prior("Why is the sky blue?")
    assert prior.strength == 1
    decision = choose_mode(ResearchMode.AUTO, prior, _assessment("simple"), 0, 2)
    assert decision.mode is ResearchMode.SIMPLE


def test_the_planner_can_see_complexity_the_wording_hides() -> None:
    prior = lexical_prior("How should a hospital network modernise its records system?")
    decision = choose_mode(ResearchMode.AUTO, prior, _assessment("hierarchical"), 3, 2)
    assert decision.mode is ResearchMode.HIERARCHICAL


def test_hierarchical_without_enough_sub_questions_is_simple_with_the_reason() -> None:
    prior = lexical_prior("Compare A, B and C for X")
    decision = choose_mode(ResearchMode.AUTO, prior, _assessment("hierarchical"), 1, 2)
    assert decision.mode is ResearchMode.SIMPLE
    assert decision.fallback and "at least 2" in decision.fallback


def test_an_unreadable_assessment_leaves_it_to_strong_wording() -> None:
    strong = lexical_prior("Compare PostgreSQL, MySQL and SQLite for embedded analytics")
    weak = lexical_prior("Why is the sky blue?")
    assert choose_mode(ResearchMode.AUTO, strong, None, 3, 2).mode is ResearchMode.HIERARCHICAL
    assert choose_mode(ResearchMode.AUTO, weak, None, 0, 2).mode is ResearchMode.SIMPLE


def test_an_asked_for_mode_is_kept() -> None:
    prior = lexical_prior("What is the boiling point of water?")
    decision = choose_mode(ResearchMode.HIERARCHICAL, prior, None, None, 2)
    assert decision.mode is ResearchMode.HIERARCHICAL
    assert decision.requested is ResearchMode.HIERARCHICAL


def test_the_planner_output_reads_a_lenient_assessment_and_decomposition() -> None:
    output = PlannerOutput.model_validate(
        {
            "research_brief": "b",
            "assessment": {"is_complex": True, "recommended_mode": "Decompose"},
            "decomposition": [
                {"question": "What does A cost?", "priority": "high"},
                {"question": "What does B cost?", "priority": 80},
                {"question": "What does C cost?", "priority": "7%"},
            ],
        }
    )
    assert output.assessment is not None
    assert output.assessment.recommended_mode is ResearchMode.HIERARCHICAL
    assert output.decomposition is not None
    assert [q.priority for q in output.decomposition.sub_questions] == [0.9, 0.8, 0.07]
    broken = PlannerOutput.model_validate({"assessment": "yes", "decomposition": 5})
    assert broken.assessment is None and broken.decomposition is None


# --------------------------------------------------------------------------- decomposition


def _decomposition(*questions: tuple[str, float]) -> Decomposition:
    return Decomposition(
        strategy="comparison",
        sub_questions=[PlannedSubQuestion(question=q, priority=p) for q, p in questions],
    )


def test_blank_short_repeated_and_whole_questions_are_dropped() -> None:
    question = "Compare A, B and C for X"
    decomposition = _decomposition(
        ("How does A perform for X?", 0.9),
        ("  how does a   PERFORM for x ", 0.5),
        ("A?", 0.9),
        ("Compare A, B and C for X?", 1.0),
        ("How does B perform for X?", 0.8),
    )
    kept = sub_questions_from(decomposition, question, ModeOptions())
    assert [sq.question for sq in kept] == [
        "How does A perform for X?",
        "How does B perform for X?",
    ]


def test_beyond_the_maximum_the_least_important_go() -> None:
    decomposition = _decomposition(
        *((f"What about aspect {i} of it?", i / 10) for i in range(1, 8))
    )
    kept = sub_questions_from(decomposition, "q", ModeOptions(max_sub_questions=3))
    assert [sq.priority for sq in kept] == [0.5, 0.6, 0.7]  # in the planner's order


def test_iteration_budgets_follow_priority_within_the_bounds() -> None:
    questions = [
        SubQuestion(question="essential part?", priority=1.0),
        SubQuestion(question="useful part?", priority=0.5),
        SubQuestion(question="minor part?", priority=0.1),
    ]
    allocate_budgets(
        questions, 3, ModeOptions(sub_question_min_iterations=1, sub_question_max_iterations=4)
    )
    # 9 iterations in all, shared 1.0 : 0.5 : 0.1.
    assert [sq.iteration_budget for sq in questions] == [4, 3, 1]


# --------------------------------------------------------------------------- stopping


def _branch(
    iteration: int, budget: int, confidences: list[Confidence], **gap: object
) -> ResearchState:
    state = ResearchState(
        query="sub-question?",
        llm_provider="p",
        llm_model="m",
        iteration=iteration,
        limits=ResearchLimits(max_iterations=budget),
    )
    state.findings = [Finding(content=f"fact {i}", confidence=c) for i, c in enumerate(confidences)]
    if gap:
        state.gaps = [Gap(description="open", **gap)]  # type: ignore[arg-type]
    return state


def test_enough_findings_stop_the_sub_question() -> None:
    call = sub_question_rule(1)(_branch(1, 3, [Confidence.LOW] * 3, severity=Severity.MODERATE))
    assert not call.iterate and "sufficient_findings" in call.outputs["stop_reasons"]


def test_confident_findings_stop_it_too() -> None:
    call = sub_question_rule(1)(_branch(1, 3, [Confidence.HIGH, Confidence.MEDIUM]))
    assert not call.iterate and "high_quality_findings" in call.outputs["stop_reasons"]


def test_never_before_its_minimum() -> None:
    call = sub_question_rule(2)(_branch(1, 3, [Confidence.HIGH] * 4))
    assert call.iterate and call.outputs["stop_reasons"] == ["min_iterations_not_met"]


def test_critical_gaps_keep_it_going_within_its_budget() -> None:
    going = sub_question_rule(1)(_branch(2, 3, [Confidence.HIGH] * 3, severity=Severity.CRITICAL))
    assert going.iterate and "critical_gaps_remain" in going.outputs["stop_reasons"]
    spent = sub_question_rule(1)(_branch(3, 3, [Confidence.HIGH] * 3, severity=Severity.CRITICAL))
    assert not spent.iterate and "iteration_budget_used" in spent.outputs["stop_reasons"]


def test_thin_findings_with_gaps_go_round_again() -> None:
    call = sub_question_rule(1)(_branch(1, 3, [Confidence.LOW], severity=Severity.MODERATE))
    assert call.iterate
