"""A completed research's report rewritten: as a one-page brief in German, from its saved
findings and sources, with no search, its citations resolved and checked, for a fraction of
what the research cost; kept as the research's second version. A rewrite stopped midway goes
on from its step when resumed."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import ReportForm, ResearchState, RevisionKind, RevisionStep
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.verification import split_claims
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.support import TERMINAL, assert_citations_resolve, served_urls, wait_until

pytestmark = pytest.mark.anyio
QUESTION = "How do heat pumps perform in cold climates?"
BRIEF_MARK = "one-page brief"


async def researched(service: ResearchService) -> str:
    started = await service.start(QUESTION, mode="simple", max_iterations=2)
    status = await wait_until(service, started["research_id"], TERMINAL, timeout=60)
    # Revised at once: the run saved "completed" just before letting go of its lease, and a
    # claim taken in between must not be undone by that release (OwnershipWatch.claim_to_resume).
    assert status["status"] == "completed", status["error"]
    return str(started["research_id"])


async def revised(service: ResearchService, research_id: str, **asked: Any) -> ResearchState:
    await service.revise(research_id, asked)
    status = await wait_until(service, research_id, TERMINAL, timeout=60)
    assert status["status"] == "completed", status["error"]
    return service.store.load(research_id)


def tokens(totals: Any) -> int:
    return int(totals.input_tokens + totals.output_tokens)


async def test_a_brief_in_german_is_written_from_the_saved_evidence_alone(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        research_id = await researched(service)
        before = service.store.load(research_id)
        searches = len(tavily_server.requests_to("/search"))
        asked_before = len(brain.history)
        state = await revised(service, research_id, kind="rewrite", form="brief", language="de")

    # No search: the rewrite is written from what the research saved.
    assert len(tavily_server.requests_to("/search")) == searches
    assert state.search_calls == before.search_calls
    assert [s.id for s in state.sources] == [s.id for s in before.sources]
    assert [f.id for f in state.findings] == [f.id for f in before.findings]
    # One writer call, as a brief, in German; the rest are the fact-checker's (a sentence the
    # research's own report held, checked against the same sources, is not asked again: the
    # research's journal has its verdict).
    asked = brain.history[asked_before:]
    writers = [(system, user) for agent, system, user in asked if agent == "writer"]
    assert len(writers) == 1
    system, user = writers[0]
    assert BRIEF_MARK in system and "Write the report in German" in system
    assert {agent for agent, _, _ in asked} <= {"writer", "verifier"}
    # The versions: the research's own report, then the brief, which the research now shows.
    assert [(v.number, v.kind) for v in state.versions] == [
        (1, RevisionKind.RESEARCH),
        (2, RevisionKind.REWRITE),
    ]
    first, brief = state.versions
    assert first.report == before.report and first.finding_ids == [f.id for f in before.findings]
    assert state.report == brief.report and state.revision is None
    assert brief.instructions is not None and brief.instructions.form is ReportForm.BRIEF
    assert brief.instructions.language == "German"
    assert state.options.language == before.options.language  # the research keeps its own
    # Every [n] resolves to a source the research found, and every cited sentence was checked.
    assert_citations_resolve(state.report, served_urls(tavily_server))
    assert state.report_metadata is not None and brief.report_metadata == state.report_metadata
    assert set(brief.cited_source_ids) <= {s.id for s in before.sources}
    draft = brain.write(user)
    cited = [c for c in split_claims(draft).claims if c.source_ids]
    verification = state.report_metadata.verification
    assert verification is not None and verification.unverified == 0
    assert verification.claims_checked == len(cited) > 0
    assert len(state.claim_checks) == len(cited)
    # A small fraction of the research's cost, counted by phase.
    research, rewrite = tokens(first.cost.total), tokens(brief.cost.total)
    print(
        f"\nresearch: {first.cost.total.calls} calls, {research} tokens; "
        f"brief rewrite: {brief.cost.total.calls} calls, {rewrite} tokens "
        f"({rewrite / research:.1%}); by phase: "
        + ", ".join(f"{p} {tokens(t)}" for p, t in brief.cost.by_phase.items())
    )
    assert 0 < rewrite < research / 3
    assert brief.cost.search_calls == 0
    assert brief.cost.total.calls == len(asked)
    assert sum(t.calls for t in brief.cost.by_phase.values()) == brief.cost.total.calls
    assert tokens(first.cost.total) + rewrite == tokens(state.llm_usage.total)


async def test_a_rewrite_cancelled_while_writing_goes_on_from_its_step(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    writing, release = threading.Event(), threading.Event()

    def slow_writer(system: str, user: str) -> str:
        if BRIEF_MARK in system and not release.is_set():
            writing.set()
            release.wait(20)
        return brain.write(user)

    brain.overrides["writer"] = slow_writer
    try:
        async with research_runtime(settings, warm=False) as service:
            research_id = await researched(service)
            searches = len(tavily_server.requests_to("/search"))
            await service.revise(research_id, {"kind": "rewrite", "form": "brief"})
            with anyio.fail_after(30):
                while not writing.is_set():
                    await anyio.sleep(0.02)
            await service.cancel(research_id)
            status = await wait_until(service, research_id, TERMINAL)
            assert status["status"] == "cancelled"
            stopped = service.store.load(research_id)
            assert stopped.revision is not None
            assert stopped.revision.step is RevisionStep.WRITING
            assert [v.kind for v in stopped.versions] == [RevisionKind.RESEARCH]
            assert stopped.report == stopped.versions[0].report  # the report shown is unchanged
            release.set()
            await service.resume(research_id)
            status = await wait_until(service, research_id, TERMINAL, timeout=60)
            assert status["status"] == "completed", status["error"]
            state = service.store.load(research_id)
    finally:
        release.set()
    assert state.revision is None
    assert [v.kind for v in state.versions] == [RevisionKind.RESEARCH, RevisionKind.REWRITE]
    assert state.report == state.versions[1].report != state.versions[0].report
    assert len(tavily_server.requests_to("/search")) == searches


async def test_a_deepened_report_says_what_the_version_added(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        research_id = await researched(service)
        searches = len(tavily_server.requests_to("/search"))
        state = await revised(
            service, research_id, kind="deepen", part="defrost cycles in freezing weather"
        )
    asked = tavily_server.requests_to("/search")[searches:]
    assert asked and len(asked) < searches  # searches for the part only
    assert [v.kind for v in state.versions] == [RevisionKind.RESEARCH, RevisionKind.DEEPEN]
    deepened = state.versions[1]
    assert deepened.changes is not None and deepened.cost.search_calls == len(asked)
    assert state.report == deepened.report
    assert "## What This Version Added" in state.report
    assert_citations_resolve(state.report, served_urls(tavily_server))
    print(
        f"\ndeepen: {len(asked)} searches, {len(deepened.changes.new_source_ids)} new pages, "
        f"{len(deepened.changes.new_finding_ids)} new findings, "
        f"{deepened.cost.total.calls} calls"
    )
