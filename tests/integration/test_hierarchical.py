"""Hierarchical research and auto mode through the service, with the real SDKs against fakes."""

from __future__ import annotations

import json
from collections import Counter

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import InvalidStateError
from foundry_mcp.research.models import BranchStatus, ResearchMode, ResearchState
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.fakes.providers import SHARED_URL
from tests.support import TERMINAL, assert_citations_resolve, served_urls, wait_until

pytestmark = pytest.mark.anyio

COMPARISON = "Compare PostgreSQL, MySQL and SQLite for embedded analytics"
ONE_FACT = "What is the boiling point of water at sea level?"


async def _run(service: ResearchService, question: str, **options: object) -> ResearchState:
    started = await service.start(question, **options)  # type: ignore[arg-type]
    status = await wait_until(service, started["research_id"], TERMINAL, timeout=60)
    assert status["status"] == "completed", status["error"]
    return service.store.load(started["research_id"])


async def test_auto_picks_hierarchical_for_a_three_part_comparison(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, COMPARISON)
        status = await service.status(state.id)
        report = (await service.report(state.id))[0]
    assert state.mode is ResearchMode.HIERARCHICAL
    decision = next(d for d in state.decisions if d.action == "choose_mode")
    assert decision.outputs is not None and decision.outputs["mode"] == "hierarchical"
    assert "comparison" in decision.inputs["lexical_signals"]
    assert any(d["action"] == "choose_mode" for d in report["decision_log"]["key_decisions"])
    # One planner call judged the question and decomposed it.
    assert state.mode_decision is not None and state.mode_decision.assessment is not None
    assert [sq.question for sq in state.sub_questions] == [
        "How does PostgreSQL perform for embedded analytics?",
        "How does MySQL perform for embedded analytics?",
        "How does SQLite perform for embedded analytics?",
    ]
    assert all(sq.status is BranchStatus.COMPLETED for sq in state.sub_questions)
    assert all(sq.synthesis and sq.synthesis.citations for sq in state.sub_questions)
    assert brain.calls["answerer"] == 3
    tree = status["tree"]
    assert tree["mode"] == "hierarchical" and len(tree["sub_questions"]) == 3
    assert all(node["status"] == "completed" for node in tree["sub_questions"])
    assert state.report is not None
    assert_citations_resolve(state.report, served_urls(tavily_server))


async def test_auto_picks_simple_for_a_one_fact_question(
    settings: Settings, brain: ResearchBrain
) -> None:
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, ONE_FACT, max_iterations=1)
    assert state.mode is ResearchMode.SIMPLE
    assert state.sub_questions == []
    assert brain.calls["planner"] == 1  # judging the question cost no extra call
    assert brain.calls["answerer"] == 0


async def test_one_source_pool_one_citation_number_per_page(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, COMPARISON, mode="hierarchical")
        branches = service.store.load_branches(state.id)
    # Every researcher found the shared encyclopedia page; it has one id in all of them ...
    shared_ids = {s.id for b in branches.values() for s in b.sources if s.url == SHARED_URL}
    assert len(branches) == 3 and len(shared_ids) == 1
    # ... so it is one source of the research, used by all three sub-questions.
    shared = [s for s in state.sources if s.url == SHARED_URL]
    assert len(shared) == 1 and len(shared[0].branches) == 3
    assert state.report is not None
    sources_part = state.report.split("\n## Sources\n", 1)[1]
    assert sources_part.count(SHARED_URL) <= 1
    assert all(f.sub_question_id for f in state.findings)


async def test_sub_questions_are_researched_concurrently(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 0.2
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, COMPARISON, mode="hierarchical", max_concurrent=3)
        events = (await service.events(state.id, limit=500))["events"]
    started = {
        e["data"]["branch"]
        for e in events
        if e["kind"] == "phase_started" and e["data"].get("branch")
    }
    first_answer = min(
        e["seq"]
        for e in events
        if e["kind"] == "phase_completed"
        and e["data"].get("branch")
        and e["data"]["phase"] == "synthesis"
    )
    began_before = {
        e["data"]["branch"]
        for e in events
        if e["kind"] == "phase_started" and e["data"].get("branch") and e["seq"] < first_answer
    }
    assert started == began_before == {sq.id for sq in state.sub_questions}


async def test_a_decomposition_too_small_falls_back_to_simple(
    settings: Settings, brain: ResearchBrain
) -> None:
    plan = brain.plan(f"Research question: {COMPARISON}", "Judging the question")
    plan["decomposition"]["sub_questions"] = plan["decomposition"]["sub_questions"][:1]
    brain.overrides["planner"] = json.dumps(plan)
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, COMPARISON, mode="hierarchical", max_iterations=1)
    assert state.mode is ResearchMode.SIMPLE
    assert state.mode_decision is not None and state.mode_decision.fallback
    assert any(d.action == "fallback" and "simple mode" in d.rationale for d in state.decisions)
    assert state.sub_queries and state.report is not None


async def test_a_required_decomposition_writes_no_searches_and_one_too_small_is_planned_again(
    settings: Settings, brain: ResearchBrain
) -> None:
    asked: list[str] = []

    def planner(system: str, user: str) -> str:
        asked.append(system)
        plan = brain.plan(user, system)
        if "Decomposition: required" in system:
            plan["decomposition"]["sub_questions"] = plan["decomposition"]["sub_questions"][:1]
        return json.dumps(plan)

    brain.overrides["planner"] = planner
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, COMPARISON, mode="hierarchical", max_iterations=1)
    decomposing, planning = asked
    # The decomposition asks for no search queries: its parts would plan their own.
    assert "Write no search queries" in decomposing and '"sub_queries"' not in decomposing
    # Too small to use: simple mode plans the whole question, which is searched as planned.
    assert state.mode is ResearchMode.SIMPLE and '"sub_queries"' in planning
    assert len(state.sub_queries) == 3 and all(sq.query != COMPARISON for sq in state.sub_queries)
    assert not any("could not be read" in d.rationale for d in state.decisions)
    assert state.report is not None


async def test_an_unreadable_sub_answer_falls_back_to_its_findings(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    brain.broken_json_for = {"answerer"}
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, COMPARISON, mode="hierarchical")
        branches = service.store.load_branches(state.id)
    for sq in state.sub_questions:
        assert sq.synthesis is not None and sq.synthesis.fallback
        assert sq.synthesis.evidence and sq.synthesis.citations
    assert all(any(d.action == "fallback" for d in b.decisions) for b in branches.values())
    assert state.report is not None
    assert_citations_resolve(state.report, served_urls(tavily_server))


async def test_a_resumed_hierarchical_research_redoes_nothing_finished(
    settings: Settings,
    brain: ResearchBrain,
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
) -> None:
    openai_server.latency = 0.3  # room to stop a researcher between its searches and its answer
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(COMPARISON, mode="hierarchical", max_concurrent=1)
        research_id = started["research_id"]
        # Cancel once one sub-question is answered and the next has searched but not answered.
        with anyio.fail_after(30):
            while True:
                state = service.store.load(research_id)
                done = [sq for sq in state.sub_questions if sq.status is BranchStatus.COMPLETED]
                searching = [
                    sq
                    for sq in state.sub_questions
                    if sq.status is BranchStatus.RESEARCHING and sq.source_count
                ]
                if done and searching:
                    break
                await anyio.sleep(0.02)
        await service.cancel(research_id)
        await wait_until(service, research_id, TERMINAL)
        before = service.store.load(research_id)
        finished = {sq.id for sq in before.sub_questions if sq.status is BranchStatus.COMPLETED}
        assert before.status.value == "cancelled" and 0 < len(finished) < len(before.sub_questions)
        searched_before = _queries(tavily_server)
        answers_before = brain.calls["answerer"]
        # The searches whose results were saved (one in flight at the cancel may run again).
        saved = [
            sq.query
            for branch in service.store.load_branches(research_id).values()
            for sq in branch.sub_queries
            if sq.status.value == "completed"
        ]
        assert saved

        openai_server.latency = 0  # the room was for the cancel: the resumed run needs none
        await service.resume(research_id)
        status = await wait_until(service, research_id, TERMINAL, timeout=60)
        after = service.store.load(research_id)
    assert status["status"] == "completed", status["error"]
    assert finished and all(sq.status is BranchStatus.COMPLETED for sq in after.sub_questions)
    searched = _queries(tavily_server)
    repeated = [q for q in saved if searched[q] > searched_before[q]]
    assert repeated == [], f"completed searches made again after resume: {repeated}"
    # Answered sub-questions were not answered again: one answer per sub-question in all.
    assert brain.calls["answerer"] == len(after.sub_questions)
    assert brain.calls["answerer"] - answers_before == len(after.sub_questions) - len(finished)
    assert after.report is not None
    assert_citations_resolve(after.report, served_urls(tavily_server))


async def test_a_completed_hierarchical_research_cannot_be_continued_or_restored(
    settings: Settings,
) -> None:
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, COMPARISON, mode="hierarchical")
        with pytest.raises(InvalidStateError) as continued:
            await service.resume(state.id, max_iterations=5)
        with pytest.raises(InvalidStateError) as restored:
            await service.restore_content(state.id, state.sources[0].id)
    assert "only a simple research" in continued.value.message
    assert "simple research only" in restored.value.message
    assert continued.value.remediation and restored.value.remediation


def _queries(tavily: FakeHTTPServer) -> Counter[str]:
    """The queries searched; a request cut off by the cancel before its body was read has none
    (it was not saved, so it may run again)."""
    return Counter(r.json["query"] for r in tavily.requests_to("/search") if r.json)
