"""A time ceiling that still delivers: near max_time_s the research writes its report."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import InputError
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import (
    Finding,
    LLMCallRecord,
    ResearchOptions,
    ResearchState,
    Source,
    SubQuery,
)
from foundry_mcp.research.workflow.deadline.ceiling import TimeCeiling
from foundry_mcp.research.workflow.deadline.pace import Pace, kind_seconds, writing_time
from foundry_mcp.research.workflow.report.synthesizer import synthesize
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, FakeResponse, RecordedRequest, ResearchBrain
from tests.fakes.http import Delay
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


async def test_a_slow_research_ends_with_its_report_within_the_ceiling(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 0.5  # every LLM call takes half a second
    async with research_runtime(settings, warm=False) as service:
        began = time.monotonic()
        started = await service.start(
            "How do heat pumps perform in cold climates?", max_time_s=5, max_iterations=3
        )
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=30)
        took = time.monotonic() - began
        state = service.store.load(started["research_id"])
        report, _ = await service.report(started["research_id"])
    assert status["status"] == "completed", status["error"]
    assert took < 5 + 1, took
    assert state.report and report["report"].startswith("# ")
    assert state.iteration == 1  # no further round was started
    assert any(w.startswith("Time ceiling reached") for w in status["warnings"])
    ceiling = [d for d in state.decisions if d.action == "time_ceiling"]
    assert len(ceiling) == 1 and ceiling[0].inputs["max_time_s"] == 5
    assert state.metadata["time_ceiling_reached"] is True


async def test_without_pressure_the_ceiling_changes_nothing(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What is a skip list?", max_time_s=600, max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    assert status["status"] == "completed"
    assert not [d for d in state.decisions if d.action == "time_ceiling"]
    assert "time_ceiling_reached" not in state.metadata


async def test_a_ceiling_under_five_seconds_is_refused(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        with pytest.raises(InputError) as refused:
            await service.start("What is a skip list?", max_time_s=1)
    assert refused.value.details["field"] == "max_time_s"


async def test_a_hierarchical_research_cut_by_the_ceiling_reports_its_branches_findings(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    """The ceiling stops the sub-question researchers mid-way: what they found still reaches
    the report, answered or not."""
    openai_server.latency = 0.4
    async with research_runtime(settings, warm=False) as service:
        began = time.monotonic()
        started = await service.start(
            "Compare PostgreSQL, MySQL and SQLite for embedded analytics",
            mode="hierarchical",
            max_concurrent=1,
            max_time_s=7,
        )
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=30)
        took = time.monotonic() - began
        state = service.store.load(started["research_id"])
    assert status["status"] == "completed", status["error"]
    assert took < 7 + 1, took
    assert state.metadata["time_ceiling_reached"] is True
    answered = [sq for sq in state.sub_questions if sq.synthesis is not None]
    assert len(answered) < len(state.sub_questions)  # the ceiling cut researchers short
    # What the researchers found was gathered although analysis never ran, and the report
    # cites it, sub-question by sub-question (answered or cut short).
    assert state.findings and state.report and "extracted no finding" not in state.report
    cited = set(state.report_metadata.cited_source_ids) if state.report_metadata else set()
    for branch in {f.sub_question_id for f in state.findings}:
        found = {sid for f in state.findings if f.sub_question_id == branch for sid in f.source_ids}
        assert cited & found, branch


# ---------------------------------------------------------------------- deadlines that deliver


def agent_delays(default: float = 0.2, **seconds: float) -> Delay:
    """A fake LLM ``delay``: each agent's answer held back its own seconds (``default`` else)."""

    def delay(request: RecordedRequest, response: FakeResponse) -> float:
        messages = (request.json or {}).get("messages") or []
        system = "\n".join(
            str(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
        )
        return seconds.get(ResearchBrain.identify(system), default)

    return delay


def the_stop(state: ResearchState) -> dict[str, Any]:
    """The figures of the research's one ``time_ceiling`` decision."""
    stops = [d for d in state.decisions if d.action == "time_ceiling"]
    assert len(stops) == 1, [d.rationale for d in stops]
    assert stops[0].outputs is not None
    return stops[0].outputs


async def run_to_end(settings: Settings, question: str, **options: Any) -> ResearchState:
    # The deadline counts from the start call: the server's warm-up is over first (the LLM
    # SDK's import and client, the language model), as it is a few seconds after a server
    # starts, or their first load (0.3-1 s, by the machine) would eat into the deadline.
    async with research_runtime(settings) as service:
        assert await anyio.to_thread.run_sync(service.providers.warmed.wait, 30)
        started = await service.start(question, mode="simple", **options)
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=30)
        assert status["status"] == "completed", status["error"]
        return service.store.load(started["research_id"])


async def test_analysis_in_flight_that_answers_in_time_is_awaited(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    """The analysis answers past half of max_time_s (where a fixed half kept for the report
    cut it) but before writing must start: it is awaited and its findings are reported."""
    # Past half of 10 s, with seconds to spare before writing must start: the margin is what a
    # loaded machine's own slowness (a few hundred ms) cannot eat.
    openai_server.delay = agent_delays(analyzer=6.0)
    state = await run_to_end(
        settings, "How do heat pumps perform in cold climates?", max_time_s=10, max_iterations=1
    )
    assert state.findings and all(source.analyzed for source in state.sources)
    assert state.report_metadata is not None and state.report_metadata.citations_count
    cited = set(state.report_metadata.cited_source_ids)
    assert cited & {sid for finding in state.findings for sid in finding.source_ids}
    assert "no finding" not in (state.report or "")
    assert not [d for d in state.decisions if d.action == "time_ceiling"]  # nothing was cut


async def test_a_research_whose_findings_were_in_flight_never_says_no_finding(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    """The analysis cannot answer before writing must start: it is cancelled, and the report
    blames the deadline, not the sources, with the figures the ceiling used."""
    openai_server.delay = agent_delays(analyzer=60.0)
    state = await run_to_end(
        settings, "How do heat pumps perform in cold climates?", max_time_s=5, max_iterations=1
    )
    report = state.report or ""
    figures = the_stop(state)
    assert not state.findings and state.sources
    assert "no finding" not in report and "more specific question" not in report
    assert "The deadline (max_time_s = 5 s) ended the research" in report
    assert "analysis call(s)" in report and "still running" in report
    # The decision's figures: the deadline's use, the writing it kept time for, what it cut.
    assert figures["in_flight"]["analysis"] >= 1
    assert figures["findings"] == 0 and figures["next_phase"] == "synthesis"
    assert 0 < figures["write_by_s"] <= figures["used_s"] < 5
    assert figures["reserve_s"] >= figures["writing_s"] > 0  # the first findings' writing
    assert figures["measured_calls"] >= 1 and figures["latency_base_s"] > 0
    assert figures["needed_s"] > 5 and f"max_time_s = {figures['needed_s']}" in report
    warning = next(w for w in state.warnings if w.startswith("Time ceiling reached"))
    assert "analysis" in warning and "cancelled" in warning


async def test_a_research_that_found_nothing_says_the_deadline_was_the_cause(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    """Searches that outlast the deadline: no source, no finding; the report says the deadline
    ended it and how much time a report with findings would need."""
    tavily_server.latency = 30.0
    state = await run_to_end(settings, "What is a skip list?", max_time_s=5)
    report = state.report or ""
    figures = the_stop(state)
    assert not state.sources and not state.findings
    assert "The deadline (max_time_s = 5 s) ended the research" in report
    assert "before any source was found" in report
    assert "more specific question" not in report and "every search failed" not in report.lower()
    assert figures["needed_s"] > 5 and f"max_time_s = {figures['needed_s']}" in report
    assert any("before the deadline" in w for w in state.warnings)


async def test_a_round_that_cannot_end_in_time_is_not_begun(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    """After the report, a further round (refinement, search, analysis at the measured pace)
    would end after writing must start: the report stands and the decision says why."""
    openai_server.delay = agent_delays(analyzer=1.5)
    state = await run_to_end(
        settings, "How do heat pumps perform in cold climates?", max_time_s=6, max_iterations=3
    )
    figures = the_stop(state)
    assert state.iteration == 1 and state.findings and state.report
    assert figures["next_phase"] == "COMPLETED"
    assert figures["used_s"] + figures["round_s"] > figures["write_by_s"]
    assert figures["analysis_s"] >= 1.5  # the analysis's measured latency, not a guess
    assert not any(d.action == "plan_next_iteration" for d in state.decisions)


def test_the_pace_is_fitted_to_the_research_s_own_calls() -> None:
    records = [
        LLMCallRecord(
            provider="p",
            model="m",
            phase="analysis",
            purpose=purpose,
            output_tokens=tokens,
            latency_s=0.4 + 0.005 * tokens,
        )
        for purpose, tokens in (("planning", 200), ("reflection:planning", 50), ("analysis", 800))
    ]
    pace = Pace.of(records)
    assert pace.calls == 3
    assert abs(pace.base_s - 0.4) < 1e-6 and abs(pace.per_token_s - 0.005) < 1e-9
    assert abs(pace.seconds(100) - 0.9) < 1e-6
    assert kind_seconds("analysis", records, pace) == records[2].latency_s  # measured
    assert kind_seconds("refinement", records, pace) == pace.seconds(200)  # the usual size
    # One size of answer only: its time is split between a fixed part and the tokens.
    single = Pace.of(records[:1])
    assert single.seconds(200) == records[0].latency_s and single.base_s > 0
    assert Pace.of([]).calls == 0  # nothing measured: the assumed pace


def test_the_report_s_writing_time_grows_with_its_findings() -> None:
    state = ResearchState(query="q", llm_provider="openai", llm_model="m")
    pace = Pace(0.4, 0.005)
    small, large = writing_time(state, [2, 2], pace), writing_time(state, [20, 20], pace)
    assert 0 < small.total_s < large.total_s
    assert large.parts == 3 and large.check_calls >= 1
    unchecked = writing_time(state, [20, 20], pace, check=False)
    assert unchecked.checking_s == 0 and unchecked.writing_s == large.writing_s
    assert writing_time(state, [], pace).total_s == 0


class BrainProvider:
    """The fake brain as an LLM provider, answering at once."""

    name = "scripted"

    def __init__(self) -> None:
        self.brain = ResearchBrain()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        text = self.brain.respond(request.system, request.user)
        return LLMResponse(text=text, model="m", provider=self.name, input_tokens=1)

    async def aclose(self) -> None:
        pass


def _written_state() -> ResearchState:
    state = ResearchState(
        query="How do heat pumps perform in cold climates?",
        llm_provider="scripted",
        llm_model="m",
        options=ResearchOptions(max_time_s=5),
    )
    for n in range(3):
        sub_query = SubQuery(query=f"heat pumps aspect {n}")
        text = f"Heat pumps keep {n + 2} units of heat per unit of power at minus ten degrees."
        source = Source(title=f"page {n}", url=f"https://x.example/{n}", content=text)
        source.sub_query_id = sub_query.id
        source.analyzed = True
        state.sub_queries.append(sub_query)
        state.sources.append(source)
        state.findings.append(Finding(content=text, source_ids=[source.id]))
    return state


@pytest.mark.parametrize("left_s", [0.2, 5.0])
async def test_the_fact_check_gets_the_time_left_before_the_deadline(left_s: float) -> None:
    """Near the deadline the fact-check is cut to what fits, here nothing, and the report says
    so; with time left it runs as configured and the report says nothing of the deadline."""
    state = _written_state()
    provider = BrainProvider()
    calls = CallLog()
    ceiling = TimeCeiling(state, calls, 5, began=anyio.current_time() - (5 - left_s))
    with ceiling.bound():
        output = await synthesize(ResearchLLM(provider, "m", state, calls), state, None)  # type: ignore[arg-type]
    skipped = left_s < 1
    assert (provider.brain.calls["verifier"] == 0) is skipped
    assert (state.claim_checks == []) is skipped
    assert ("## Time Limit" in output.report) is skipped
    assert ("fact-check was skipped" in output.report) is skipped
    assert any("fact-check was skipped" in w for w in state.warnings) is skipped


async def test_with_no_finding_in_hand_analysis_known_too_slow_is_given_up() -> None:
    """Nothing found yet, and the analysis's measured latency says the calls in flight answer
    after writing their findings would have to start: writing starts now, not at the deadline.
    Unmeasured, the same calls are awaited."""
    state = _written_state()
    state.findings = []
    calls = CallLog()
    ceiling = TimeCeiling(state, calls, 8, began=anyio.current_time() - 4.0)
    calls.depart("analysis", time.perf_counter() - 0.5)  # running for 0.5 s
    unmeasured = ceiling.judge()
    assert not unmeasured.write_now and unmeasured.in_flight == {"analysis": 1}
    state.llm_usage.add(
        LLMCallRecord(
            provider="scripted",
            model="m",
            phase="analysis",
            purpose="analysis",
            output_tokens=300,
            latency_s=6.0,
        )
    )
    measured = ceiling.judge()
    assert measured.hopeless and measured.write_now
    assert measured.expected_s is not None and measured.expected_s > measured.write_by_s
