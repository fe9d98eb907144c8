"""Quality gates: the validation rule of each phase, applied after the phase completes."""

from __future__ import annotations

from collections.abc import Callable

from foundry_mcp.research.models import (
    Confidence,
    Phase,
    ResearchState,
    SourceQuality,
    ValidationResult,
)


def gate_planning(state: ResearchState) -> ValidationResult:
    issues = []
    current = [sq for sq in state.sub_queries if sq.iteration == state.iteration]
    if len(current) < 2:
        issues.append("Insufficient sub-queries (minimum: 2)")
    if len(current) > state.limits.max_sub_queries:
        issues.append(f"Too many sub-queries (max: {state.limits.max_sub_queries})")
    if not state.research_brief:
        issues.append("Missing research brief")
    issues += [f"Sub-query too short: {sq.query[:20]}" for sq in current if len(sq.query) < 10]
    return ValidationResult(
        valid=not issues, issues=issues, quality_score=min(10.0, len(current) * 2.5)
    )


def gate_gathering(state: ResearchState) -> ValidationResult:
    issues = []
    if len(state.sources) < 3:
        issues.append("Insufficient sources (minimum: 3)")
    high = sum(1 for s in state.sources if s.quality is SourceQuality.HIGH)
    # Quality is rated by the analyzer; before the first analysis every rating is unknown.
    rated = any(s.quality is not SourceQuality.UNKNOWN for s in state.sources)
    if rated and high == 0:
        issues.append("No high-quality sources found")
    completed, total = len(state.completed_sub_queries()), len(state.sub_queries)
    if completed < total * 0.5:
        issues.append(f"Low sub-query completion rate: {completed}/{total}")
    return ValidationResult(
        valid=not issues, issues=issues, quality_score=min(10.0, len(state.sources) * 1.5)
    )


def gate_analysis(state: ResearchState) -> ValidationResult:
    issues = []
    if len(state.findings) < 2:
        issues.append("Insufficient findings (minimum: 2)")
    high = sum(1 for f in state.findings if f.confidence is Confidence.HIGH)
    if state.findings and high == 0:
        issues.append("No high-confidence findings")
    cited = {sid for f in state.findings for sid in f.source_ids}
    coverage = len(cited) / max(1, len(state.sources))
    if coverage < 0.3:
        issues.append(f"Low source citation coverage: {coverage:.0%}")
    return ValidationResult(
        valid=not issues, issues=issues, quality_score=min(10.0, len(state.findings) * 2 + high)
    )


def gate_synthesis(state: ResearchState) -> ValidationResult:
    if not state.report:
        return ValidationResult(valid=False, issues=["Missing report"], quality_score=0)
    issues = []
    if len(state.report) < 100:
        issues.append("Report too short (minimum: 100 chars)")
    if "##" not in state.report:
        issues.append("Report missing section structure")
    return ValidationResult(
        valid=not issues, issues=issues, quality_score=min(10.0, len(state.report) / 500)
    )


def gate_refinement(state: ResearchState) -> ValidationResult:
    unaddressed = len(state.unaddressed_gaps())
    issues = []
    if unaddressed and state.iteration >= state.limits.max_iterations:
        issues.append("Unaddressed gaps remain but iteration limit reached")
    return ValidationResult(
        valid=True, issues=issues, quality_score=float(10 - min(10, unaddressed * 2))
    )


GATES: dict[Phase, Callable[[ResearchState], ValidationResult]] = {
    Phase.PLANNING: gate_planning,
    Phase.GATHERING: gate_gathering,
    Phase.ANALYSIS: gate_analysis,
    Phase.SYNTHESIS: gate_synthesis,
    Phase.REFINEMENT: gate_refinement,
}
