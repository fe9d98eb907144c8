"""The refiner: judges open gaps and turns the addressable ones into follow-up sub-queries."""

from __future__ import annotations

from foundry_mcp.research.models import (
    AgentRole,
    Confidence,
    FollowUpQuery,
    GapAssessment,
    IterationRecommendation,
    RefinerOutput,
    ResearchState,
)
from foundry_mcp.research.prompts.refiner import refiner_prompts
from foundry_mcp.research.workflow.calls import ResearchLLM
from foundry_mcp.research.workflow.jsonparse import parse_handoff


async def refine(llm: ResearchLLM, state: ResearchState, guidance: str | None) -> RefinerOutput:
    """Assess the unaddressed gaps; fall back to their suggested queries if unreadable."""
    gaps = state.unaddressed_gaps()
    system, user = refiner_prompts(
        state.query,
        state.report,
        gaps,
        state.iteration,
        state.limits.max_iterations,
        len(state.sources),
        len(state.findings),
        sum(1 for f in state.findings if f.confidence is Confidence.HIGH),
        guidance,
    )
    text = await llm.ask("refinement", system, user, json_mode=True, max_tokens=2048)
    output = parse_handoff(text, RefinerOutput)
    known = {gap.id for gap in gaps}
    if output is not None:
        output.gap_analysis = [a for a in output.gap_analysis if a.gap_id in known]
    if output is None or not output.gap_analysis:
        if output is None:
            state.record_fallback(
                AgentRole.REFINER,
                "The refiner's answer could not be read; the gaps' own queries were used.",
            )
        output = RefinerOutput(
            gap_analysis=[
                GapAssessment(
                    gap_id=gap.id,
                    addressable=bool(gap.suggested_queries),
                    follow_up_queries=[FollowUpQuery(query=q) for q in gap.suggested_queries[:2]],
                )
                for gap in gaps
            ],
            iteration_recommendation=IterationRecommendation(
                should_iterate=any(gap.suggested_queries for gap in gaps),
                rationale="Fallback: the open gaps carry their own follow-up queries.",
            ),
        )
    by_id = {gap.id: gap for gap in gaps}
    for assessment in output.gap_analysis:
        by_id[assessment.gap_id].severity = assessment.severity
    return output
