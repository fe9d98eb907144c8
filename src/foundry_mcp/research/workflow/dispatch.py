"""What a dispatch decision records: the inputs the agent of a phase is handed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from foundry_mcp.research.models import Phase, ResearchState, SourceQuality, SubQueryStatus

DISPATCH_TEXT_CHARS = 200  # the question and other texts in a dispatch record are cut to this


def dispatch_inputs(state: ResearchState, phase: Phase) -> dict[str, Any]:
    """What the agent of ``phase`` is handed, as its dispatch decision records it.

    Every dispatch names the research, its question, the phase, iteration and mode; each phase
    adds the figures its agent works from (the handoff inputs of ``specs/handoffs.md``).
    """
    common = {
        "research_id": state.id,
        "original_query": _clip(state.query),
        "phase": phase.value,
        "iteration": state.iteration,
        "mode": state.mode.value,
    }
    return {**common, **_PHASE_INPUTS[phase](state)}


def _planning_inputs(state: ResearchState) -> dict[str, Any]:
    return {
        "system_prompt": _clip(state.system_prompt) if state.system_prompt else None,
        "max_sub_queries": state.limits.max_sub_queries,
    }


def _gathering_inputs(state: ResearchState) -> dict[str, Any]:
    pending = [
        _clip(sq.query)
        for sq in state.sub_queries
        if sq.iteration == state.iteration and sq.status is SubQueryStatus.PENDING
    ]
    return {
        "sub_query_count": len(pending),
        "sub_queries": pending,
        "search_providers": list(state.search_providers),
        "source_types": list(state.options.search.source_types),
        "max_sources_per_query": state.limits.max_sources_per_query,
        "max_concurrent": state.limits.max_concurrent,
    }


def _analysis_inputs(state: ResearchState) -> dict[str, Any]:
    return {
        "source_count": len(state.sources),
        "unanalyzed_sources": sum(1 for s in state.sources if not s.analyzed),
        "high_quality_sources": sum(1 for s in state.sources if s.quality is SourceQuality.HIGH),
    }


def _synthesis_inputs(state: ResearchState) -> dict[str, Any]:
    return {
        "source_count": len(state.sources),
        "finding_count": len(state.findings),
        "gap_count": len(state.unaddressed_gaps()),
        "has_research_brief": bool(state.research_brief),
    }


def _refinement_inputs(state: ResearchState) -> dict[str, Any]:
    gaps = state.unaddressed_gaps()
    return {
        "gap_count": len(gaps),
        "gaps": [_clip(gap.description) for gap in gaps],
        "remaining_iterations": max(0, state.limits.max_iterations - state.iteration),
        "has_report_draft": state.report is not None,
    }


_PHASE_INPUTS: dict[Phase, Callable[[ResearchState], dict[str, Any]]] = {
    Phase.PLANNING: _planning_inputs,
    Phase.GATHERING: _gathering_inputs,
    Phase.ANALYSIS: _analysis_inputs,
    Phase.SYNTHESIS: _synthesis_inputs,
    Phase.REFINEMENT: _refinement_inputs,
}


def _clip(text: str) -> str:
    """``text`` cut to ``DISPATCH_TEXT_CHARS``: a long question is not copied into every record."""
    if len(text) <= DISPATCH_TEXT_CHARS:
        return text
    return text[: DISPATCH_TEXT_CHARS - 1] + "…"
