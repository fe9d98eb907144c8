"""Hooks written as plain functions or coroutines, hooks that fail, the refiner's advice
(priority gaps first, report improvements to the next writer) and what a dispatch records."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import AgentDecision, Phase, ResearchState
from foundry_mcp.research.workflow.supervisor import SupervisorHooks
from foundry_mcp.runtime import research_runtime
from tests.fakes import ResearchBrain
from tests.fakes.brain import ITERATION_RE, question_of
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

GAP_TEXT_RE = re.compile(r"<gap\s+id=\"(gap-[0-9a-f]{8})\"[^>]*>(.*?)</gap>", re.DOTALL)


async def _research(
    settings: Settings,
    query: str,
    hooks: SupervisorHooks | None = None,
    **limits: Any,
) -> ResearchState:
    async with research_runtime(settings, hooks, warm=False) as service:
        started = await service.start(query, mode="simple", **limits)
        await wait_until(service, started["research_id"], TERMINAL)
        return service.store.load(started["research_id"])


def _prompts(brain: ResearchBrain, agent: str) -> list[str]:
    return [user for who, _, user in brain.history if who == agent]


# ---------------------------------------------------------------------- hooks


class PlainHooks(SupervisorHooks):
    """Every hook a plain method; guidance after gathering (to the analyst) and after analysis
    (to the writer). Loaded by name from the configuration below."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def on_phase_start(self, state: ResearchState, phase: Phase) -> None:
        self.started.append(phase.value)

    def on_think_pause(self, state: ResearchState, prompt: str) -> str | None:
        if state.phase is Phase.GATHERING:
            return "Weigh laboratory measurements above vendor claims."
        if state.phase is Phase.ANALYSIS:
            return "Open the report with the measured figures."
        return None


async def test_plain_function_hooks_guide_the_next_agent(
    settings: Settings, brain: ResearchBrain
) -> None:
    settings.research.supervisor_hooks = f"{__name__}:PlainHooks"
    state = await _research(settings, "How efficient are heat pumps?", max_iterations=1)
    assert state.status.value == "completed", state.error
    analyzer, writer = _prompts(brain, "analyzer"), _prompts(brain, "writer")
    # The analysis waited for the think pause after gathering (no pipelining), so every
    # analyst prompt carries the plain hook's guidance; the writer has the later guidance only.
    assert analyzer and all("laboratory measurements" in user for user in analyzer)
    assert writer and all("measured figures" in user for user in writer)
    assert not any("laboratory measurements" in user for user in writer)
    assert [g["after"] for g in state.metadata["guidance"]] == ["gathering", "analysis"]
    assert not any(d.action == "hook_failed" for d in state.decisions)


async def test_plain_phase_hooks_are_called(settings: Settings, brain: ResearchBrain) -> None:
    hooks = PlainHooks()
    state = await _research(settings, "How do heat pumps defrost?", hooks, max_iterations=1)
    assert hooks.started == ["planning", "gathering", "analysis", "synthesis"]
    assert not any("hook" in warning for warning in state.warnings)


class FailingHooks(SupervisorHooks):
    """A plain hook that raises before synthesis, a coroutine hook that raises at every pause."""

    def on_phase_start(self, state: ResearchState, phase: Phase) -> None:
        if phase is Phase.SYNTHESIS:
            raise ValueError("the style server is down")

    async def on_think_pause(self, state: ResearchState, prompt: str) -> str | None:
        raise RuntimeError(f"no guidance after {state.phase.value}")


async def test_a_raising_hook_is_recorded_and_the_research_goes_on(settings: Settings) -> None:
    state = await _research(settings, "What limits battery life?", FailingHooks(), max_iterations=1)
    assert state.status.value == "completed", state.error
    assert state.report
    failures = [d for d in state.decisions if d.action == "hook_failed"]
    assert failures and all(d.agent.value == "supervisor" for d in failures)
    start = next(d for d in failures if d.inputs["hook"] == "on_phase_start")
    assert start.inputs["phase"] == "synthesis"
    assert start.outputs == {
        "hook": "on_phase_start",
        "error": "ValueError: the style server is down",
    }
    assert "on_phase_start" in start.rationale and "style server is down" in start.rationale
    pauses = [d for d in failures if d.inputs["hook"] == "on_think_pause"]
    assert [d.inputs["phase"] for d in pauses] == ["planning", "gathering", "analysis", "synthesis"]
    assert pauses[0].outputs is not None
    assert pauses[0].outputs["error"] == "RuntimeError: no guidance after planning"
    assert any("on_phase_start failed" in w for w in state.warnings)
    assert "guidance" not in state.metadata


# ---------------------------------------------------------------------- the refiner's advice

IMPROVEMENT = "Add a section comparing running costs in cold and mild climates."


def _two_gaps_then_advice(
    brain: ResearchBrain, priority_gaps: list[str], improvements: list[str]
) -> None:
    """Iteration 1's analysis leaves two gaps (cost: priority 1, noise: priority 2); the refiner
    answers with two follow-ups each, the cost gap listed first, and the given advice (gap
    names in ``priority_gaps`` stand for their ids)."""
    brain.gap_iterations = 0  # no gaps but these two
    added = threading.Event()
    lock = threading.Lock()

    def analyzer(system: str, user: str) -> str:
        answer = brain.analyze(user)
        match = ITERATION_RE.search(user)
        with lock:
            if match and match.group(1) == "1" and not added.is_set():
                added.set()
                answer["gaps"] = [
                    {"description": "Running costs are unknown.", "priority": 1},
                    {"description": "Noise levels are unknown.", "priority": 2},
                ]
        return json.dumps(answer)

    def refiner(system: str, user: str) -> str:
        q = question_of(user)
        found = GAP_TEXT_RE.findall(user)
        ids = {("cost" if "costs" in text else "noise"): gid for gid, text in found}
        return json.dumps(
            {
                "gap_analysis": [
                    {
                        "gap_id": ids[name],
                        "severity": "moderate",
                        "addressable": True,
                        "follow_up_queries": [
                            {"query": f"{q} {name} {n}", "expected_contribution": name}
                            for n in (1, 2)
                        ],
                    }
                    for name in ("cost", "noise")
                    if name in ids  # a later round may list only the gap still open
                ],
                "iteration_recommendation": {
                    "should_iterate": True,
                    "rationale": "Both gaps matter.",
                    "priority_gaps": [ids.get(name, name) for name in priority_gaps],
                },
                "report_improvements": improvements,
            }
        )

    brain.overrides["analyzer"] = analyzer
    brain.overrides["refiner"] = refiner


def _follow_ups(state: ResearchState) -> list[tuple[str, int]]:
    """Iteration 2's sub-queries as (gap name and number, priority), in search order."""
    return [
        (" ".join(sq.query.split()[-2:]), sq.priority)
        for sq in state.sub_queries
        if sq.iteration == 2
    ]


@pytest.mark.parametrize(
    ("priority_gaps", "expected"),
    [
        (["noise"], [("noise 1", 1), ("noise 2", 1), ("cost 1", 2), ("cost 2", 2)]),
        # An unknown id is ignored; gaps not named follow by their own priority.
        (["gap-00000000"], [("cost 1", 1), ("cost 2", 1), ("noise 1", 2), ("noise 2", 2)]),
    ],
)
async def test_follow_ups_of_priority_gaps_come_first(
    settings: Settings,
    brain: ResearchBrain,
    priority_gaps: list[str],
    expected: list[tuple[str, int]],
) -> None:
    _two_gaps_then_advice(brain, priority_gaps, [])
    state = await _research(settings, "Are heat pumps worth it?", max_iterations=3)
    assert state.status.value == "completed", state.error
    assert _follow_ups(state) == expected
    ids = {("cost" if "costs" in g.description else "noise"): g.id for g in state.gaps}
    advice = next(d for d in state.decisions if d.action == "assess_gaps")
    assert advice.agent.value == "refiner" and advice.outputs is not None
    assert advice.outputs["priority_gaps"] == [ids[n] for n in priority_gaps if n in ids]
    first = expected[0][0].split()[0]
    assert advice.outputs["follow_up_order"][0] == ids[first]


async def test_the_cap_on_sub_queries_keeps_the_priority_gaps_queries(
    settings: Settings, brain: ResearchBrain
) -> None:
    _two_gaps_then_advice(brain, ["noise"], [])
    state = await _research(
        settings, "Are heat pumps worth it?", max_iterations=3, max_sub_queries=2
    )
    assert _follow_ups(state) == [("noise 1", 1), ("noise 2", 1)]
    noise_gap = next(g for g in state.gaps if "Noise" in g.description)
    assert {sq.gap_id for sq in state.sub_queries if sq.iteration == 2} == {noise_gap.id}
    advice = next(d for d in state.decisions if d.action == "assess_gaps")
    assert advice.outputs is not None and advice.outputs["priority_gaps"] == [noise_gap.id]


async def test_report_improvements_reach_the_next_writer_and_the_decision_log(
    settings: Settings, brain: ResearchBrain
) -> None:
    _two_gaps_then_advice(
        brain, [], [IMPROVEMENT, "  ", "Qualify the <report>efficiency</report> claims."]
    )
    state = await _research(settings, "Are heat pumps worth it?", max_iterations=3)
    assert state.status.value == "completed", state.error
    advice = next(d for d in state.decisions if d.action == "assess_gaps")
    assert advice.inputs["iteration"] == 1
    assert advice.outputs is not None
    assert advice.outputs["report_improvements"] == [
        IMPROVEMENT,
        "Qualify the <report>efficiency</report> claims.",
    ]
    refined_at = next(n for n, (who, _, _) in enumerate(brain.history) if who == "refiner")
    before = [
        u for n, (who, _, u) in enumerate(brain.history) if who == "writer" and n < refined_at
    ]
    after = [u for n, (who, _, u) in enumerate(brain.history) if who == "writer" and n > refined_at]
    assert before and not any(IMPROVEMENT in user for user in before)
    assert after and all(IMPROVEMENT in user for user in after)
    # Model text that read the pages cannot open a block of its own in the writer's prompt.
    assert all("<report>efficiency" not in user for user in after)


# ---------------------------------------------------------------------- dispatch records


def _dispatches(state: ResearchState) -> dict[tuple[str, int], AgentDecision]:
    return {
        (d.inputs["phase"], d.inputs["iteration"]): d
        for d in state.decisions
        if d.action.startswith("execute_")
    }


async def test_each_dispatch_records_what_its_agent_is_handed(
    settings: Settings, brain: ResearchBrain
) -> None:
    query = "How do LSM trees compact?"
    state = await _research(
        settings, query, max_iterations=2, max_sub_queries=4, max_sources_per_query=3
    )
    assert state.status.value == "completed", state.error
    dispatches = _dispatches(state)
    assert set(dispatches) == {
        ("planning", 1),
        ("gathering", 1),
        ("analysis", 1),
        ("synthesis", 1),
        ("refinement", 1),
        ("gathering", 2),
        ("analysis", 2),
        ("synthesis", 2),
    }
    for (phase, _), decision in dispatches.items():
        assert decision.action == f"execute_{phase}"
        assert decision.outputs is None
        assert decision.inputs["research_id"] == state.id
        assert decision.inputs["original_query"] == query
        assert decision.inputs["mode"] == "simple"

    planning = dispatches["planning", 1].inputs
    assert planning["max_sub_queries"] == 4 and planning["system_prompt"] is None

    gathering = dispatches["gathering", 1].inputs
    planned = [sq.query for sq in state.sub_queries if sq.iteration == 1]
    assert gathering["sub_query_count"] == 3 and gathering["sub_queries"] == planned
    assert gathering["max_sources_per_query"] == 3
    assert gathering["search_providers"] == state.search_providers
    follow_ups = [sq.query for sq in state.sub_queries if sq.iteration == 2]
    assert dispatches["gathering", 2].inputs["sub_queries"] == follow_ups

    analysis = dispatches["analysis", 1].inputs
    first_round = [s for s in state.sources if s.iteration == 1]
    assert analysis["source_count"] == len(first_round) > 0
    # Without hooks or reflection the sources were analysed as their searches returned.
    assert analysis["unanalyzed_sources"] == 0
    high = [s for s in first_round if s.quality.value == "high"]
    assert analysis["high_quality_sources"] == len(high) > 0

    synthesis = dispatches["synthesis", 1].inputs
    first_findings = [f for f in state.findings if f.iteration == 1]
    first_gaps = [g for g in state.gaps if g.iteration == 1]
    assert synthesis["finding_count"] == len(first_findings) > 0
    assert synthesis["source_count"] == len(first_round)
    assert synthesis["gap_count"] == len(first_gaps) > 0
    assert synthesis["has_research_brief"] is True

    refinement = dispatches["refinement", 1].inputs
    assert refinement["gap_count"] == len(first_gaps)
    assert refinement["gaps"] == [g.description for g in first_gaps]
    assert refinement["remaining_iterations"] == 1
    assert refinement["has_report_draft"] is True
