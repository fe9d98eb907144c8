"""Citation verification in a whole research: real openai SDK against the fake server."""

from __future__ import annotations

import json

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import ResearchState, Verdict
from foundry_mcp.research.verification import spread
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.fakes.http import FakeResponse, RecordedRequest, error_body
from tests.support import TERMINAL, assert_citations_resolve, served_urls, wait_until

pytestmark = pytest.mark.anyio

UNSUPPORTED = "Quantum tunnelling powers every household refrigerator."


async def _research(settings: Settings, question: str) -> ResearchState:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(question, max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        return service.store.load(started["research_id"])


def _judge_calls(state: ResearchState) -> int:
    """The fact-checker calls the checked claims needed, spread over the concurrent calls."""
    return len(spread(list(range(len(state.claim_checks))), state.limits.max_concurrent))


def _evidence_section(report: str) -> str:
    body = report.split("\n## Sources\n", 1)[0]
    assert "\n## Evidence Quality\n" in body, "the report has no Evidence Quality section"
    return body.split("\n## Evidence Quality\n", 1)[1]


async def test_unsupported_claim_is_removed_and_reported(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    brain.unsupported_claim = UNSUPPORTED
    state = await _research(settings, "How do vector databases index embeddings?")

    assert brain.calls["verifier"] == _judge_calls(state)
    writer_prompt = "\n".join(user for agent, _, user in brain.history if agent == "writer")
    assert state.report is not None
    assert "Quantum tunnelling" not in state.report.split("\n## Evidence Quality\n", 1)[0]
    (check,) = [c for c in state.claim_checks if "Quantum tunnelling" in c.sentence]
    assert check.verdict is Verdict.UNSUPPORTED
    assert check.source_ids and check.source_ids[0] in writer_prompt  # it cited a real source
    metadata = state.report_metadata
    assert metadata is not None and metadata.verification is not None
    assert metadata.verification.unsupported >= 1
    assert metadata.verification.removed >= 1
    assert metadata.verification.supported >= 2
    assert metadata.verification.claims_checked == len(state.claim_checks)
    section = _evidence_section(state.report)
    assert "Quantum tunnelling powers every household refrigerator" in section
    assert "Unsupported sentences removed from the report: 1" in section
    assert_citations_resolve(state.report, served_urls(tavily_server))
    # The metadata describes the final report.
    assert "Evidence Quality" in metadata.sections
    body = state.report.split("\n## Sources\n", 1)[0]
    assert metadata.word_count == len(body.split())
    assert metadata.sources_cited == len(metadata.cited_source_ids)


async def test_evidence_based_research_keeps_every_claim(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    state = await _research(settings, "How do heat pumps work in cold climates?")

    assert brain.calls["verifier"] == _judge_calls(state)
    assert state.claim_checks
    assert all(c.verdict is Verdict.SUPPORTED for c in state.claim_checks)
    metadata = state.report_metadata
    assert metadata is not None and metadata.verification is not None
    summary = metadata.verification
    assert summary.supported == summary.claims_checked == len(state.claim_checks)
    assert summary.removed == summary.unsupported == summary.partial == 0
    assert summary.llm_calls == _judge_calls(state)
    assert summary.uncited_sentences >= 1  # the executive summary cites nothing
    assert state.report is not None
    section = _evidence_section(state.report)
    assert f"{summary.claims_checked} ({summary.claims_checked} supported" in section
    assert "Removed because" not in section
    assert "partly supported*" not in state.report
    assert_citations_resolve(state.report, served_urls(tavily_server))
    assert not state.warnings


async def test_verification_disabled_asks_no_fact_checker(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    settings.research.deep_research_verify_citations = False
    brain.unsupported_claim = UNSUPPORTED
    state = await _research(settings, "What limits lithium battery recycling?")

    assert brain.calls["verifier"] == 0
    assert state.claim_checks == []
    assert state.report is not None
    assert "Quantum tunnelling" in state.report  # nothing checked, nothing removed
    assert "Citations were not verified" in _evidence_section(state.report)
    assert state.report_metadata is not None
    assert state.report_metadata.verification is None
    assert_citations_resolve(state.report, served_urls(tavily_server))


async def test_unreadable_fact_check_keeps_claims_unverified(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    brain.broken_json_for = {"verifier"}
    brain.unsupported_claim = UNSUPPORTED
    state = await _research(settings, "How do tides form on Earth?")

    assert state.claim_checks
    assert all(c.verdict is Verdict.UNVERIFIED for c in state.claim_checks)
    assert state.report is not None
    assert "Quantum tunnelling" in state.report  # unverified claims are kept
    assert any("fact-check answer could not be read" in w for w in state.warnings)
    assert state.report_metadata is not None and state.report_metadata.verification is not None
    assert state.report_metadata.verification.removed == 0
    assert_citations_resolve(state.report, served_urls(tavily_server))


async def test_fact_checker_outage_keeps_the_report(
    settings: Settings,
    brain: ResearchBrain,
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
) -> None:
    brain.unsupported_claim = UNSUPPORTED
    original = openai_server._routes[("POST", "/v1/chat/completions")]

    def fact_checker_down(request: RecordedRequest) -> FakeResponse:
        if "fact-checker" in json.dumps(request.json):
            return FakeResponse(503, error_body(503, "injected failure (503)"))
        return original(request)

    openai_server.route("POST", "/v1/chat/completions", fact_checker_down)
    state = await _research(settings, "How do octopuses camouflage?")

    assert brain.calls["verifier"] == 0  # the request never reached the brain
    assert state.report is not None and state.claim_checks
    assert all(c.verdict is Verdict.UNVERIFIED for c in state.claim_checks)
    assert "Quantum tunnelling" in state.report
    assert any("Citation verification stopped" in w for w in state.warnings)
    assert state.report_metadata is not None and state.report_metadata.verification is not None
    assert state.report_metadata.verification.unverified == len(state.claim_checks)
    assert "0 supported" in _evidence_section(state.report)
    assert_citations_resolve(state.report, served_urls(tavily_server))


async def test_report_quotes_put_the_backing_passages_under_the_sources(
    settings: Settings,
) -> None:
    settings.report.quotes = True
    state = await _research(settings, "How do vector databases index embeddings?")
    assert state.report is not None
    listing = state.report.split("\n## Sources\n", 1)[1]
    quoted = [line[3:-1] for line in listing.splitlines() if line.startswith('> "')]
    assert quoted
    backed = [" ".join(q.text.split()) for c in state.claim_checks for q in c.quotes]
    assert all(any(text.rstrip("…") in b for b in backed) for text in quoted)
