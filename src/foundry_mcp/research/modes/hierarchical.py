"""Hierarchical mode: sub-questions researched in parallel, then integrated (seeds 000/001).

PLANNING   the question is decomposed into 2-5 sub-questions (strategy, priority 0-1,
           rationale), validated and repaired; each gets its iteration budget. A decomposition
           with too few usable sub-questions falls back to simple mode (recorded).
GATHERING  the sub-questions' researchers (:mod:`.branch`) run concurrently, at most
           ``max_concurrent`` at once, sharing one source pool and one token and cost budget.
           A finished sub-question is never redone; a resumed research continues the others.
ANALYSIS   their sources, findings, contradictions and open gaps are consolidated (no model).
SYNTHESIS  the meta-synthesis: one report integrating the sub-answers (agreements,
           contradictions, conclusion), with citations numbered over the whole research and
           checked against the sources.
"""

from __future__ import annotations

from foundry_mcp.providers.search.base import richer
from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    BranchStatus,
    Contradiction,
    Finding,
    Gap,
    Phase,
    ResearchState,
    Source,
    SourceQuality,
    SubQuestion,
    ValidationResult,
)
from foundry_mcp.research.modes.allocation import adopt_plan, sample_local_documents
from foundry_mcp.research.modes.branch import branch_state, plan_ahead, research_branch
from foundry_mcp.research.modes.decomposition import (
    adopt_decomposition,
    fall_back_to_simple,
    sub_questions_from,
    weak_parts,
)
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.modes.watch import gathering_bound, research_parts
from foundry_mcp.research.prompts.report_parts import META_FRAME_SYSTEM
from foundry_mcp.research.prompts.synthesizer import META_SYSTEM, render_sub_answers
from foundry_mcp.research.workflow.agents.planner import plan
from foundry_mcp.research.workflow.gates import GATES
from foundry_mcp.research.workflow.report.parts import sections_by_sub_question
from foundry_mcp.research.workflow.report.synthesizer import Writing, synthesize

_QUALITY_RANK = {
    SourceQuality.UNKNOWN: 0,
    SourceQuality.LOW: 1,
    SourceQuality.MEDIUM: 2,
    SourceQuality.HIGH: 3,
}


def _untaken_filings(
    state: ResearchState, sources: dict[str, Source], findings: list[Finding]
) -> None:
    """Findings filed for a sub-question whose researcher had answered before they came: they
    join the research under that sub-question, with the sources they cite."""
    have = {f.id for f in findings}
    for filed in state.filed:
        if filed.finding.id in have or filed.withdrawn:
            continue
        findings.append(filed.finding.model_copy(update={"sub_question_id": filed.part}))
        have.add(filed.finding.id)
        for source in filed.sources:
            sources.setdefault(source.id, source.model_copy(update={"branches": [filed.part]}))


class HierarchicalPlaybook:
    """The phases of a hierarchical research; see the module."""

    def __init__(self, state: ResearchState, kit: ResearchKit) -> None:
        self.state = state
        self.kit = kit
        self._planned: dict[str, ResearchState] = {}  # researchers planned ahead, by part

    # ------------------------------------------------------------------ the phases' work

    async def execute(self, phase: Phase, guidance: str | None) -> dict[str, object]:
        if phase is Phase.PLANNING:
            return await self._decompose(guidance)
        if phase is Phase.GATHERING:
            return await self._research_sub_questions()
        if phase is Phase.ANALYSIS:
            return await self._consolidate()
        return await self._integrate(guidance)

    async def _decompose(self, guidance: str | None) -> dict[str, object]:
        state = self.state
        if not state.sub_questions:
            sample = await sample_local_documents(self.kit, state.query)
            output = await plan(
                self.kit.llm, state, guidance, require_decomposition=True, local_sample=sample
            )
            state.research_brief = output.research_brief or state.research_brief
            modes = state.options.mode
            sub_questions = sub_questions_from(output.decomposition, state.query, modes)
            if len(sub_questions) < modes.min_sub_questions:
                adopt_plan(state, output, sample)
                fall_back_to_simple(
                    state,
                    f"The decomposition gave {len(sub_questions)} usable sub-question(s) (at "
                    f"least {modes.min_sub_questions} are needed), so the question is researched "
                    "in simple mode.",
                )
                return {"sub_question_count": len(sub_questions), "fell_back_to": "simple"}
            adopt_decomposition(state, output.decomposition, sub_questions)
        return {
            "sub_question_count": len(state.sub_questions),
            "strategy": state.decomposition_strategy,
        }

    async def _research_sub_questions(self) -> dict[str, object]:
        state, kit = self.state, self.kit
        assert kit.branches is not None
        saved = await kit.branches.load()
        kit.pool.remember(saved.values())
        if kit.private is not None:
            kit.private.remember(saved.values())
        waiting = [sq for sq in state.sub_questions if sq.status is not BranchStatus.COMPLETED]
        state.record(
            AgentDecision(
                agent=AgentRole.SUPERVISOR,
                action="research_sub_questions",
                rationale=(
                    f"{len(waiting)} sub-question(s) are researched in parallel, at most "
                    f"{state.limits.max_concurrent} at once"
                    + (
                        f"; {len(state.sub_questions) - len(waiting)} already answered."
                        if len(waiting) < len(state.sub_questions)
                        else "."
                    )
                ),
                inputs={"max_concurrent": state.limits.max_concurrent},
                outputs={"researching": [sq.id for sq in waiting]},
            )
        )

        async def research(sub_question: SubQuestion) -> None:
            branch = (
                saved.get(sub_question.id)
                or self._planned.pop(sub_question.id, None)
                or branch_state(state, sub_question)
            )
            await research_branch(state, sub_question, branch, kit)

        await research_parts(state, waiting, research, kit.calls, kit.checkpoint)
        answered = [sq for sq in state.sub_questions if sq.status is BranchStatus.COMPLETED]
        return {
            "sub_questions": len(state.sub_questions),
            "answered": len(answered),
            "sources": sum(sq.source_count for sq in state.sub_questions),
        }

    async def _consolidate(self) -> dict[str, object]:
        """The researchers' sources, findings, contradictions and gaps, gathered in the research.

        Rebuilt from the saved researcher states every time, so running it again is harmless.
        """
        state, kit = self.state, self.kit
        assert kit.branches is not None
        branches = await kit.branches.load()
        sources: dict[str, Source] = {}
        findings: list[Finding] = []
        contradictions: list[Contradiction] = []
        gaps: list[Gap] = []
        search_calls = 0
        # Filed by a reading that was done again: its new findings stand instead.
        withdrawn = {filed.finding.id for filed in state.filed if filed.withdrawn}
        for sub_question in state.sub_questions:
            branch = branches.get(sub_question.id)
            if branch is None:
                continue
            search_calls += branch.search_calls
            for source in branch.sources:
                kept = sources.get(source.id)
                if kept is None:
                    sources[source.id] = source.model_copy(update={"branches": [sub_question.id]})
                    continue
                if sub_question.id not in kept.branches:
                    kept.branches.append(sub_question.id)
                if not kept.content and source.content:
                    kept.content = source.content
                kept.publication = richer(kept.publication, source.publication)
                if _QUALITY_RANK[source.quality] > _QUALITY_RANK[kept.quality]:
                    kept.quality = source.quality
            findings += [
                f.model_copy(update={"sub_question_id": sub_question.id})
                for f in branch.findings
                if f.id not in {kept.id for kept in findings}  # filed to several parts: once
                and f.id not in withdrawn
            ]
            contradictions += branch.contradictions
            gaps += branch.unaddressed_gaps()
            state.content_fidelity.update(branch.content_fidelity)
        _untaken_filings(state, sources, findings)
        state.sources = list(sources.values())
        state.findings = findings
        state.contradictions = contradictions
        state.gaps = gaps
        state.search_calls = search_calls
        return {
            "source_count": len(state.sources),
            "finding_count": len(state.findings),
            "contradiction_count": len(state.contradictions),
        }

    async def _integrate(self, guidance: str | None) -> dict[str, object]:
        state = self.state
        if state.metadata.get("time_ceiling_reached"):
            # The ceiling may have stopped the researchers before the analysis phase gathered
            # their work: what they found (answered or not) is gathered now.
            await self._consolidate()
        answered = [(sq, sq.synthesis) for sq in state.sub_questions if sq.synthesis is not None]
        answers = [(sq.question, synthesis) for sq, synthesis in answered]
        writing = Writing(
            system=META_SYSTEM,
            material=render_sub_answers(answers) if answers else None,
            citable=frozenset(sid for _, answer in answers for sid in answer.citations),
            sections=tuple(sections_by_sub_question(state, answered)),
            frame_system=META_FRAME_SYSTEM,
        )
        output = await synthesize(self.kit.llm, state, guidance, writing)
        state.report = output.report
        state.report_metadata = output.report_metadata
        return {
            "has_report": True,
            "report_length": len(output.report),
            "sub_answers": len(answers),
        }

    # ------------------------------------------------------------------ the supervisor's asks

    def timeout(self, phase: Phase) -> float | None:
        timeouts = self.state.options.phase_timeouts
        if phase is Phase.GATHERING:
            return gathering_bound(self.state)
        return timeouts.get(phase.value)

    def gate(self, phase: Phase) -> ValidationResult:
        state = self.state
        if phase is Phase.PLANNING:
            modes = state.options.mode
            count = len(state.sub_questions)
            issues = []
            if count < modes.min_sub_questions:
                issues.append(
                    f"Too few sub-questions ({count}; minimum: {modes.min_sub_questions})"
                )
            return ValidationResult(
                valid=not issues, issues=issues, quality_score=min(10.0, count * 2.5)
            )
        if phase is Phase.GATHERING:
            answered = [sq for sq in state.sub_questions if sq.status is BranchStatus.COMPLETED]
            thin = [sq for sq in answered if sq.synthesis is None or sq.synthesis.fallback]
            issues = []
            if not answered:
                issues.append("No sub-question was answered")
            if thin:
                issues.append(f"{len(thin)} sub-question(s) have no written answer")
            return ValidationResult(
                valid=not issues,
                issues=issues,
                quality_score=round(
                    10
                    * sum(sq.quality_score for sq in answered)
                    / max(1, len(state.sub_questions)),
                    2,
                ),
            )
        return GATES[phase](state)

    def describe(self, phase: Phase) -> str:
        state = self.state
        if phase is Phase.PLANNING:
            return (
                f"Decomposition done: {len(state.sub_questions)} sub-questions. Do they cover the "
                "question without overlapping, and are their priorities right?"
            )
        if phase is Phase.GATHERING:
            answered = sum(1 for sq in state.sub_questions if sq.status is BranchStatus.COMPLETED)
            return (
                f"Sub-question research done: {answered}/{len(state.sub_questions)} answered. "
                "Is any answer too weak to build on?"
            )
        if phase is Phase.ANALYSIS:
            return (
                f"Consolidation done: {len(state.findings)} findings from {len(state.sources)} "
                "sources. Do the sub-answers agree, and where do they conflict?"
            )
        return (
            f"Meta-synthesis done: report of {len(state.report or '')} characters. Does it "
            "answer the whole question?"
        )

    def can_retry(self, phase: Phase) -> bool:
        state = self.state
        if phase is Phase.PLANNING:
            return all(sq.status is BranchStatus.PENDING for sq in state.sub_questions)
        return phase is Phase.SYNTHESIS

    def judged(self, phase: Phase) -> bool:
        # After the decomposition the judgement may have the question cut again; after the
        # parts' research it may tell the writer which answers are too weak to build on, known
        # to be none when every part has a written answer of medium confidence or more. The
        # consolidation asks no model; the integrated report is the last phase whatever the
        # judgement says.
        if phase is Phase.GATHERING:
            return bool(weak_parts(self.state))
        return phase is Phase.PLANNING

    def takes_guidance(self, phase: Phase) -> bool:
        # The parts' researchers are steered by their own sub-questions, and the consolidation
        # asks no model: guidance given before them reaches the report's writers.
        return phase in (Phase.PLANNING, Phase.SYNTHESIS)

    async def ahead(self, phase: Phase) -> None:
        """While the decomposition is judged, the first parts' researchers make their plans
        (their question is all a plan needs; the judgement's guidance goes to the report)."""
        state = self.state
        if phase is not Phase.PLANNING or self.kit.branches is None:
            return
        first = [sq for sq in state.sub_questions if sq.status is BranchStatus.PENDING]

        async def plan_one(sub_question: SubQuestion) -> None:
            branch = await plan_ahead(state, sub_question, self.kit)
            if branch is not None:
                self._planned[sub_question.id] = branch

        await fan_out(plan_one, first[: max(1, state.limits.max_concurrent)], in_turn=True)

    def prepare_retry(self, phase: Phase) -> None:
        if phase is Phase.PLANNING:
            self.state.sub_questions = []
            self._planned.clear()

    def next_phase(self, phase: Phase, complete_early: bool) -> Phase | None:
        if phase is Phase.SYNTHESIS:
            state = self.state
            state.record(
                AgentDecision(
                    agent=AgentRole.SUPERVISOR,
                    action="decide_iteration",
                    rationale=(
                        f"All {len(state.sub_questions)} sub-questions were researched and "
                        "integrated: complete."
                    ),
                    inputs={"sub_questions": len(state.sub_questions)},
                    outputs={"should_iterate": False, "next_phase": "COMPLETED"},
                )
            )
            return None
        order = [Phase.PLANNING, Phase.GATHERING, Phase.ANALYSIS, Phase.SYNTHESIS]
        return order[order.index(phase) + 1]
