"""Hypotheses mode (seed 004) end to end: the real SDKs against the loopback fakes."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import (
    BranchStatus,
    HypothesisVerdict,
    ResearchMode,
    ResearchState,
    Status,
)
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.support import (
    TERMINAL,
    assert_citations_resolve,
    searched_queries,
    served_urls,
    wait_until,
)

pytestmark = pytest.mark.anyio

QUESTION = "Why do honeybee colonies collapse in winter?"


async def _run(service: ResearchService, question: str = QUESTION, **kwargs: Any) -> ResearchState:
    started = await service.start(question, max_iterations=1, **kwargs)
    status = await wait_until(service, started["research_id"], TERMINAL)
    assert status["status"] == "completed", status["error"]
    return service.store.load(started["research_id"])


async def _until(service: ResearchService, research_id: str, check: Any) -> None:
    with anyio.fail_after(20):
        while not check(service.store.load(research_id)):
            await anyio.sleep(0.02)


def _section(report: str) -> str:
    """The "Hypothesis exploration" section of a report, up to the next top-level section."""
    start = report.index("## Hypothesis exploration")
    following = re.search(r"^## (?!#)", report[start + 3 :], re.MULTILINE)
    return report[start : start + 3 + following.start()] if following else report[start:]


def _statuses(state: ResearchState) -> list[BranchStatus]:
    return [h.status for h in state.hypotheses]


async def test_adaptive_research_weighs_hypotheses_and_reports_them_with_citations(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, mode="hypotheses")
        report = await service.full_report(state.id)
        status = await service.status(state.id)

    assert state.mode is ResearchMode.HYPOTHESES
    assert len(state.hypotheses) == 3
    # Adaptive: the coverage assessor judged two explored hypotheses enough.
    assert _statuses(state) == [BranchStatus.COMPLETED] * 2 + [BranchStatus.SKIPPED]
    assert brain.calls["investigator"] == 1
    assert brain.calls["assessor"] == 2
    assert brain.calls["coverage"] == 2
    assert brain.calls["refiner"] == 0
    skipped = state.hypotheses[2]
    assert skipped.skip_reason and "coverage assessment after H2" in skipped.skip_reason
    assert [c.sufficient for c in state.coverage] == [False, True]
    # Only the explored hypotheses were searched, each with its own tagged sub-query.
    assert Counter(sq.hypothesis_id for sq in state.sub_queries) == {
        h.id: 1 for h in state.hypotheses[:2]
    }
    assert len(searched_queries(tavily_server)) == 2
    for hypothesis in state.hypotheses[:2]:
        assert hypothesis.verdict in (
            HypothesisVerdict.SUPPORTED,
            HypothesisVerdict.PARTIALLY_SUPPORTED,
        )
        assert hypothesis.final_confidence is not None
        assert hypothesis.evidence_for
        assert set(hypothesis.evidence_for) <= {f.id for f in state.findings}

    # The writer knew the outcomes; the section itself was written by code.
    [(_, system, user)] = [entry for entry in brain.history if entry[0] == "writer"]
    assert "competing hypotheses" in system
    assert '<hypothesis n="H1" verdict="supported"' in user and 'n="H3"' not in user
    assert_citations_resolve(report, served_urls(tavily_server))
    section = _section(report)
    for number, hypothesis in enumerate(state.hypotheses, start=1):
        assert f"### H{number}: {hypothesis.statement}" in section
    assert "**Verdict:** Supported. **Confidence:** 70 → 85." in section
    assert "Evidence for:" in section and "Evidence against:" in section
    assert "Not explored (initial confidence 30)" in section
    assert "Exploration stopped after H2" in section
    assert re.search(r"^- .+\[\d+\]", section, re.MULTILINE), "evidence is cited"
    assert "src-" not in section

    tree = status["tree"]
    assert tree["mode"] == "hypotheses"
    assert [h["status"] for h in tree["hypotheses"]] == ["completed", "completed", "skipped"]
    actions = [d.action for d in state.decisions]
    for action in ("generate_hypotheses", "explore_hypotheses", "assess_hypothesis"):
        assert action in actions
    assert actions.count("assess_coverage") == 2


async def test_exhaustive_explores_every_hypothesis_without_coverage_calls(
    settings: Settings, brain: ResearchBrain
) -> None:
    settings.research.hypothesis_mode = "exhaustive"
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, mode="hypotheses")
    assert _statuses(state) == [BranchStatus.COMPLETED] * 3
    assert brain.calls["assessor"] == 3
    assert brain.calls["coverage"] == 0
    assert state.coverage == []


async def test_best_first_explores_only_the_first(settings: Settings, brain: ResearchBrain) -> None:
    settings.research.hypothesis_mode = "best_first"
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, mode="hypotheses")
    assert _statuses(state) == [BranchStatus.COMPLETED] + [BranchStatus.SKIPPED] * 2
    assert all("Best-first" in (h.skip_reason or "") for h in state.hypotheses[1:])
    assert brain.calls["assessor"] == 1
    assert brain.calls["coverage"] == 0
    assert state.report is not None and "Best-first mode explores only" in state.report


async def test_threshold_skips_unlikely_hypotheses(
    settings: Settings, brain: ResearchBrain
) -> None:
    settings.research.min_confidence_threshold = 40
    settings.research.hypothesis_mode = "exhaustive"
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, mode="hypotheses")
    assert _statuses(state) == [BranchStatus.COMPLETED] * 2 + [BranchStatus.SKIPPED]
    assert "below the minimum of 40" in (state.hypotheses[2].skip_reason or "")


async def test_parallel_exploration_searches_at_once_and_weighs_concurrently(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    settings.research.exploration_mode = "parallel"
    lock = threading.Lock()
    in_flight, most = 0, 0

    def slow_assessor(system: str, user: str) -> str:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.3)
        with lock:
            in_flight -= 1
        return brain._json(brain.assess(user))

    brain.overrides["assessor"] = slow_assessor
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, mode="hypotheses")
        report = await service.full_report(state.id)
    assert _statuses(state) == [BranchStatus.COMPLETED] * 3
    assert brain.calls["coverage"] == 0
    assert most >= 2, "the assessments ran one after another"
    # Everything was searched and analysed before the first assessment.
    agents = [agent for agent, _, _ in brain.history]
    assert agents.index("assessor") > max(i for i, a in enumerate(agents) if a == "analyzer")
    assert len(searched_queries(tavily_server)) == 3
    assert_citations_resolve(report, served_urls(tavily_server))


async def test_a_resumed_research_repeats_no_search_and_no_assessment(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    settings.research.hypothesis_mode = "exhaustive"
    # The second hypothesis's search hangs, so the research is cancelled in the middle of it.
    tavily_server.delay = lambda request, _: 5.0 if "environmental" in str(request.json) else 0.0
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start(QUESTION, mode="hypotheses", max_iterations=1))["research_id"]
        await _until(
            service,
            rid,
            lambda s: len(s.sub_queries) >= 2 and s.hypotheses[0].status is BranchStatus.COMPLETED,
        )
        await anyio.sleep(0.1)
        await service.cancel(rid)
        stopped = service.store.load(rid)
        assert stopped.status is Status.CANCELLED
        assert [h.status for h in stopped.hypotheses] == [
            BranchStatus.COMPLETED,
            BranchStatus.RESEARCHING,
            BranchStatus.PENDING,
        ]
        done = {sq.query for sq in stopped.completed_sub_queries()}
        assert len(done) == 1

        tavily_server.delay = None
        await service.resume(rid)
        status = await wait_until(service, rid, TERMINAL)
        assert status["status"] == "completed", status["error"]
        state = service.store.load(rid)

    searched = Counter(searched_queries(tavily_server))
    assert all(searched[query] == 1 for query in done)
    assessed = Counter(
        re.search(r"^Hypothesis H(\d+):", user, re.MULTILINE).group(1)  # type: ignore[union-attr]
        for agent, _, user in brain.history
        if agent == "assessor"
    )
    assert assessed == {"1": 1, "2": 1, "3": 1}
    assert _statuses(state) == [BranchStatus.COMPLETED] * 3


async def test_a_hypothesis_searched_but_not_weighed_is_weighed_on_resume(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    settings.research.hypothesis_mode = "best_first"
    started = threading.Event()

    def stalled_assessor(system: str, user: str) -> str:
        if not started.is_set():
            started.set()
            time.sleep(1.0)
        return brain._json(brain.assess(user))

    brain.overrides["assessor"] = stalled_assessor
    async with research_runtime(settings, warm=False) as service:
        rid = (await service.start(QUESTION, mode="hypotheses", max_iterations=1))["research_id"]
        with anyio.fail_after(20):
            while not started.is_set():
                await anyio.sleep(0.02)
        await service.cancel(rid)
        stopped = service.store.load(rid)
        assert stopped.hypotheses[0].verdict is None
        assert stopped.completed_sub_queries()
        searches = len(searched_queries(tavily_server))

        await service.resume(rid)
        status = await wait_until(service, rid, TERMINAL)
        assert status["status"] == "completed", status["error"]
        state = service.store.load(rid)
    assert len(searched_queries(tavily_server)) == searches  # searched once, before the cancel
    assert brain.calls["assessor"] == 2
    assert state.hypotheses[0].verdict is not None


async def test_the_coverage_assessor_picks_the_next_hypothesis(
    settings: Settings, brain: ResearchBrain
) -> None:
    def coverage(system: str, user: str) -> str:
        answer = brain.cover(user)
        if not answer["sufficient"]:
            answer["recommended_next"] = "H3"
        return brain._json(answer)

    brain.overrides["coverage"] = coverage
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, mode="hypotheses")
    assert _statuses(state) == [
        BranchStatus.COMPLETED,
        BranchStatus.SKIPPED,
        BranchStatus.COMPLETED,
    ]
    assert state.coverage[0].recommended_next == state.hypotheses[2].id
    assert [sq.hypothesis_id for sq in state.sub_queries] == [
        state.hypotheses[0].id,
        state.hypotheses[2].id,
    ]


async def test_auto_chooses_hypotheses_for_a_which_explanation_question(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    question = "Which explanation best accounts for the decline of honeybee colonies?"
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, question)
        report = await service.full_report(state.id)
    assert state.mode is ResearchMode.HYPOTHESES
    assert state.mode_decision is not None
    assert state.mode_decision.assessment is not None
    assert state.mode_decision.assessment.recommended_mode is ResearchMode.HYPOTHESES
    assert brain.calls["planner"] == 1  # the judging planner; the investigator proposes
    assert brain.calls["investigator"] == 1
    assert state.hypotheses and state.sub_queries
    assert all(sq.hypothesis_id for sq in state.sub_queries)
    assert "## Hypothesis exploration" in report
    assert_citations_resolve(report, served_urls(tavily_server))


async def test_unreadable_answers_fall_back_and_the_research_completes(
    settings: Settings, brain: ResearchBrain
) -> None:
    brain.broken_json_for = {"investigator", "assessor"}
    async with research_runtime(settings, warm=False) as service:
        state = await _run(service, mode="hypotheses")
    assert [h.statement for h in state.hypotheses] == [QUESTION]
    assert brain.calls["investigator"] == 2  # the planning gate's retry: still unreadable
    assert state.hypotheses[0].verdict is HypothesisVerdict.INCONCLUSIVE
    assert any("investigator" in w for w in state.warnings)
    assert any("could not be read" in w for w in state.warnings)
    assert state.report is not None and "## Hypothesis exploration" in state.report
