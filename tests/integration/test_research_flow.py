"""A whole research through the service, with the real SDKs talking to loopback fakes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.research.models import ResearchState, SubQueryStatus
from foundry_mcp.research.service import research_service as service_module
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.fakes.providers import SHARED_URL
from tests.support import TERMINAL, assert_citations_resolve, served_urls, wait_until

pytestmark = pytest.mark.anyio


async def test_research_completes_with_resolved_citations(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How do vector databases index embeddings?", max_iterations=2)
        status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        state = service.store.load(started["research_id"])

    # The loop ran twice: one planning, two rounds of analysis and writing, one refinement.
    # Each sub-query's sources were analysed as its search returned: one call each.
    assert brain.calls["planner"] == 1
    searched = sum(1 for sq in state.sub_queries if sq.source_ids)
    retries = sum(
        1 for d in state.decisions if d.action == "retry_phase" and d.inputs["phase"] == "analysis"
    )
    assert searched <= brain.calls["analyzer"] <= searched + retries * searched
    assert all(source.analyzed for source in state.sources)
    assert brain.reports_written == 2
    assert brain.calls["refiner"] == 1
    assert state.iteration == 2
    assert all(gap.addressed for gap in state.gaps)
    # Deduplication: the page every query returns is kept once.
    assert sum(1 for s in state.sources if s.url == SHARED_URL) == 1
    assert state.report is not None
    assert_citations_resolve(state.report, served_urls(tavily_server))
    assert state.report_metadata is not None
    assert state.report_metadata.sources_cited == len(state.report_metadata.cited_source_ids) > 0
    actions = [(d.agent.value, d.action) for d in state.decisions]
    assert ("planner", "execute_planning") in actions
    assert ("supervisor", "evaluate_phase") in actions
    assert ("supervisor", "decide_iteration") in actions
    assert status["usage"]["total"]["calls"] == sum(brain.calls.values())
    assert status["usage"]["total"]["output_tokens"] > 0


async def test_anthropic_provider_runs_a_whole_research(
    research_env: dict[str, str],
    tmp_path: Path,
    anthropic_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
) -> None:
    env = {
        **research_env,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": anthropic_server.base_url,
    }
    settings = load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(
            "What limits lithium battery recycling?", provider_id="anthropic", max_iterations=1
        )
        assert started["provider"] == "anthropic:claude-sonnet-5"
        status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        report = await service.full_report(started["research_id"])
    assert anthropic_server.requests_to("/v1/messages")
    assert_citations_resolve(report, served_urls(tavily_server))


async def test_unreadable_plan_falls_back_to_the_question(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    brain.broken_json_for = {"planner"}
    question = "Why is the sky blue at noon?"
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(question, max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    assert status["status"] == "completed"
    assert [sq.query for sq in state.sub_queries] == [question]
    assert any("planner" in w for w in state.warnings)


async def test_fenced_json_from_the_model_is_repaired(
    settings: Settings, brain: ResearchBrain
) -> None:
    brain.json_in_fences = True
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How do heat pumps work in cold climates?", max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    assert status["status"] == "completed"
    assert len(state.sub_queries) == 3
    assert len(state.findings) >= 2
    assert not state.warnings


async def test_failed_search_marks_the_sub_query_and_the_run_goes_on(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    tavily_server.fail_next(500, times=1)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How do tides form on Earth?", max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    assert status["status"] == "completed"
    failed = [sq for sq in state.sub_queries if sq.status.value == "failed"]
    assert len(failed) == 1
    assert "500" in (failed[0].error or "")
    assert len(state.completed_sub_queries()) == 2


async def test_hallucinated_citation_is_removed_and_model_sources_replaced(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    brain.hallucinate_citation = True
    brain.include_sources_section = True
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What causes auroras?", max_iterations=1)
        await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    assert state.report is not None
    assert "deadbeef" not in state.report
    assert state.report.count("## Sources") == 1
    assert state.report_metadata is not None
    assert state.report_metadata.dropped_citations == 1
    assert_citations_resolve(state.report, served_urls(tavily_server))


async def test_rejected_llm_key_fails_the_run_with_a_clear_error(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.fail_next(401, times=5)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What is a quasar?")
        status = await wait_until(service, started["research_id"], TERMINAL)
    assert status["status"] == "failed"
    assert "rejected the API key" in status["error"]
    assert "sk-test-secret-openai" not in str(status)


async def test_cancel_then_resume_does_not_redo_finished_work(
    settings: Settings,
    brain: ResearchBrain,
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
) -> None:
    async with research_runtime(settings, warm=False) as service:
        openai_server.latency = 0.4
        started = await service.start("How do solar panels degrade over time?", max_iterations=1)
        research_id = started["research_id"]
        # Let planning and every search finish, then cancel while analysis is in flight.
        with anyio.fail_after(10):
            while not _searched_not_analysed(service.store.load(research_id)):
                await anyio.sleep(0.02)
        cancelled = await service.cancel(research_id)
        assert cancelled["status"] in ("cancelling", "cancelled")
        status = await wait_until(service, research_id, {"cancelled"})
        state = service.store.load(research_id)
        assert state.metadata["cancelled"] is True
        assert state.metadata["abort_phase"] in ("gathering", "analysis")
        assert len(state.sources) > 0  # partial results stay
        searched = len(tavily_server.requests_to("/search"))

        openai_server.latency = 0
        resumed = await service.resume(research_id)
        assert resumed["resumed_from"] == "cancelled"
        status = await wait_until(service, research_id, TERMINAL)
        assert status["status"] == "completed", status["error"]
        decisions = [d.action for d in service.store.load(research_id).decisions]
    assert "resume" in decisions
    assert brain.calls["planner"] == 1  # planning was not repeated
    assert len(tavily_server.requests_to("/search")) == searched  # nor was searching


def _searched_not_analysed(state: ResearchState) -> bool:
    searched = bool(state.sub_queries) and all(
        sq.status is SubQueryStatus.COMPLETED for sq in state.sub_queries
    )
    return searched and any(not source.analyzed for source in state.sources)


async def test_resume_refuses_completed_and_running_research(settings: Settings) -> None:
    from foundry_mcp.errors import InvalidStateError

    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What is dark matter made of?", max_iterations=1)
        with pytest.raises(InvalidStateError, match="still being worked on"):
            await service.resume(started["research_id"])
        await wait_until(service, started["research_id"], TERMINAL)
        with pytest.raises(InvalidStateError, match="already completed"):
            await service.resume(started["research_id"])


async def test_timeout_ends_the_run_timed_out_and_keeps_partial_work(
    settings: Settings, openai_server: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(service_module.LIMIT_BOUNDS, "task_timeout", (0.1, 86400))
    openai_server.latency = 0.5
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How are exoplanets detected?", task_timeout=0.8)
        status = await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    assert status["status"] == "timed_out"
    assert state.metadata["timeout"] is True
    assert "task_timeout" in (status["error"] or "")
    assert state.sub_queries  # planning finished before the deadline


async def test_shutdown_interrupts_and_a_new_process_can_resume(
    settings: Settings, openai_server: FakeHTTPServer, brain: ResearchBrain
) -> None:
    openai_server.latency = 0.3
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How does CRISPR gene editing work?", max_iterations=1)
        research_id = started["research_id"]
        with anyio.fail_after(10):
            while not service.store.load(research_id).sub_queries:
                await anyio.sleep(0.05)
    # The runtime closed while the research ran: it is saved as interrupted.
    openai_server.latency = 0
    async with research_runtime(settings, warm=False) as service:
        status = await service.status(research_id)
        assert status["status"] == "interrupted"
        await service.resume(research_id)
        status = await wait_until(service, research_id, TERMINAL)
    assert status["status"] == "completed"
    assert brain.calls["planner"] == 1


async def test_all_searches_failing_proceeds_and_the_report_says_so(
    settings: Settings, tavily_server: FakeHTTPServer, brain: ResearchBrain
) -> None:
    tavily_server.fail_next(503, times=1000)  # down for good (the gate's retry fails too)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How do octopuses camouflage?", max_iterations=1)
        research_id = started["research_id"]
        status = await wait_until(service, research_id, TERMINAL)
        report = await service.full_report(research_id)
    assert status["status"] == "completed"
    assert any("Every search of iteration 1 failed" in w for w in status["warnings"])
    assert brain.calls["writer"] == 0  # no report written from the model's memory
    assert "Every search failed" in report and "makes no claims" in report
    assert "503" in report


async def test_no_findings_gives_an_honest_report_without_asking_the_model(
    settings: Settings, brain: ResearchBrain
) -> None:
    brain.overrides["analyzer"] = '{"findings": [], "gaps": [], "quality_updates": []}'
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("Is there life on Europa?", max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        report = await service.full_report(started["research_id"])
    assert status["status"] == "completed"
    assert brain.calls["writer"] == 0
    assert "makes no claims" in report
    assert "[1]" not in report


async def test_tavily_search_depth_reaches_the_api(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    settings.research.tavily_search_depth = "advanced"
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What is a radix tree?", max_iterations=1)
        await wait_until(service, started["research_id"], TERMINAL)
    bodies = [r.json for r in tavily_server.requests_to("/search")]
    assert bodies and all(body["search_depth"] == "advanced" for body in bodies)
