"""A time ceiling that still delivers: near max_time_s the research writes its report."""

from __future__ import annotations

import time

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import InputError
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


async def test_a_slow_research_ends_with_its_report_within_the_ceiling(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 0.5  # every LLM call takes half a second
    async with research_runtime(settings, warm=False) as service:
        began = time.monotonic()
        started = service.start(
            "How do heat pumps perform in cold climates?", max_time_s=5, max_iterations=3
        )
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=30)
        took = time.monotonic() - began
        state = service.store.load(started["research_id"])
        report, _ = service.report(started["research_id"])
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
        started = service.start("What is a skip list?", max_time_s=600, max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    assert status["status"] == "completed"
    assert not [d for d in state.decisions if d.action == "time_ceiling"]
    assert "time_ceiling_reached" not in state.metadata


async def test_a_ceiling_under_five_seconds_is_refused(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        with pytest.raises(InputError) as refused:
            service.start("What is a skip list?", max_time_s=1)
    assert refused.value.details["field"] == "max_time_s"


async def test_a_hierarchical_research_cut_by_the_ceiling_reports_its_branches_findings(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    """The ceiling stops the sub-question researchers mid-way: what they found still reaches
    the report, answered or not."""
    openai_server.latency = 0.4
    async with research_runtime(settings, warm=False) as service:
        began = time.monotonic()
        started = service.start(
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
