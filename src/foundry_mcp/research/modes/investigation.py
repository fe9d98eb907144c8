"""Hypotheses mode's GATHERING phase: the hypotheses explored, searched, read and weighed.

*Sequential*: one hypothesis at a time, its searches gathered, their sources analysed, the
hypothesis weighed against the findings so far; in *adaptive* mode a coverage assessment then
decides whether to stop (the rest are skipped, with its reasoning) and which hypothesis comes
next. *Parallel*: every hypothesis's searches at once, one analysis, the assessments
concurrently. Each step is saved, so a resumed research redoes no finished search and no weighed
hypothesis (see :mod:`.hypotheses` for the whole mode, :mod:`.exploration` for its rules).
"""

from __future__ import annotations

from typing import Any

import anyio

from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.models import (
    AgentRole,
    BranchStatus,
    ExplorationMode,
    Hypothesis,
    HypothesisMode,
    ResearchState,
)
from foundry_mcp.research.modes.exploration import (
    all_failed,
    decide,
    number_of,
    numbered,
    searches_of,
    skip,
    sub_queries_for,
    with_status,
)
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.workflow.agents.analyzer import analyze
from foundry_mcp.research.workflow.agents.gatherer import gather
from foundry_mcp.research.workflow.agents.hypothesizer import assess_coverage, assess_hypothesis


async def explore_hypotheses(
    state: ResearchState, kit: ResearchKit, guidance: str | None
) -> dict[str, Any]:
    """Explore every hypothesis still to explore, as the research's options say."""
    modes = state.options.mode
    waiting = with_status(state, BranchStatus.PENDING, BranchStatus.RESEARCHING)
    parallel = modes.exploration_mode is ExplorationMode.PARALLEL
    how = (
        "all at once"
        if parallel
        else "one at a time, a coverage assessment after each"
        if modes.hypothesis_mode is HypothesisMode.ADAPTIVE
        else "one at a time"
    )
    if waiting:
        decide(
            state,
            AgentRole.SUPERVISOR,
            "explore_hypotheses",
            f"{len(waiting)} hypothes{'is is' if len(waiting) == 1 else 'es are'} explored {how}.",
            {
                "hypothesis_mode": modes.hypothesis_mode.value,
                "exploration_mode": modes.exploration_mode.value,
            },
            {"exploring": [h.id for h in waiting]},
        )
    if parallel:
        await _explore_together(state, kit, waiting, guidance)
    else:
        while (hypothesis := _next_hypothesis(state)) is not None:
            await _investigate(state, kit, hypothesis, guidance)
            if modes.hypothesis_mode is HypothesisMode.ADAPTIVE:
                await _judge_coverage(state, kit, hypothesis, guidance)
            hypothesis.status = BranchStatus.COMPLETED
            await kit.checkpoint()
    return {
        "explored": len(with_status(state, BranchStatus.COMPLETED)),
        "skipped": len(with_status(state, BranchStatus.SKIPPED)),
        "source_count": len(state.sources),
        "finding_count": len(state.findings),
    }


def _next_hypothesis(state: ResearchState) -> Hypothesis | None:
    """The one being explored (after a restart), else the coverage's pick, else the first."""
    researching = with_status(state, BranchStatus.RESEARCHING)
    if researching:
        return researching[0]
    pending = with_status(state, BranchStatus.PENDING)
    recommended = state.coverage[-1].recommended_next if state.coverage else None
    return next((h for h in pending if h.id == recommended), pending[0] if pending else None)


async def _investigate(
    state: ResearchState, kit: ResearchKit, hypothesis: Hypothesis, guidance: str | None
) -> None:
    """Search, read and weigh one hypothesis, skipping whatever a previous run finished."""
    hypothesis.status = BranchStatus.RESEARCHING
    _plan_searches(state, hypothesis)
    await kit.checkpoint()
    await _search_and_read(state, kit, guidance)
    await _weigh(state, kit, hypothesis, guidance)


async def _explore_together(
    state: ResearchState, kit: ResearchKit, waiting: list[Hypothesis], guidance: str | None
) -> None:
    for hypothesis in waiting:
        hypothesis.status = BranchStatus.RESEARCHING
        _plan_searches(state, hypothesis)
    await kit.checkpoint()
    await _search_and_read(state, kit, guidance)
    limiter = anyio.Semaphore(state.limits.max_concurrent)

    async def weigh(hypothesis: Hypothesis) -> None:
        async with limiter:
            await _weigh(state, kit, hypothesis, guidance)
        hypothesis.status = BranchStatus.COMPLETED
        await kit.checkpoint()

    await fan_out(weigh, waiting, in_turn=True)


def _plan_searches(state: ResearchState, hypothesis: Hypothesis) -> None:
    if hypothesis.verdict is None and not searches_of(state, hypothesis):
        state.sub_queries.extend(sub_queries_for(hypothesis, state))


async def _search_and_read(state: ResearchState, kit: ResearchKit, guidance: str | None) -> None:
    """Gather every pending search, then analyse every source not analysed yet."""
    if state.pending_sub_queries():
        await gather(
            state,
            kit.search,
            kit.calls,
            kit.checkpoint,
            kit.fetcher,
            pool=kit.pool,
            local_providers=kit.local_providers,
            private=kit.private,
        )
        for hypothesis in with_status(state, BranchStatus.RESEARCHING):
            if all_failed(state, hypothesis):
                state.warn(
                    f"Every search of hypothesis H{number_of(state, hypothesis.id)} failed "
                    "(check the search providers with action='health'); it is weighed "
                    "against the other hypotheses' findings only."
                )
    if any(not source.analyzed for source in state.sources):
        await analyze(kit.llm, state, guidance, kit.checkpoint)


async def _weigh(
    state: ResearchState, kit: ResearchKit, hypothesis: Hypothesis, guidance: str | None
) -> None:
    if hypothesis.verdict is not None:  # weighed before a restart
        return
    number = number_of(state, hypothesis.id)
    await assess_hypothesis(kit.llm, state, number, hypothesis, guidance)
    verdict = hypothesis.verdict.value if hypothesis.verdict else None
    decide(
        state,
        AgentRole.ANALYZER,
        "assess_hypothesis",
        f"H{number} is {verdict}: {hypothesis.assessment or 'no reasoning given'}",
        {"hypothesis": hypothesis.id, "initial_confidence": hypothesis.confidence},
        {
            "verdict": verdict,
            "final_confidence": hypothesis.final_confidence,
            "evidence_for": hypothesis.evidence_for,
            "evidence_against": hypothesis.evidence_against,
        },
    )
    await kit.checkpoint()


async def _judge_coverage(
    state: ResearchState, kit: ResearchKit, hypothesis: Hypothesis, guidance: str | None
) -> None:
    """Ask whether to stop after ``hypothesis``; if so, skip the rest with the reason."""
    remaining = numbered(state, BranchStatus.PENDING)
    if not remaining or any(c.after == hypothesis.id for c in state.coverage):
        return
    explored = numbered(state, BranchStatus.COMPLETED, BranchStatus.RESEARCHING)
    coverage = await assess_coverage(kit.llm, state, explored, remaining, guidance)
    state.coverage.append(coverage)
    number = number_of(state, hypothesis.id)
    if coverage.sufficient:
        for _, rest in remaining:
            skip(
                rest,
                f"The coverage assessment after H{number} judged the question covered: "
                f"{coverage.reasoning or 'no reason given'}",
            )
    decide(
        state,
        AgentRole.SUPERVISOR,
        "assess_coverage",
        coverage.reasoning
        or ("Coverage is sufficient." if coverage.sufficient else "Exploration continues."),
        {"after": hypothesis.id, "remaining": [h.id for _, h in remaining]},
        {"sufficient": coverage.sufficient, "recommended_next": coverage.recommended_next},
    )
