"""Simple mode's evaluator loop (seed 003): a verdict each round, at most two extra rounds."""

from __future__ import annotations

import pytest

from foundry_mcp.research.llm.calls import CallLog
from foundry_mcp.research.models import Gap, Phase, ResearchLimits, ResearchState
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.modes.rounds import MAX_EXTRA_ROUNDS, IterationCall, gaps_rule
from foundry_mcp.research.modes.simple import SimplePlaybook


def _state(iteration: int, max_iterations: int, gaps: int) -> ResearchState:
    state = ResearchState(
        query="Do heat pumps work in cold climates?",
        llm_provider="openai",
        llm_model="m",
        limits=ResearchLimits(max_iterations=max_iterations),
        iteration=iteration,
    )
    state.gaps = [Gap(description=f"gap {n}", iteration=iteration) for n in range(gaps)]
    return state


@pytest.mark.parametrize(
    ("iteration", "max_iterations", "iterate", "said"),
    [
        (1, 5, True, "iterations remain"),
        (1 + MAX_EXTRA_ROUNDS - 1, 5, True, "iterations remain"),
        (1 + MAX_EXTRA_ROUNDS, 5, False, "at most 2 rounds after the first"),
        (1 + MAX_EXTRA_ROUNDS, 3, False, "iteration limit is reached"),
        (2, 2, False, "iteration limit is reached"),  # a smaller max_iterations is respected
    ],
)
def test_simple_mode_runs_at_most_two_extra_rounds(
    iteration: int, max_iterations: int, iterate: bool, said: str
) -> None:
    call = gaps_rule(_state(iteration, max_iterations, gaps=1))
    assert call.iterate is iterate
    assert said in call.rationale
    assert call.inputs["round_limit"] == min(max_iterations, 1 + MAX_EXTRA_ROUNDS)


async def _no_checkpoint() -> None:
    return None


def _playbook(state: ResearchState, **options: object) -> SimplePlaybook:
    kit = ResearchKit(llm=None, search=[], calls=CallLog(), checkpoint=_no_checkpoint)  # type: ignore[arg-type]
    return SimplePlaybook(state, kit, **options)  # type: ignore[arg-type]


def _verdicts(state: ResearchState) -> list[tuple[bool, str]]:
    return [
        (d.outputs["sufficient"], d.outputs["reason"])
        for d in state.decisions
        if d.action == "evaluate_sufficiency" and d.outputs is not None
    ]


def test_a_round_without_gaps_is_sufficient() -> None:
    state = _state(1, 3, gaps=0)
    assert _playbook(state).next_phase(Phase.SYNTHESIS, complete_early=False) is None
    assert _verdicts(state) == [(True, "No unaddressed gaps: complete.")]


def test_the_cap_ends_an_insufficient_research_and_says_so() -> None:
    state = _state(3, 5, gaps=2)
    assert _playbook(state).next_phase(Phase.SYNTHESIS, complete_early=False) is None
    ((sufficient, reason),) = _verdicts(state)
    assert not sufficient and "at most 2 rounds after the first" in reason


def test_a_round_that_goes_on_is_judged_after_its_refinement() -> None:
    state = _state(1, 3, gaps=1)
    assert _playbook(state).next_phase(Phase.SYNTHESIS, complete_early=False) is Phase.REFINEMENT
    assert _verdicts(state) == []  # the refiner's answer decides (see the integration tests)


def test_the_reflection_can_judge_the_report_complete() -> None:
    state = _state(1, 3, gaps=1)
    assert _playbook(state).next_phase(Phase.SYNTHESIS, complete_early=True) is None
    assert _verdicts(state) == [(True, "The supervisor's reflection judged the report complete.")]


def test_a_researcher_with_its_own_rule_has_no_evaluator_loop() -> None:
    state = _state(4, 10, gaps=0)
    stop = IterationCall(False, "Its findings suffice.")
    assert _playbook(state, stopping=lambda s: stop).next_phase(Phase.SYNTHESIS, False) is None
    assert _verdicts(state) == []
    assert any(d.action == "decide_iteration" for d in state.decisions)
