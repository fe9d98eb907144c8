"""Simple mode's evaluator loop end to end: a verdict each round, the reason of an insufficient
one handed to the next round's refiner, and at most two rounds after the first."""

from __future__ import annotations

import json
from typing import Any

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import ResearchState
from foundry_mcp.runtime import research_runtime
from tests.fakes import ResearchBrain
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


async def _research(settings: Settings, max_iterations: int) -> ResearchState:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(
            "How do heat pumps defrost?", max_iterations=max_iterations, mode="simple"
        )
        status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        return service.store.load(started["research_id"])


def new_follow_ups_each_round(brain: ResearchBrain) -> None:
    """Make the fake refiner's follow-up queries differ from round to round (they repeat)."""

    def refine(system: str, user: str) -> str:
        answer: dict[str, Any] = brain.refine(user)
        for assessment in answer["gap_analysis"]:
            for follow_up in assessment["follow_up_queries"]:
                follow_up["query"] += f" round {brain.calls['refiner']}"
        return json.dumps(answer)

    brain.overrides["refiner"] = refine


def _verdicts(state: ResearchState) -> list[tuple[int, bool, str]]:
    return [
        (d.inputs["iteration"], d.outputs["sufficient"], d.outputs["reason"])
        for d in state.decisions
        if d.action == "evaluate_sufficiency" and d.outputs is not None
    ]


async def test_a_sufficient_first_round_completes(settings: Settings, brain: ResearchBrain) -> None:
    brain.gap_iterations = 0
    state = await _research(settings, max_iterations=3)
    assert state.iteration == 1
    assert _verdicts(state) == [(1, True, "No unaddressed gaps: complete.")]
    assert brain.calls["refiner"] == 0


async def test_an_insufficient_round_is_followed_by_one_told_why(
    settings: Settings, brain: ResearchBrain
) -> None:
    brain.gap_iterations = 2  # rounds 1 and 2 leave a gap
    new_follow_ups_each_round(brain)
    state = await _research(settings, max_iterations=3)
    assert state.iteration == 3
    assert _verdicts(state) == [
        (1, False, "Addressable gaps remain."),
        (2, False, "Addressable gaps remain."),
        (3, True, "No unaddressed gaps: complete."),
    ]
    refiner_prompts = [user for agent, _, user in brain.history if agent == "refiner"]
    assert len(refiner_prompts) == 2
    assert "judged insufficient" not in refiner_prompts[0]
    assert "Round 1 was judged insufficient: Addressable gaps remain." in refiner_prompts[1]


async def test_the_refiner_can_judge_the_research_sufficient(
    settings: Settings, brain: ResearchBrain
) -> None:
    def satisfied(system: str, user: str) -> str:
        answer: dict[str, Any] = brain.refine(user)
        answer["iteration_recommendation"] = {
            "should_iterate": False,
            "rationale": "The report already answers the question; the gap is minor.",
        }
        return json.dumps(answer)

    brain.overrides["refiner"] = satisfied
    state = await _research(settings, max_iterations=3)
    assert state.iteration == 1
    assert _verdicts(state) == [
        (1, True, "The report already answers the question; the gap is minor.")
    ]


async def test_an_insufficient_round_without_new_searches_ends_the_research(
    settings: Settings, brain: ResearchBrain
) -> None:
    brain.gap_iterations = 2  # the fake refiner repeats round 1's follow-up query in round 2
    state = await _research(settings, max_iterations=3)
    assert state.iteration == 2
    assert _verdicts(state)[-1] == (
        2,
        False,
        "Addressable gaps remain. No follow-up query is new: complete.",
    )


async def test_at_most_two_rounds_follow_the_first(
    settings: Settings, brain: ResearchBrain
) -> None:
    brain.gap_iterations = 10  # every round leaves a gap
    new_follow_ups_each_round(brain)
    state = await _research(settings, max_iterations=5)
    assert state.iteration == 3
    assert brain.calls["refiner"] == 2
    verdicts = _verdicts(state)
    assert [(round_, sufficient) for round_, sufficient, _ in verdicts] == [
        (1, False),
        (2, False),
        (3, False),
    ]
    assert verdicts[-1][2] == (
        "1 gap(s) remain but simple mode runs at most 2 rounds after the first, although "
        "max_iterations is 5: complete."
    )


async def test_a_smaller_max_iterations_is_respected(
    settings: Settings, brain: ResearchBrain
) -> None:
    brain.gap_iterations = 10
    new_follow_ups_each_round(brain)
    state = await _research(settings, max_iterations=2)
    assert state.iteration == 2
    assert brain.calls["refiner"] == 1


async def test_a_round_that_finds_nothing_new_keeps_the_report_it_has(
    settings: Settings, brain: ResearchBrain
) -> None:
    def analyst(system: str, user: str) -> str:
        if "Iteration: 1/" in user:
            return json.dumps(brain.analyze(user))
        return json.dumps({"findings": [], "gaps": [], "quality_updates": [], "contradictions": []})

    brain.overrides["analyzer"] = analyst
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(
            "How do B-trees stay balanced?", mode="simple", max_iterations=3
        )
        status = await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    assert status["status"] == "completed", status["error"]
    assert state.iteration == 2 and state.report is not None
    assert brain.reports_written == 1  # the report of round 1 was not written again
    last = [d for d in state.decisions if d.action == "decide_iteration"][-1]
    assert "added no finding" in last.rationale and last.outputs is not None
    assert last.outputs["report_rewritten"] is False
