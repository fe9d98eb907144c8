"""The quality gate of each phase: which issues it raises and the score it gives."""

from __future__ import annotations

import pytest

from foundry_mcp.research.models import (
    Confidence,
    Finding,
    Gap,
    Phase,
    ResearchLimits,
    ResearchState,
    Source,
    SourceQuality,
    SubQuery,
    SubQueryStatus,
)
from foundry_mcp.research.workflow.gates import (
    GATES,
    gate_analysis,
    gate_gathering,
    gate_planning,
    gate_refinement,
    gate_synthesis,
)


def _state(**fields) -> ResearchState:
    base = {"query": "What is the question?", "llm_provider": "openai", "llm_model": "m"}
    return ResearchState(**{**base, **fields})


def _sub_queries(n: int, completed: int = 0, length: int = 30) -> list[SubQuery]:
    return [
        SubQuery(
            query=(f"sub-query number {i} " + "x" * length)[:length],
            status=SubQueryStatus.COMPLETED if i < completed else SubQueryStatus.PENDING,
        )
        for i in range(n)
    ]


def _sources(*qualities: SourceQuality) -> list[Source]:
    return [
        Source(title=f"S{i}", url=f"https://s{i}.example", quality=q)
        for i, q in enumerate(qualities)
    ]


def _has(result, fragment: str) -> bool:
    return any(fragment.lower() in issue.lower() for issue in result.issues)


def test_every_phase_has_its_gate() -> None:
    expected = {
        Phase.PLANNING: gate_planning,
        Phase.GATHERING: gate_gathering,
        Phase.ANALYSIS: gate_analysis,
        Phase.SYNTHESIS: gate_synthesis,
        Phase.REFINEMENT: gate_refinement,
    }
    assert dict(GATES) == expected


# --------------------------------------------------------------------------- planning


@pytest.mark.parametrize(
    ("count", "valid"), [(0, False), (1, False), (2, True), (5, True), (6, False)]
)
def test_planning_needs_between_two_and_max_sub_queries(count: int, valid: bool) -> None:
    state = _state(
        research_brief="brief",
        sub_queries=_sub_queries(count),
        limits=ResearchLimits(max_sub_queries=5),
    )
    result = gate_planning(state)
    assert result.valid is valid
    assert result.valid == (not result.issues)
    assert result.quality_score == min(10.0, 2.5 * count)


def test_planning_max_follows_the_limits() -> None:
    state = _state(
        research_brief="brief",
        sub_queries=_sub_queries(4),
        limits=ResearchLimits(max_sub_queries=3),
    )
    result = gate_planning(state)
    assert not result.valid
    assert _has(result, "Too many sub-queries")
    assert _has(result, "3")


@pytest.mark.parametrize("brief", [None, ""])
def test_planning_needs_a_brief(brief: str | None) -> None:
    result = gate_planning(_state(research_brief=brief, sub_queries=_sub_queries(3)))
    assert not result.valid
    assert result.issues == ["Missing research brief"]


@pytest.mark.parametrize(("length", "valid"), [(9, False), (10, True)])
def test_planning_sub_queries_need_ten_characters(length: int, valid: bool) -> None:
    queries = [*_sub_queries(2), SubQuery(query="q" * length)]
    result = gate_planning(_state(research_brief="brief", sub_queries=queries))
    assert result.valid is valid
    assert _has(result, "too short") is not valid


# --------------------------------------------------------------------------- gathering


@pytest.mark.parametrize(("count", "valid"), [(0, False), (2, False), (3, True), (8, True)])
def test_gathering_needs_three_sources(count: int, valid: bool) -> None:
    state = _state(
        sources=_sources(*[SourceQuality.UNKNOWN] * count), sub_queries=_sub_queries(2, completed=2)
    )
    result = gate_gathering(state)
    assert result.valid is valid
    assert _has(result, "Insufficient sources") is not valid
    assert result.quality_score == min(10.0, 1.5 * count)


def test_gathering_unrated_sources_are_not_low_quality() -> None:
    state = _state(sources=_sources(*[SourceQuality.UNKNOWN] * 3), sub_queries=_sub_queries(1, 1))
    assert gate_gathering(state).valid


def test_gathering_rated_sources_need_a_high_quality_one() -> None:
    rated = [SourceQuality.UNKNOWN, SourceQuality.MEDIUM, SourceQuality.LOW]
    state = _state(sources=_sources(*rated), sub_queries=_sub_queries(1, 1))
    result = gate_gathering(state)
    assert not result.valid
    assert _has(result, "No high-quality sources")

    state.sources[0].quality = SourceQuality.HIGH
    assert gate_gathering(state).valid


@pytest.mark.parametrize(
    ("total", "completed", "valid"), [(2, 1, True), (3, 1, False), (4, 2, True), (4, 1, False)]
)
def test_gathering_needs_half_the_sub_queries_completed(
    total: int, completed: int, valid: bool
) -> None:
    state = _state(
        sources=_sources(*[SourceQuality.HIGH] * 3), sub_queries=_sub_queries(total, completed)
    )
    result = gate_gathering(state)
    assert result.valid is valid
    assert _has(result, f"{completed}/{total}") is not valid


def test_gathering_failed_sub_queries_are_not_completed() -> None:
    queries = _sub_queries(2, completed=0)
    for sq in queries:
        sq.status = SubQueryStatus.FAILED
    state = _state(sources=_sources(*[SourceQuality.HIGH] * 3), sub_queries=queries)
    assert _has(gate_gathering(state), "completion rate")


# --------------------------------------------------------------------------- analysis


def _findings(sources: list[Source], *spec: tuple[Confidence, list[int]]) -> list[Finding]:
    return [
        Finding(content=f"finding {i}", confidence=conf, source_ids=[sources[j].id for j in idx])
        for i, (conf, idx) in enumerate(spec)
    ]


def test_analysis_valid_case() -> None:
    sources = _sources(*[SourceQuality.HIGH] * 3)
    findings = _findings(sources, (Confidence.HIGH, [0]), (Confidence.LOW, [1]))
    result = gate_analysis(_state(sources=sources, findings=findings))
    assert result.valid
    assert result.quality_score == 2 * 2 + 1


def test_analysis_needs_two_findings() -> None:
    sources = _sources(SourceQuality.HIGH)
    result = gate_analysis(
        _state(sources=sources, findings=_findings(sources, (Confidence.HIGH, [0])))
    )
    assert not result.valid
    assert _has(result, "Insufficient findings")


def test_analysis_without_findings_does_not_complain_about_confidence() -> None:
    result = gate_analysis(_state(sources=_sources(SourceQuality.HIGH)))
    assert _has(result, "Insufficient findings")
    assert not _has(result, "high-confidence")
    assert result.quality_score == 0


def test_analysis_needs_a_high_confidence_finding() -> None:
    sources = _sources(*[SourceQuality.HIGH] * 2)
    findings = _findings(sources, (Confidence.MEDIUM, [0]), (Confidence.LOW, [1]))
    result = gate_analysis(_state(sources=sources, findings=findings))
    assert result.issues == ["No high-confidence findings"]


@pytest.mark.parametrize(("cited", "valid"), [(2, False), (3, True), (10, True)])
def test_analysis_needs_thirty_percent_of_sources_cited(cited: int, valid: bool) -> None:
    sources = _sources(*[SourceQuality.HIGH] * 10)
    # Two findings share the cited sources, so each source counts once.
    findings = _findings(
        sources, (Confidence.HIGH, list(range(cited))), (Confidence.HIGH, list(range(cited)))
    )
    result = gate_analysis(_state(sources=sources, findings=findings))
    assert result.valid is valid
    assert _has(result, "coverage") is not valid


def test_analysis_score_is_capped() -> None:
    sources = _sources(SourceQuality.HIGH)
    findings = _findings(sources, *[(Confidence.HIGH, [0])] * 6)
    assert gate_analysis(_state(sources=sources, findings=findings)).quality_score == 10


# --------------------------------------------------------------------------- synthesis


@pytest.mark.parametrize("report", [None, ""])
def test_synthesis_without_report_is_invalid_with_zero_score(report: str | None) -> None:
    result = gate_synthesis(_state(report=report))
    assert not result.valid
    assert result.issues == ["Missing report"]
    assert result.quality_score == 0


@pytest.mark.parametrize(("length", "valid"), [(99, False), (100, True)])
def test_synthesis_needs_a_hundred_characters(length: int, valid: bool) -> None:
    report = ("## Heading\n" + "x" * length)[:length]
    result = gate_synthesis(_state(report=report))
    assert result.valid is valid
    assert _has(result, "too short") is not valid


def test_synthesis_needs_section_structure() -> None:
    result = gate_synthesis(_state(report="# Title only\n" + "word " * 40))
    assert result.issues == ["Report missing section structure"]


def test_synthesis_score_grows_with_length_and_is_capped() -> None:
    short = gate_synthesis(_state(report="## A\n" + "x" * 995))
    long = gate_synthesis(_state(report="## A\n" + "x" * 20000))
    assert short.quality_score == pytest.approx(2.0)
    assert long.quality_score == 10


# --------------------------------------------------------------------------- refinement


def test_refinement_is_always_valid_and_flags_gaps_at_the_limit() -> None:
    gaps = [Gap(description="g1"), Gap(description="g2"), Gap(description="done", addressed=True)]
    limits = ResearchLimits(max_iterations=3)
    before = gate_refinement(_state(gaps=gaps, iteration=2, limits=limits))
    at_limit = gate_refinement(_state(gaps=gaps, iteration=3, limits=limits))
    assert before.valid and before.issues == []
    assert at_limit.valid
    assert at_limit.issues == ["Unaddressed gaps remain but iteration limit reached"]
    assert before.quality_score == at_limit.quality_score == 10 - 2 * 2


def test_refinement_without_open_gaps_has_no_issue_at_the_limit() -> None:
    state = _state(
        gaps=[Gap(description="done", addressed=True)],
        iteration=3,
        limits=ResearchLimits(max_iterations=3),
    )
    result = gate_refinement(state)
    assert result.valid and result.issues == []
    assert result.quality_score == 10


def test_refinement_score_floors_at_zero() -> None:
    state = _state(gaps=[Gap(description=f"g{i}") for i in range(7)])
    assert gate_refinement(state).quality_score == 0
