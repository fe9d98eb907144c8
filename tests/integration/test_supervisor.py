"""The supervisor as specified: hooks, gates and retries, reflection, iteration, fallbacks."""

from __future__ import annotations

import json

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import Phase, ResearchState
from foundry_mcp.research.prompts.supervisor import SUPERVISOR_SYSTEM
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.workflow.supervisor import SupervisorHooks
from foundry_mcp.runtime import research_runtime
from tests.fakes import ResearchBrain
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


async def _research(
    settings: Settings, query: str, hooks: SupervisorHooks | None = None, **limits: int
) -> ResearchState:
    async with research_runtime(settings, hooks, warm=False) as service:
        return await _run(service, query, **limits)


async def _run(service: ResearchService, query: str, **limits: int) -> ResearchState:
    started = await service.start(query, **limits)
    await wait_until(service, started["research_id"], TERMINAL)
    return service.store.load(started["research_id"])


class RecordingHooks(SupervisorHooks):
    def __init__(self, guidance_after: Phase | None = None, guidance: str = "") -> None:
        self.events: list[tuple[str, str]] = []
        self.prompts: list[str] = []
        self._guidance_after = guidance_after
        self._guidance = guidance

    async def on_phase_start(self, state: ResearchState, phase: Phase) -> None:
        self.events.append(("start", phase.value))

    async def on_agent_handoff(self, state, agent, phase) -> None:  # type: ignore[no-untyped-def]
        self.events.append(("handoff", agent.value))

    async def on_phase_complete(self, state: ResearchState, phase: Phase) -> None:
        self.events.append(("complete", phase.value))

    async def on_think_pause(self, state: ResearchState, prompt: str) -> str | None:
        self.prompts.append(prompt)
        if self._guidance_after is not None and state.phase is self._guidance_after:
            return self._guidance
        return None


async def test_hooks_see_every_phase_and_guidance_reaches_the_next_agent(
    settings: Settings, brain: ResearchBrain
) -> None:
    hooks = RecordingHooks(Phase.GATHERING, "Focus on peer-reviewed benchmarks from 2024.")
    state = await _research(settings, "How fast is HNSW search?", hooks, max_iterations=1)
    assert state.status.value == "completed"
    phases = [value for kind, value in hooks.events if kind == "start"]
    assert phases == ["planning", "gathering", "analysis", "synthesis"]
    assert ("handoff", "analyzer") in hooks.events
    assert len(hooks.prompts) == 4
    assert hooks.prompts[0].startswith("Planning done: 3 sub-queries")
    # The guidance returned after gathering is in the analyzer's prompt, and only there.
    analyzer_prompts = [user for agent, _, user in brain.history if agent == "analyzer"]
    assert all("peer-reviewed benchmarks" in user for user in analyzer_prompts)
    planner_prompts = [user for agent, _, user in brain.history if agent == "planner"]
    assert not any("peer-reviewed" in user for user in planner_prompts)
    assert state.metadata["guidance"][0]["after"] == "gathering"


class BrokenHooks(SupervisorHooks):
    async def on_think_pause(self, state: ResearchState, prompt: str) -> str | None:
        raise RuntimeError("hook bug")


async def test_a_failing_hook_is_logged_and_does_not_break_the_run(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    state = await _research(settings, "What is a Merkle tree?", BrokenHooks(), max_iterations=1)
    assert state.status.value == "completed"
    assert any("on_think_pause failed" in w for w in state.warnings)
    assert "supervisor hook on_think_pause failed" in caplog.text


async def test_gaps_on_iteration_one_only_give_exactly_two_iterations(
    settings: Settings, brain: ResearchBrain
) -> None:
    brain.gap_iterations = 1
    state = await _research(settings, "How do LSM trees compact?", max_iterations=3)
    assert state.iteration == 2
    assert brain.calls["refiner"] == 1
    first = {s.id for s in state.sources if s.iteration == 1}
    assert first and {s.iteration for s in state.sources} == {1, 2}
    assert {f.iteration for f in state.findings} == {1, 2}
    assert state.gaps and all(gap.addressed for gap in state.gaps)
    follow_ups = [sq for sq in state.sub_queries if sq.iteration == 2]
    assert follow_ups and all(sq.gap_id for sq in follow_ups)


async def test_max_iterations_one_never_refines(settings: Settings, brain: ResearchBrain) -> None:
    def analyzer(system: str, user: str) -> str:
        answer = brain.analyze(user)
        answer["gaps"] = [{"description": "Costs are unknown.", "suggested_queries": ["cost"]}]
        return json.dumps(answer)

    brain.overrides["analyzer"] = analyzer
    state = await _research(settings, "What is a skip list?", max_iterations=1)
    assert state.unaddressed_gaps()
    assert brain.calls["refiner"] == 0
    assert state.iteration == 1
    decision = next(d for d in state.decisions if d.action == "decide_iteration")
    assert decision.outputs == {"should_iterate": False, "next_phase": "COMPLETED"}
    assert "iteration limit" in decision.rationale


@pytest.mark.parametrize(
    ("agent", "role"), [("planner", "planner"), ("analyzer", "analyzer"), ("refiner", "refiner")]
)
async def test_unreadable_agent_output_takes_the_fallback_and_records_it(
    settings: Settings, brain: ResearchBrain, agent: str, role: str
) -> None:
    brain.broken_json_for = {agent}
    state = await _research(settings, "How do bloom filters fail?", max_iterations=2)
    assert state.status.value == "completed", state.error
    fallbacks = [d for d in state.decisions if d.action == "fallback"]
    assert fallbacks and fallbacks[0].agent.value == role


async def test_failed_planning_gate_is_retried_with_the_issues_as_guidance(
    settings: Settings, brain: ResearchBrain
) -> None:
    thin_plan = json.dumps(
        {"research_brief": "", "sub_queries": [{"query": "vector db", "priority": 1}]}
    )
    answers = iter([thin_plan])

    def planner(system: str, user: str) -> str:
        # First a thin plan that fails the gate, then the brain's own plan.
        return next(answers, None) or json.dumps(brain.plan(user))

    brain.overrides["planner"] = planner
    state = await _research(settings, "How do vector databases index embeddings?")
    assert brain.calls["planner"] == 2
    retry = next(d for d in state.decisions if d.action == "retry_phase")
    assert retry.inputs["phase"] == "planning"
    assert "Insufficient sub-queries" in retry.rationale
    second_prompt = [user for agent, _, user in brain.history if agent == "planner"][1]
    assert "Insufficient sub-queries" in second_prompt
    assert len([sq for sq in state.sub_queries if sq.iteration == 1]) == 3


async def test_gate_retries_are_bounded_by_configuration(
    settings: Settings, brain: ResearchBrain
) -> None:
    settings.research.deep_research_gate_retries = 0
    brain.overrides["planner"] = json.dumps({"research_brief": "", "sub_queries": []})
    state = await _research(settings, "Why do cats purr?", max_iterations=1)
    assert brain.calls["planner"] == 1
    assert not [d for d in state.decisions if d.action == "retry_phase"]
    evaluation = next(d for d in state.decisions if d.action == "evaluate_phase")
    assert evaluation.outputs is not None and evaluation.outputs["quality_ok"] is False


async def test_reflection_can_complete_the_research_early(
    settings: Settings, brain: ResearchBrain
) -> None:
    settings.research.deep_research_enable_reflection = True
    brain.gap_iterations = 3
    key = ResearchBrain.identify(SUPERVISOR_SYSTEM)
    brain.overrides[key] = json.dumps(
        {
            "action": "complete",
            "rationale": "The report answers the question.",
            "quality_assessment": {"score": 8, "strengths": ["cited"], "weaknesses": []},
            "guidance": None,
        }
    )
    state = await _research(settings, "What is a CRDT?", max_iterations=3)
    assert state.iteration == 1
    assert brain.calls["refiner"] == 0
    reflections = [d for d in state.decisions if d.action == "reflect"]
    assert len(reflections) == 4  # one per phase
    assert reflections[-1].outputs is not None and reflections[-1].outputs["score"] == 8
    decision = next(d for d in state.decisions if d.action == "decide_iteration")
    assert "reflection" in decision.rationale


async def test_unreadable_reflection_proceeds(settings: Settings, brain: ResearchBrain) -> None:
    settings.research.deep_research_enable_reflection = True
    brain.overrides[ResearchBrain.identify(SUPERVISOR_SYSTEM)] = "I think it is fine."
    state = await _research(settings, "What is Paxos?", max_iterations=1)
    assert state.status.value == "completed"
    assert any(d.action == "fallback" and d.agent.value == "supervisor" for d in state.decisions)


async def test_contradictions_from_analysis_are_kept_for_the_writer(
    settings: Settings, brain: ResearchBrain
) -> None:
    def analyzer(system: str, user: str) -> str:
        answer = brain.analyze(user)
        ids = [f["source_ids"][0] for f in answer["findings"]][:2]
        if brain.calls["analyzer"] == 1:  # the first analysis call sees the disagreement
            answer["contradictions"] = [
                {"description": "Sources disagree on the default page size.", "source_ids": ids}
            ]
        return json.dumps(answer)

    brain.overrides["analyzer"] = analyzer
    state = await _research(settings, "What page size does SQLite use?", max_iterations=1)
    assert len(state.contradictions) == 1
    assert state.contradictions[0].description.startswith("Sources disagree")
    # The call that writes the report (or its frame, when written in parts) sees them.
    frames = [
        user
        for agent, _, user in brain.history
        if agent == "writer" and "This section is about:" not in user
    ]
    assert frames and all("Sources disagree on the default page size." in u for u in frames)
    # The fake writer ignores them; the report still gets its own section, with citations.
    assert state.report is not None
    section = state.report.split("## Conflicting Evidence", 1)[1].split("\n## ", 1)[0]
    assert "Sources disagree on the default page size. [" in section


class GuidingHooks(SupervisorHooks):
    """Loaded by name from configuration in the test below."""

    async def on_think_pause(self, state: ResearchState, prompt: str) -> str | None:
        return "Prefer primary sources." if state.phase is Phase.PLANNING else None


async def test_hooks_named_in_configuration_are_loaded(
    settings: Settings, brain: ResearchBrain
) -> None:
    settings.research.supervisor_hooks = f"{__name__}:GuidingHooks"
    state = await _research(settings, "What is a write-ahead log?", max_iterations=1)
    assert state.metadata["guidance"][0]["guidance"] == "Prefer primary sources."


def test_hooks_that_cannot_be_loaded_are_a_configuration_error() -> None:
    from foundry_mcp.errors import ConfigError
    from foundry_mcp.runtime import load_hooks

    with pytest.raises(ConfigError, match="cannot be loaded"):
        load_hooks("no_such_module:Hooks")
    with pytest.raises(ConfigError, match="did not produce a SupervisorHooks"):
        load_hooks("json:JSONDecoder")


async def test_guidance_given_after_planning_carries_over_gathering_to_the_analyzer(
    settings: Settings, brain: ResearchBrain
) -> None:
    hooks = RecordingHooks(Phase.PLANNING, "Weigh vendor benchmarks with suspicion.")
    await _research(settings, "How fast is FAISS?", hooks, max_iterations=1)
    analyzer_prompts = [user for agent, _, user in brain.history if agent == "analyzer"]
    assert analyzer_prompts and all("vendor benchmarks" in user for user in analyzer_prompts)
    writer_prompt = next(user for agent, _, user in brain.history if agent == "writer")
    assert "vendor benchmarks" not in writer_prompt


@pytest.mark.parametrize(
    ("rounds", "judged"),
    [
        # The last round's report: no round follows, whatever a judgement would say.
        (1, ["planning", "gathering", "analysis"]),
        # A report another round may follow is judged.
        (2, ["planning", "gathering", "analysis", "synthesis"]),
    ],
)
async def test_the_supervisor_judges_each_phase_whose_judgement_can_change_what_follows(
    settings: Settings, brain: ResearchBrain, rounds: int, judged: list[str]
) -> None:
    assert settings.research.deep_research_enable_reflection is True  # the default
    brain.gap_iterations = 0  # no gap: the research ends after its first round
    state = await _research(settings, "What is a skip list?", max_iterations=rounds)
    reflections = [d for d in state.decisions if d.action == "reflect"]
    assert [d.inputs["phase"] for d in reflections] == judged
    assert brain.calls["supervisor"] == len(reflections)
    assert all(d.outputs is not None and d.outputs["score"] == 8 for d in reflections)


@pytest.mark.parametrize("weak", [False, True])
async def test_a_hierarchical_research_is_judged_after_its_parts_only_when_one_is_weak(
    settings: Settings, brain: ResearchBrain, weak: bool
) -> None:
    """Every part answered with medium confidence or more: the judgement after the parts'
    research has nothing to say, so it is not asked. A weak part: it is asked, and its guidance
    reaches the writers of the integrated report over the consolidation, which asks no model."""
    advice = "Say that the Memcached answer rests on thin evidence."

    def answer(system: str, user: str) -> str:
        answered = brain.answer(user)
        if weak and "Memcached" in user.split("Research question:")[0]:
            answered["confidence"] = "low"
        return json.dumps(answered)

    def supervise(system: str, user: str) -> str:
        judgement = brain.supervise(user)
        if "Sub-question research done" in user:
            judgement["guidance"] = advice
        return json.dumps(judgement)

    brain.overrides.update(answerer=answer, supervisor=supervise)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(
            "Compare Valkey, Memcached and Hazelcast for eviction latency",
            mode="hierarchical",
            max_iterations=1,
        )
        await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    # The consolidation asks no model, and the integrated report ends the research.
    judged = [d.inputs["phase"] for d in state.decisions if d.action == "reflect"]
    assert judged == (["planning", "gathering"] if weak else ["planning"])
    writers = [user for agent, _, user in brain.history if agent == "writer"]
    assert writers and all((advice in user) is weak for user in writers)


async def test_the_rule_gates_alone_when_the_judgement_is_off(
    settings: Settings, brain: ResearchBrain
) -> None:
    settings.research.deep_research_enable_reflection = False
    state = await _research(settings, "What is a skip list?", max_iterations=1)
    assert not [d for d in state.decisions if d.action == "reflect"]
    assert brain.calls["supervisor"] == 0
    assert any(d.action == "evaluate_phase" for d in state.decisions)
