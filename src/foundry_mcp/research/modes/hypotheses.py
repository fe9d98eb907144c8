"""Hypotheses mode: competing hypotheses, each explored with its own searches and weighed (seed 004).

PLANNING   the investigator proposes 1 to ``max_hypotheses_per_task`` hypotheses (statement,
           confidence 0-100, search strategy, exploration priority), kept in exploration
           order. Those below ``min_confidence_threshold`` are skipped (the first is kept if all
           are), and with ``hypothesis_mode = best_first`` all but the first; each skip says why.
GATHERING  the hypotheses are explored. *Sequential*: one at a time, its searches (its strategy's
           queries, aimed at the user's documents or the web as its sources say) gathered, their
           sources analysed, the hypothesis weighed against the findings so far; in *adaptive*
           mode a coverage assessment then decides whether to stop (the rest are skipped, with
           its reasoning) and which hypothesis comes next; *exhaustive* explores them all.
           *Parallel*: every hypothesis's searches at once, one analysis, the assessments
           concurrently; no early stop. Each step is saved, so a resumed research redoes no
           finished search and no weighed hypothesis.
ANALYSIS   what is left: sources not analysed yet (normally none).
SYNTHESIS  the report, written knowing the hypotheses' outcomes, ends with a "Hypothesis
           exploration" section written by code: each hypothesis, its confidence before and
           after, its verdict, and the findings for and against it, cited.

There is no refinement round: the coverage assessment is this mode's answer to "is more
research needed?", and a hypothesis is never explored twice.
"""

from __future__ import annotations

from typing import Any

import anyio

from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    BranchStatus,
    ExplorationMode,
    Hypothesis,
    HypothesisMode,
    HypothesisVerdict,
    Phase,
    ResearchState,
    SubQuery,
    SubQueryStatus,
    ValidationResult,
)
from foundry_mcp.research.modes.exploration import (
    SECTION_HEADING,
    exploration_section,
    number_of,
    proposal_decision,
    select_for_exploration,
    skip,
    sub_queries_for,
)
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.prompts.hypotheses import HYPOTHESES_WRITER_SYSTEM, render_outcomes
from foundry_mcp.research.workflow.analyzer import analyze
from foundry_mcp.research.workflow.fanout import fan_out
from foundry_mcp.research.workflow.gates import GATES
from foundry_mcp.research.workflow.gatherer import gather
from foundry_mcp.research.workflow.hypothesizer import (
    Numbered,
    assess_coverage,
    assess_hypothesis,
    propose_hypotheses,
)
from foundry_mcp.research.workflow.synthesizer import Writing, synthesize


class HypothesesPlaybook:
    """The phases of a hypotheses research; see the module."""

    def __init__(self, state: ResearchState, kit: ResearchKit) -> None:
        self.state = state
        self.kit = kit

    # ------------------------------------------------------------------ the phases' work

    async def execute(self, phase: Phase, guidance: str | None) -> dict[str, Any]:
        if phase is Phase.PLANNING:
            return await self._propose(guidance)
        if phase is Phase.GATHERING:
            return await self._explore(guidance)
        if phase is Phase.ANALYSIS:
            return await self._analyse_rest(guidance)
        if phase is Phase.SYNTHESIS:
            return await self._write(guidance)
        return self._no_refinement()

    async def _propose(self, guidance: str | None) -> dict[str, Any]:
        state = self.state
        if not state.hypotheses:
            # Aiming a strategy at the user's documents means something only beside the web.
            local = {p.name in self.kit.local_providers for p in self.kit.search}
            brief, hypotheses = await propose_hypotheses(
                self.kit.llm, state, guidance, local_search=local == {True, False}
            )
            state.research_brief = brief or state.research_brief
            select_for_exploration(hypotheses, state.options.mode)
            state.hypotheses = hypotheses
            state.record(proposal_decision(state))
        return {
            "hypotheses": len(state.hypotheses),
            "to_explore": len(self._with(BranchStatus.PENDING)),
            "skipped": len(self._with(BranchStatus.SKIPPED)),
            "has_research_brief": bool(state.research_brief),
        }

    async def _explore(self, guidance: str | None) -> dict[str, Any]:
        state, modes = self.state, self.state.options.mode
        waiting = self._with(BranchStatus.PENDING, BranchStatus.RESEARCHING)
        parallel = modes.exploration_mode is ExplorationMode.PARALLEL
        how = (
            "all at once"
            if parallel
            else "one at a time, a coverage assessment after each"
            if modes.hypothesis_mode is HypothesisMode.ADAPTIVE
            else "one at a time"
        )
        if waiting:
            self._decide(
                AgentRole.SUPERVISOR,
                "explore_hypotheses",
                f"{len(waiting)} hypothes{'is is' if len(waiting) == 1 else 'es are'} explored "
                f"{how}.",
                {
                    "hypothesis_mode": modes.hypothesis_mode.value,
                    "exploration_mode": modes.exploration_mode.value,
                },
                {"exploring": [h.id for h in waiting]},
            )
        if parallel:
            await self._explore_together(waiting, guidance)
        else:
            while (hypothesis := self._next_hypothesis()) is not None:
                await self._investigate(hypothesis, guidance)
                if modes.hypothesis_mode is HypothesisMode.ADAPTIVE:
                    await self._judge_coverage(hypothesis, guidance)
                hypothesis.status = BranchStatus.COMPLETED
                await self.kit.checkpoint()
        return {
            "explored": len(self._with(BranchStatus.COMPLETED)),
            "skipped": len(self._with(BranchStatus.SKIPPED)),
            "source_count": len(state.sources),
            "finding_count": len(state.findings),
        }

    def _next_hypothesis(self) -> Hypothesis | None:
        """The one being explored (after a restart), else the coverage's pick, else the first."""
        researching = self._with(BranchStatus.RESEARCHING)
        if researching:
            return researching[0]
        pending = self._with(BranchStatus.PENDING)
        recommended = self.state.coverage[-1].recommended_next if self.state.coverage else None
        return next((h for h in pending if h.id == recommended), pending[0] if pending else None)

    async def _investigate(self, hypothesis: Hypothesis, guidance: str | None) -> None:
        """Search, read and weigh one hypothesis, skipping whatever a previous run finished."""
        hypothesis.status = BranchStatus.RESEARCHING
        self._plan_searches(hypothesis)
        await self.kit.checkpoint()
        await self._search_and_read(guidance)
        await self._weigh(hypothesis, guidance)

    async def _explore_together(self, waiting: list[Hypothesis], guidance: str | None) -> None:
        for hypothesis in waiting:
            hypothesis.status = BranchStatus.RESEARCHING
            self._plan_searches(hypothesis)
        await self.kit.checkpoint()
        await self._search_and_read(guidance)
        limiter = anyio.Semaphore(self.state.limits.max_concurrent)

        async def weigh(hypothesis: Hypothesis) -> None:
            async with limiter:
                await self._weigh(hypothesis, guidance)
            hypothesis.status = BranchStatus.COMPLETED
            await self.kit.checkpoint()

        await fan_out(weigh, waiting)

    def _plan_searches(self, hypothesis: Hypothesis) -> None:
        state = self.state
        if hypothesis.verdict is None and not self._searches_of(hypothesis):
            state.sub_queries.extend(sub_queries_for(hypothesis, state))

    async def _search_and_read(self, guidance: str | None) -> None:
        """Gather every pending search, then analyse every source not analysed yet."""
        state, kit = self.state, self.kit
        if state.pending_sub_queries():
            await gather(
                state,
                kit.search,
                kit.calls,
                kit.checkpoint,
                kit.fetcher,
                pool=kit.pool,
                local_providers=kit.local_providers,
            )
            for hypothesis in self._with(BranchStatus.RESEARCHING):
                if self._all_failed(hypothesis):
                    state.warn(
                        f"Every search of hypothesis H{number_of(state, hypothesis.id)} failed "
                        "(check the search providers with action='health'); it is weighed "
                        "against the other hypotheses' findings only."
                    )
        if any(not source.analyzed for source in state.sources):
            await analyze(kit.llm, state, guidance, kit.checkpoint)

    async def _weigh(self, hypothesis: Hypothesis, guidance: str | None) -> None:
        if hypothesis.verdict is not None:  # weighed before a restart
            return
        state = self.state
        number = number_of(state, hypothesis.id)
        await assess_hypothesis(self.kit.llm, state, number, hypothesis, guidance)
        verdict = hypothesis.verdict.value if hypothesis.verdict else None
        self._decide(
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
        await self.kit.checkpoint()

    async def _judge_coverage(self, hypothesis: Hypothesis, guidance: str | None) -> None:
        """Ask whether to stop after ``hypothesis``; if so, skip the rest with the reason."""
        state = self.state
        remaining = self._numbered(BranchStatus.PENDING)
        if not remaining or any(c.after == hypothesis.id for c in state.coverage):
            return
        explored = self._numbered(BranchStatus.COMPLETED, BranchStatus.RESEARCHING)
        coverage = await assess_coverage(self.kit.llm, state, explored, remaining, guidance)
        state.coverage.append(coverage)
        number = number_of(state, hypothesis.id)
        if coverage.sufficient:
            for _, rest in remaining:
                skip(
                    rest,
                    f"The coverage assessment after H{number} judged the question covered: "
                    f"{coverage.reasoning or 'no reason given'}",
                )
        self._decide(
            AgentRole.SUPERVISOR,
            "assess_coverage",
            coverage.reasoning
            or ("Coverage is sufficient." if coverage.sufficient else "Exploration continues."),
            {"after": hypothesis.id, "remaining": [h.id for _, h in remaining]},
            {"sufficient": coverage.sufficient, "recommended_next": coverage.recommended_next},
        )

    async def _analyse_rest(self, guidance: str | None) -> dict[str, Any]:
        state = self.state
        if any(not source.analyzed for source in state.sources):
            await analyze(self.kit.llm, state, guidance, self.kit.checkpoint)
        verdicts = [h.verdict.value for h in state.hypotheses if h.verdict is not None]
        return {
            "finding_count": len(state.findings),
            **{verdict.value: verdicts.count(verdict.value) for verdict in HypothesisVerdict},
        }

    async def _write(self, guidance: str | None) -> dict[str, Any]:
        state = self.state
        explored = self._numbered(BranchStatus.COMPLETED)
        section = exploration_section(state)
        writing = Writing(
            system=HYPOTHESES_WRITER_SYSTEM,
            material=render_outcomes(explored) if explored else None,
            appendix=section,
        )
        output = await synthesize(self.kit.llm, state, guidance, writing)
        report = output.report
        if SECTION_HEADING not in report:  # no findings: the report says so, then this section
            report = report.rstrip() + "\n\n" + section
        state.report, state.report_metadata = report, output.report_metadata
        return {"has_report": True, "report_length": len(report), "hypotheses": len(explored)}

    def _no_refinement(self) -> dict[str, Any]:
        self._decide(
            AgentRole.REFINER,
            "plan_next_iteration",
            "Hypotheses mode has no refinement round: each hypothesis is explored once and "
            "the coverage assessment decided how far to go. Start a new research to go further.",
            {"unaddressed_gaps": len(self.state.unaddressed_gaps())},
            {"should_iterate": False},
        )
        return {"should_iterate": False}

    # ------------------------------------------------------------------ the supervisor's asks

    def timeout(self, phase: Phase) -> float | None:
        # Exploring is several searches, analyses and assessments; task_timeout bounds it.
        if phase is Phase.GATHERING:
            return None
        return self.state.options.phase_timeouts.get(phase.value)

    def gate(self, phase: Phase) -> ValidationResult:
        state = self.state
        issues: list[str] = []
        if phase is Phase.PLANNING:
            to_explore = self._with(BranchStatus.PENDING)
            if not to_explore:
                issues.append("No hypothesis to explore")
            if not state.research_brief:
                issues.append("Missing research brief")
            score = min(10.0, 4.0 * len(to_explore) + (2.0 if state.research_brief else 0.0))
            return ValidationResult(valid=not issues, issues=issues, quality_score=score)
        if phase is Phase.GATHERING:
            explored = self._with(BranchStatus.COMPLETED)
            decided = [h for h in explored if h.verdict is not HypothesisVerdict.INCONCLUSIVE]
            if not explored:
                issues.append("No hypothesis was explored")
            if not state.sources:
                issues.append("No sources found")
            if explored and not decided:
                issues.append("Every explored hypothesis is inconclusive")
            score = 10.0 * len(decided) / max(1, len(explored))
            return ValidationResult(valid=not issues, issues=issues, quality_score=score)
        return GATES[phase](state)

    def describe(self, phase: Phase) -> str:
        state = self.state
        explored = len(self._with(BranchStatus.COMPLETED))
        if phase is Phase.PLANNING:
            return (
                f"Hypotheses proposed: {len(state.hypotheses)}, "
                f"{len(self._with(BranchStatus.PENDING))} to explore. Do they take different "
                "angles, and is a likely explanation missing?"
            )
        if phase is Phase.GATHERING:
            return (
                f"Exploration done: {explored}/{len(state.hypotheses)} hypotheses explored, "
                f"{len(state.findings)} findings. Were the verdicts fair to the evidence?"
            )
        if phase is Phase.ANALYSIS:
            return (
                f"{len(state.findings)} findings from {len(state.sources)} sources weighed "
                f"{explored} hypotheses. Which explanation does the evidence favour?"
            )
        return (
            f"Report written: {len(state.report or '')} characters. Does it say which "
            "hypotheses hold, and on what evidence?"
        )

    def can_retry(self, phase: Phase) -> bool:
        if phase is Phase.PLANNING:
            return not any(sq.hypothesis_id for sq in self.state.sub_queries)
        if phase is Phase.GATHERING:
            return any(self._all_failed(h) for h in self._with(BranchStatus.COMPLETED))
        return phase is Phase.SYNTHESIS

    def prepare_retry(self, phase: Phase) -> None:
        state = self.state
        if phase is Phase.PLANNING:
            state.hypotheses = []
        elif phase is Phase.GATHERING:  # explore again the hypotheses whose searches all failed
            for hypothesis in self._with(BranchStatus.COMPLETED):
                if not self._all_failed(hypothesis):
                    continue
                for sub_query in self._searches_of(hypothesis):
                    sub_query.status, sub_query.error = SubQueryStatus.PENDING, None
                hypothesis.status, hypothesis.verdict = BranchStatus.PENDING, None
                state.coverage = [c for c in state.coverage if c.after != hypothesis.id]

    def next_phase(self, phase: Phase, complete_early: bool) -> Phase | None:
        if phase is Phase.SYNTHESIS:
            explored = len(self._with(BranchStatus.COMPLETED))
            self._decide(
                AgentRole.SUPERVISOR,
                "decide_iteration",
                f"{explored} of {len(self.state.hypotheses)} hypotheses were explored and "
                "weighed, the rest skipped with a reason: complete.",
                {"hypotheses": len(self.state.hypotheses)},
                {"should_iterate": False, "next_phase": "COMPLETED"},
            )
            return None
        if phase is Phase.REFINEMENT:
            return None
        order = [Phase.PLANNING, Phase.GATHERING, Phase.ANALYSIS, Phase.SYNTHESIS]
        return order[order.index(phase) + 1]

    # ------------------------------------------------------------------ helpers

    def _with(self, *statuses: BranchStatus) -> list[Hypothesis]:
        return [h for h in self.state.hypotheses if h.status in statuses]

    def _numbered(self, *statuses: BranchStatus) -> Numbered:
        return [
            (n, h) for n, h in enumerate(self.state.hypotheses, start=1) if h.status in statuses
        ]

    def _searches_of(self, hypothesis: Hypothesis) -> list[SubQuery]:
        return [sq for sq in self.state.sub_queries if sq.hypothesis_id == hypothesis.id]

    def _all_failed(self, hypothesis: Hypothesis) -> bool:
        searches = self._searches_of(hypothesis)
        return bool(searches) and all(sq.status is SubQueryStatus.FAILED for sq in searches)

    def _decide(
        self,
        agent: AgentRole,
        action: str,
        rationale: str,
        inputs: dict[str, Any],
        outputs: dict[str, Any],
    ) -> None:
        self.state.record(
            AgentDecision(
                agent=agent, action=action, rationale=rationale, inputs=inputs, outputs=outputs
            )
        )
