"""The refiner: judges open gaps and turns the addressable ones into follow-up sub-queries.

Its advice outlives the call: the gaps it names in ``priority_gaps`` are followed up first, and
its ``report_improvements`` reach the next synthesis. Both are recorded in an ``assess_gaps``
decision, from which :func:`report_improvements` reads them back (so a resumed research still
has them).
"""

from __future__ import annotations

from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    AgentDecision,
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
from foundry_mcp.research.workflow.fitting.fitter import Fitting

LEGACY_MAX_TOKENS = 2048
ADVICE_ACTION = "assess_gaps"  # the refiner's decision that records its advice
MAX_IMPROVEMENTS = 5  # more than a handful of edits dilutes the writer's attention


async def refine(llm: ResearchLLM, state: ResearchState, guidance: str | None) -> RefinerOutput:
    """Assess the unaddressed gaps; fall back to their suggested queries if unreadable.

    The assessments come back most important first: the gaps named in ``priority_gaps`` in the
    order named, then the others by their priority. The advice is recorded as a decision.
    """
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
    output = await ask_json(
        fitting.json_ask("refinement", LEGACY_MAX_TOKENS, build),
        system,
        user,
        RefinerOutput,
        state=state,
        agent=AgentRole.REFINER,
        fallback="The refiner's answer could not be read; the gaps' own queries were used.",
    )
    known = {gap.id for gap in gaps}
    if output is not None:
        output.gap_analysis = [a for a in output.gap_analysis if a.gap_id in known]
    if output is None or not output.gap_analysis:
        # Advice given without assessments is kept; the assessments fall back.
        advice = output or RefinerOutput()
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
                priority_gaps=advice.iteration_recommendation.priority_gaps,
            ),
            report_improvements=advice.report_improvements,
        )
    by_id = {gap.id: gap for gap in gaps}
    for assessment in output.gap_analysis:
        by_id[assessment.gap_id].severity = assessment.severity
    _rank(output, gaps)
    _record_advice(state, output, len(gaps))
    return output


def report_improvements(state: ResearchState) -> list[str]:
    """The improvements the refiner of the previous iteration asked of this iteration's report."""
    for decision in reversed(state.decisions):
        if (
            decision.agent is AgentRole.REFINER
            and decision.action == ADVICE_ACTION
            and decision.inputs.get("iteration") == state.iteration - 1
        ):
            improvements = (decision.outputs or {}).get("report_improvements") or []
            return [str(item) for item in improvements]
    return []


def _rank(output: RefinerOutput, gaps: list[Gap]) -> None:
    """Put the assessments in priority order, and keep only known, distinct ``priority_gaps``."""
    order = {gap.id: n for n, gap in enumerate(gaps)}
    named = list(
        dict.fromkeys(g for g in output.iteration_recommendation.priority_gaps if g in order)
    )
    output.iteration_recommendation.priority_gaps = named
    rank = {gap_id: n for n, gap_id in enumerate(named)}
    priority = {gap.id: gap.priority for gap in gaps}
    output.gap_analysis.sort(
        key=lambda a: (rank.get(a.gap_id, len(rank)), priority[a.gap_id], order[a.gap_id])
    )


def _record_advice(state: ResearchState, output: RefinerOutput, gap_count: int) -> None:
    """Record which gaps the refiner put first and what it asked of the next report."""
    improvements = [" ".join(text.split()) for text in output.report_improvements]
    improvements = [text for text in improvements if text][:MAX_IMPROVEMENTS]
    output.report_improvements = improvements
    priority_gaps = output.iteration_recommendation.priority_gaps
    state.record(
        AgentDecision(
            agent=AgentRole.REFINER,
            action=ADVICE_ACTION,
            rationale=(
                f"The refiner assessed {gap_count} gap(s), put {len(priority_gaps)} first and "
                f"suggested {len(improvements)} improvement(s) for the next report."
            ),
            inputs={"iteration": state.iteration, "gap_count": gap_count},
            outputs={
                "priority_gaps": priority_gaps,
                "follow_up_order": [a.gap_id for a in output.gap_analysis],
                "report_improvements": improvements,
            },
        )
    )


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
