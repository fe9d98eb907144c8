"""A hierarchical research's parts plan while the decomposition is judged, not after it.

The judgement after the decomposition can only have the question cut again; the parts' plans
need nothing but their own questions. So each part's researcher makes its first plan beside the
judgement (the playbook's ``ahead``), and when the judgement asks for the decomposition again,
those plans are dropped: each part is planned for the decomposition that stands.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.prompts.supervisor import SUPERVISOR_SYSTEM
from foundry_mcp.research.store.records import Event
from foundry_mcp.runtime import research_runtime
from tests.fakes import ResearchBrain
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "Compare Valkey, Memcached and Hazelcast for eviction latency"
JUDGING_SECONDS = 0.6


class Clock:
    """When the fake models were asked what (seconds since the first request)."""

    def __init__(self) -> None:
        self.origin = time.monotonic()
        self.marks: list[tuple[str, float, float]] = []  # (what, asked, answered)
        self._lock = threading.Lock()

    def mark(self, what: str, asked: float) -> None:
        with self._lock:
            self.marks.append((what, asked - self.origin, time.monotonic() - self.origin))

    def of(self, what: str) -> list[tuple[float, float]]:
        return [(asked, answered) for name, asked, answered in self.marks if name == what]


def watch(brain: ResearchBrain, clock: Clock, retry_decomposition: bool = False) -> None:
    """The planner answers as it does, timed; the judgement of the decomposition takes
    ``JUDGING_SECONDS`` (and asks for the decomposition again once, when told to)."""
    judge = ResearchBrain.identify(SUPERVISOR_SYSTEM)
    retried = threading.Event()

    def planner(system: str, user: str) -> str:
        asked = time.monotonic()
        plan = brain.plan(user, system)
        what = "decompose" if "Judging the question" in system else "part"
        if what == "decompose" and retried.is_set():  # cut differently the second time
            for part in plan["decomposition"]["sub_questions"]:
                part["question"] = part["question"].replace("?", " under load?")
        clock.mark(what, asked)
        return json.dumps(plan)

    def supervisor(system: str, user: str) -> str:
        asked = time.monotonic()
        answer = brain.supervise(user)
        if "Decomposition done" in user:
            time.sleep(JUDGING_SECONDS)
            if retry_decomposition and not retried.is_set():
                retried.set()
                answer = {**answer, "action": "retry", "rationale": "Cut it again."}
            clock.mark("judge decomposition", asked)
        return json.dumps(answer)

    brain.overrides["planner"] = planner
    brain.overrides[judge] = supervisor


async def research(
    settings: Settings,
) -> tuple[ResearchState, dict[str, ResearchState], list[Event]]:
    """The research of ``QUESTION``, its parts' researchers' states and its events."""
    settings.research.deep_research_enable_reflection = True
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, mode="hierarchical", max_iterations=1)
        research_id = started["research_id"]
        await wait_until(service, research_id, TERMINAL, timeout=60)
        return (
            service.store.load(research_id),
            service.store.load_branches(research_id),
            service.store.events(research_id, 0, 1000),
        )


def part_plans(state: ResearchState, brain: ResearchBrain) -> list[str]:
    """The parts' questions, once for each plan the planner was asked for."""
    asked = [user for agent, system, user in brain.history if agent == "planner"]
    return [sq.question for sq in state.sub_questions for user in asked if sq.question in user]


async def test_the_parts_plan_while_the_decomposition_is_judged(
    settings: Settings, brain: ResearchBrain
) -> None:
    clock = Clock()
    watch(brain, clock)
    state, branches, events = await research(settings)
    assert state.status.value == "completed", state.error
    ((_, judged),) = clock.of("judge decomposition")
    parts = clock.of("part")
    assert len(state.sub_questions) == 3 and len(parts) == 3
    # Every part's plan was asked for before the judgement answered.
    assert all(asked < judged for asked, _ in parts), (parts, judged)
    # Each part was planned once, and its researcher went on with that plan.
    assert sorted(part_plans(state, brain)) == sorted(sq.question for sq in state.sub_questions)
    assert all(sq.source_count > 0 and sq.synthesis is not None for sq in state.sub_questions)
    assert all(len(branches[sq.id].sub_queries) == 3 for sq in state.sub_questions)
    planned = [e for e in events if e.kind == "llm_call" and e.data.get("branch")]
    assert {e.data["branch"] for e in planned if e.data.get("purpose") == "planning"} == {
        sq.id for sq in state.sub_questions
    }


async def test_plans_made_ahead_of_a_decomposition_done_again_are_dropped(
    settings: Settings, brain: ResearchBrain
) -> None:
    clock = Clock()
    watch(brain, clock, retry_decomposition=True)
    state, branches, _ = await research(settings)
    assert state.status.value == "completed", state.error
    assert len(clock.of("decompose")) == 2
    retry = [d for d in state.decisions if d.action == "retry_phase"]
    assert len(retry) == 1 and retry[0].inputs["phase"] == "planning"
    # The first decomposition's parts were planned ahead, and dropped: the parts of the one
    # that stands were planned in their turn, and each researcher holds its own plan only.
    assert all(sq.question.endswith(" under load?") for sq in state.sub_questions)
    first = [q.replace(" under load?", "?") for q in (sq.question for sq in state.sub_questions)]
    asked = [user for agent, _, user in brain.history if agent == "planner"]
    assert all(sum(f"{q}\n" in u or u.endswith(q) for u in asked) == 1 for q in first)
    assert sorted(part_plans(state, brain)) == sorted(sq.question for sq in state.sub_questions)
    for sq in state.sub_questions:
        plan = branches[sq.id].sub_queries
        assert len(plan) == 3 and all("under load" in q.query for q in plan), plan
    assert all(sq.synthesis is not None for sq in state.sub_questions)
    # The dropped plans' calls are in the research's usage all the same.
    assert state.llm_usage.total.calls == len(brain.history)
