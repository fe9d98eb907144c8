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

The exploration itself runs in :mod:`.investigation`; the rules that need no model (which
hypotheses are explored, their searches, the report's section) are in :mod:`.exploration`.
"""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.models import (
    AgentRole,
    BranchStatus,
    HypothesisVerdict,
    Phase,
    ResearchState,
    SubQueryStatus,
    ValidationResult,
)
from foundry_mcp.research.modes.exploration import (
    SECTION_HEADING,
    all_failed,
    decide,
    exploration_section,
    numbered,
    proposal_decision,
    searches_of,
    select_for_exploration,
    with_status,
)
from foundry_mcp.research.modes.investigation import explore_hypotheses
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.prompts.hypotheses import HYPOTHESES_WRITER_SYSTEM, render_outcomes
from foundry_mcp.research.workflow.agents.analyzer import analyze
from foundry_mcp.research.workflow.agents.hypothesizer import propose_hypotheses
from foundry_mcp.research.workflow.gates import GATES
from foundry_mcp.research.workflow.report.synthesizer import Writing, synthesize


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
            return await explore_hypotheses(self.state, self.kit, guidance)
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
            "to_explore": len(with_status(state, BranchStatus.PENDING)),
            "skipped": len(with_status(state, BranchStatus.SKIPPED)),
            "has_research_brief": bool(state.research_brief),
        }

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
        explored = numbered(state, BranchStatus.COMPLETED)
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
        decide(
            self.state,
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
            to_explore = with_status(state, BranchStatus.PENDING)
            if not to_explore:
                issues.append("No hypothesis to explore")
            if not state.research_brief:
                issues.append("Missing research brief")
            score = min(10.0, 4.0 * len(to_explore) + (2.0 if state.research_brief else 0.0))
            return ValidationResult(valid=not issues, issues=issues, quality_score=score)
        if phase is Phase.GATHERING:
            explored = with_status(state, BranchStatus.COMPLETED)
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
        explored = len(with_status(state, BranchStatus.COMPLETED))
        if phase is Phase.PLANNING:
            return (
                f"Hypotheses proposed: {len(state.hypotheses)}, "
                f"{len(with_status(state, BranchStatus.PENDING))} to explore. Do they take "
                "different angles, and is a likely explanation missing?"
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
            return any(
                all_failed(self.state, h) for h in with_status(self.state, BranchStatus.COMPLETED)
            )
        return phase is Phase.SYNTHESIS

    def judged(self, phase: Phase) -> bool:
        return phase is not Phase.SYNTHESIS  # the report ends a hypotheses research

    def takes_guidance(self, phase: Phase) -> bool:
        return True

    async def ahead(self, phase: Phase) -> None:
        return None  # each phase's work changes the state that the judgement may send back

    def prepare_retry(self, phase: Phase) -> None:
        state = self.state
        if phase is Phase.PLANNING:
            state.hypotheses = []
        elif phase is Phase.GATHERING:  # explore again the hypotheses whose searches all failed
            for hypothesis in with_status(state, BranchStatus.COMPLETED):
                if not all_failed(state, hypothesis):
                    continue
                for sub_query in searches_of(state, hypothesis):
                    sub_query.status, sub_query.error = SubQueryStatus.PENDING, None
                hypothesis.status, hypothesis.verdict = BranchStatus.PENDING, None
                state.coverage = [c for c in state.coverage if c.after != hypothesis.id]

    def next_phase(self, phase: Phase, complete_early: bool) -> Phase | None:
        if phase is Phase.SYNTHESIS:
            explored = len(with_status(self.state, BranchStatus.COMPLETED))
            decide(
                self.state,
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
