"""The refiner: judges open gaps and turns the addressable ones into follow-up sub-queries."""

from __future__ import annotations

from foundry_mcp.research.models import (
    AgentRole,
    Confidence,
    FollowUpQuery,
    Gap,
    GapAssessment,
    IterationRecommendation,
    RefinerOutput,
    ResearchState,
)
from foundry_mcp.research.prompts.refiner import REPORT_EXCERPT_CHARS, refiner_prompts
from foundry_mcp.research.workflow.calls import ResearchLLM
from foundry_mcp.research.workflow.fitting import Fitting
from foundry_mcp.research.workflow.jsonparse import parse_handoff

LEGACY_MAX_TOKENS = 2048


async def refine(llm: ResearchLLM, state: ResearchState, guidance: str | None) -> RefinerOutput:
    """Assess the unaddressed gaps; fall back to their suggested queries if unreadable."""
    gaps = state.unaddressed_gaps()
    fitting = await Fitting.open(llm, state, "refinement")

    def build(scale: float) -> tuple[str, str]:
        """The prompts; the report excerpt and gap list within ``scale`` of the budget."""
        excerpt_chars = REPORT_EXCERPT_CHARS
        listed = gaps
        if fitting.enabled:
            budget = max(1, int(fitting.phase_budget("refinement") * scale))
            # The excerpt may use half the budget (at about three characters a token).
            excerpt_chars = max(200, min(int(REPORT_EXCERPT_CHARS * scale), budget * 3 // 2))
            listed = _gaps_within(fitting, gaps, budget - min(budget // 2, excerpt_chars // 3))
        return refiner_prompts(
            state.query,
            state.report,
            listed,
            state.iteration,
            state.limits.max_iterations,
            len(state.sources),
            len(state.findings),
            sum(1 for f in state.findings if f.confidence is Confidence.HIGH),
            guidance,
            report_excerpt_chars=excerpt_chars,
        )

    system, user = build(1.0)
    text = await fitting.ask(
        "refinement",
        system,
        user,
        json_mode=True,
        max_tokens=fitting.output_tokens("refinement", LEGACY_MAX_TOKENS),
        rebuild=build,
    )
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


def _gaps_within(fitting: Fitting, gaps: list[Gap], budget: int) -> list[Gap]:
    """The most important gaps (lowest priority number first) whose lines fit ``budget``."""
    kept: list[Gap] = []
    used = 0
    for gap in sorted(gaps, key=lambda g: (g.priority, g.iteration)):
        cost = fitting.counter.count(f"Gap {gap.id} (priority {gap.priority}): {gap.description}")
        cost += fitting.counter.count("; ".join(gap.suggested_queries)) + 8
        if kept and used + cost > budget:
            break
        kept.append(gap)
        used += cost
    order = {gap.id: n for n, gap in enumerate(gaps)}
    return sorted(kept, key=lambda g: order[g.id])
