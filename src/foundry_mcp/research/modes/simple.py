"""Simple mode: one pass over the question, refined while gaps remain (seed 002's loop).

PLANNING (brief and sub-queries) -> GATHERING (every pending sub-query searched, pages read)
-> ANALYSIS (cited findings, gaps, contradictions) -> SYNTHESIS (the report) -> iterate? ->
REFINEMENT (follow-up queries for the addressable gaps) -> GATHERING ...

Seed 003's two loops run here too: the planner's **allocation** of sub-queries between the
user's documents and the web (:mod:`.allocation`; follow-up queries of later rounds search both,
as a gap may be closed by either), and the **evaluator loop** (:mod:`.rounds`): each round ends
with a verdict, sufficient or insufficient with a reason (the refiner's rationale) that the next
round's refiner is given as guidance, and at most ``MAX_EXTRA_ROUNDS`` rounds follow the first.

The same playbook runs each sub-question's researcher in hierarchical mode, with its writer
(a sub-question answer) and stopping rule (seed 000's) handed in, and no evaluator loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    AnalyzerOutput,
    Confidence,
    Phase,
    RefinerOutput,
    ResearchState,
    Source,
    SubQuery,
    SubQueryStatus,
    SynthesizerOutput,
    ValidationResult,
)
from foundry_mcp.research.modes.allocation import adopt_plan, sample_local_documents
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.modes.rounds import (
    StoppingRule,
    decide,
    gaps_rule,
    phase_question,
    record_verdict,
    round_feedback,
)
from foundry_mcp.research.prompts.refiner import improvements_guidance
from foundry_mcp.research.workflow.agents.analyzer import analyze, read_further
from foundry_mcp.research.workflow.agents.gatherer import gather
from foundry_mcp.research.workflow.agents.planner import plan
from foundry_mcp.research.workflow.agents.refiner import refine, report_improvements
from foundry_mcp.research.workflow.gates import GATES
from foundry_mcp.research.workflow.report.synthesizer import synthesize
from foundry_mcp.research.workflow.supervisor import SupervisorHooks

Writer = Callable[[ResearchLLM, ResearchState, str | None], Awaitable[SynthesizerOutput]]


class SimplePlaybook:
    """The phases of one pass over one question; see the module.

    Without a ``stopping`` rule it runs simple mode's evaluator loop (:func:`gaps_rule` and a
    recorded verdict each round); a mode that hands in its own rule judges its rounds itself.
    """

    def __init__(
        self,
        state: ResearchState,
        kit: ResearchKit,
        *,
        writer: Writer = synthesize,
        stopping: StoppingRule | None = None,
    ) -> None:
        self.state = state
        self.kit = kit
        self._writer = writer
        self._stopping = stopping or gaps_rule
        self._evaluates = stopping is None

    # ------------------------------------------------------------------ the phases' work

    async def execute(self, phase: Phase, guidance: str | None) -> dict[str, Any]:
        if phase is Phase.PLANNING:
            return await self._planning(guidance)
        if phase is Phase.GATHERING:
            return await self._gathering()
        if phase is Phase.ANALYSIS:
            return await self._analysis(guidance)
        if phase is Phase.SYNTHESIS:
            return await self._synthesis(guidance)
        return await self._refinement(guidance)

    async def _planning(self, guidance: str | None) -> dict[str, Any]:
        state = self.state
        if not any(sq.iteration == state.iteration for sq in state.sub_queries):
            sample = await sample_local_documents(self.kit, state.query)
            output = await plan(self.kit.llm, state, guidance, local_sample=sample)
            adopt_plan(state, output, sample)
        return {
            "sub_query_count": sum(
                1 for sq in state.sub_queries if sq.iteration == state.iteration
            ),
            "has_research_brief": bool(state.research_brief),
        }

    async def _gathering(self) -> dict[str, Any]:
        state, kit = self.state, self.kit
        analyse_at_once = None
        if self._pipelined():
            limiter = anyio.Semaphore(max(1, state.limits.max_concurrent))

            async def analyse_at_once(sources: list[Source]) -> AnalyzerOutput:
                return await analyze(
                    kit.llm,
                    state,
                    None,
                    kit.checkpoint,
                    sources=sources,
                    limiter=limiter,
                    ledger=kit.repeats,
                    readings=kit.readings,
                )

        output = await gather(
            state,
            kit.search,
            kit.calls,
            kit.checkpoint,
            kit.fetcher,
            pool=kit.pool,
            local_providers=kit.local_providers,
            on_sources=analyse_at_once,
            private=kit.private,
        )
        current = [sq for sq in state.sub_queries if sq.iteration == state.iteration]
        if current and all(sq.status is SubQueryStatus.FAILED for sq in current):
            # The research goes on with what it has (perhaps nothing); the report says so.
            errors = "; ".join(dict.fromkeys(sq.error or "" for sq in current))
            state.warn(
                f"Every search of iteration {state.iteration} failed, so it added no sources "
                f"({errors}). Check the search providers with action='health'; resuming a "
                "failed or cancelled research retries failed searches."
            )
            state.metadata.setdefault("search_outages", []).append(state.iteration)
        return {"source_count": len(state.sources), **output.stats.model_dump()}

    def _pipelined(self) -> bool:
        """Whether sources are analysed as their searches return, during gathering.

        Not when the user's own ``on_think_pause`` hook may steer the analyst after gathering:
        then analysis waits for it. The supervisor's reflection after gathering still judges
        the gathering (and may retry it); its guidance reaches the sources left to analyse and
        the phases after.
        """
        hooks = self.kit.hooks
        custom_pause = hooks is not None and (
            type(hooks).on_think_pause is not SupervisorHooks.on_think_pause
        )
        return not custom_pause

    async def _analysis(self, guidance: str | None) -> dict[str, Any]:
        state = self.state
        kit = self.kit
        await analyze(
            kit.llm, state, guidance, kit.checkpoint, ledger=kit.repeats, readings=kit.readings
        )
        await read_further(
            kit.llm, state, guidance, kit.checkpoint, ledger=kit.repeats, readings=kit.readings
        )
        self._mark_addressed_gaps()
        return {
            "finding_count": len(state.findings),
            # Pipelined analysis found most of them while gathering ran.
            "new_findings": sum(1 for f in state.findings if f.iteration == state.iteration),
            "high_confidence_count": sum(
                1 for f in self.state.findings if f.confidence is Confidence.HIGH
            ),
        }

    async def _synthesis(self, guidance: str | None) -> dict[str, Any]:
        # What the last refinement asked of this report goes to its writer with the guidance.
        advice = improvements_guidance(report_improvements(self.state))
        guidance = "\n".join(filter(None, (guidance, advice))) or None
        output = await self._writer(self.kit.llm, self.state, guidance)
        self.state.report = output.report
        self.state.report_metadata = output.report_metadata
        return {"has_report": True, "report_length": len(output.report)}

    async def _refinement(self, guidance: str | None) -> dict[str, Any]:
        state = self.state
        # Re-running after a crash must not plan the next iteration twice.
        if not self._next_iteration_queries():
            guidance = "\n".join(filter(None, (round_feedback(state), guidance))) or None
            output = await refine(self.kit.llm, state, guidance)
            follow_ups = self._follow_up_queries(output)
            insufficient = output.iteration_recommendation.should_iterate
            iterate = insufficient and bool(follow_ups)
            rationale = output.iteration_recommendation.rationale or (
                "Follow-up queries address open gaps." if iterate else "Nothing to follow up."
            )
            decide(
                state,
                "plan_next_iteration",
                rationale,
                {"unaddressed_gaps": len(state.unaddressed_gaps())},
                {"should_iterate": iterate, "follow_up_queries": len(follow_ups)},
            )
            if self._evaluates:
                if insufficient and not iterate:
                    rationale += " No follow-up query is new: complete."
                record_verdict(state, not insufficient, rationale, another_round=iterate)
            if iterate:
                state.sub_queries.extend(follow_ups)
        return {
            "unaddressed_gaps": len(state.unaddressed_gaps()),
            "should_iterate": bool(self._next_iteration_queries()),
        }

    def _follow_up_queries(self, output: RefinerOutput) -> list[SubQuery]:
        """The new queries of the addressable gaps, in the refiner's order of the gaps (most
        important first, see :func:`refine`); a query's priority is its gap's rank."""
        state = self.state
        known = {" ".join(sq.query.lower().split()) for sq in state.sub_queries}
        follow_ups: list[SubQuery] = []
        addressable = [a for a in output.gap_analysis if a.addressable]
        for rank, assessment in enumerate(addressable, start=1):
            for follow_up in assessment.follow_up_queries:
                key = " ".join(follow_up.query.lower().split())
                if key and key not in known and len(follow_ups) < state.limits.max_sub_queries:
                    known.add(key)
                    follow_ups.append(
                        SubQuery(
                            query=follow_up.query.strip(),
                            rationale=follow_up.expected_contribution,
                            priority=rank,
                            iteration=state.iteration + 1,
                            gap_id=assessment.gap_id,
                        )
                    )
        return follow_ups

    def _next_iteration_queries(self) -> list[SubQuery]:
        return [sq for sq in self.state.sub_queries if sq.iteration == self.state.iteration + 1]

    def _mark_addressed_gaps(self) -> None:
        """A gap is addressed once a finding rests on a source its follow-up queries found."""
        state = self.state
        supported = {sid for finding in state.findings for sid in finding.source_ids}
        for gap in state.unaddressed_gaps():
            follow_ups = [sq for sq in state.sub_queries if sq.gap_id == gap.id]
            if any(sq.status is SubQueryStatus.PENDING for sq in follow_ups):
                continue
            if any(sid in supported for sq in follow_ups for sid in sq.source_ids):
                gap.addressed = True

    # ------------------------------------------------------------------ the supervisor's asks

    def timeout(self, phase: Phase) -> float | None:
        return self.state.options.phase_timeouts.get(phase.value)

    def gate(self, phase: Phase) -> ValidationResult:
        return GATES[phase](self.state)

    def describe(self, phase: Phase) -> str:
        return phase_question(self.state, phase)

    def can_retry(self, phase: Phase) -> bool:
        state = self.state
        current = [sq for sq in state.sub_queries if sq.iteration == state.iteration]
        if phase is Phase.PLANNING:
            return state.iteration == 1 and all(
                sq.status is SubQueryStatus.PENDING for sq in current
            )
        if phase is Phase.GATHERING:
            return any(sq.status is SubQueryStatus.FAILED for sq in current)
        if phase is Phase.ANALYSIS:
            return any(s.iteration == state.iteration for s in state.sources)
        return phase is Phase.SYNTHESIS

    def judged(self, phase: Phase) -> bool:
        # After the report, the judgement may send the research round again: only when one
        # more round is possible.
        state = self.state
        return phase is not Phase.SYNTHESIS or state.iteration < state.limits.max_iterations

    def takes_guidance(self, phase: Phase) -> bool:
        return phase is not Phase.GATHERING  # the gatherer asks no model

    async def ahead(self, phase: Phase) -> None:
        return None  # each phase's work changes the state that the judgement may send back

    def prepare_retry(self, phase: Phase) -> None:
        state = self.state
        if phase is Phase.PLANNING:
            state.sub_queries = [sq for sq in state.sub_queries if sq.iteration != state.iteration]
        elif phase is Phase.GATHERING:
            for sq in state.sub_queries:
                if sq.iteration == state.iteration and sq.status is SubQueryStatus.FAILED:
                    sq.status, sq.error = SubQueryStatus.PENDING, None
        elif phase is Phase.ANALYSIS:
            state.findings = [f for f in state.findings if f.iteration != state.iteration]
            state.gaps = [g for g in state.gaps if g.iteration != state.iteration or g.addressed]
            state.contradictions = [
                c for c in state.contradictions if c.iteration != state.iteration
            ]
            again = [s for s in state.sources if s.iteration == state.iteration]
            for source in again:
                source.analyzed = False
            # A retry reads them again, with the gate's issues as guidance: what was read of
            # them is forgotten (its sentences too, or they would count as known repeats).
            state.read_by_round.pop(state.iteration, None)
            forgotten = [s.id for s in again]
            if self.kit.readings is not None:
                forgotten = self.kit.readings.forget(forgotten, state.branch)
            self.kit.repeats.forget(forgotten)

    def next_phase(self, phase: Phase, complete_early: bool) -> Phase | None:
        state = self.state
        if phase is Phase.SYNTHESIS:
            call = self._stopping(state)
            iterate, rationale = call.iterate, call.rationale
            sufficient = not state.unaddressed_gaps()
            if iterate and complete_early:
                iterate, rationale, sufficient = (
                    False,
                    "The supervisor's reflection judged the report complete.",
                    True,
                )
            decide(
                state,
                "decide_iteration",
                rationale,
                call.inputs,
                {
                    **call.outputs,
                    "should_iterate": iterate,
                    "next_phase": "refinement" if iterate else "COMPLETED",
                },
            )
            if self._evaluates and not iterate:
                record_verdict(state, sufficient, rationale, another_round=False)
            return Phase.REFINEMENT if iterate else None
        if phase is Phase.REFINEMENT:
            if not self._next_iteration_queries() or complete_early:
                return None
            state.iteration += 1
            return Phase.GATHERING
        if phase is Phase.ANALYSIS and self._round_added_nothing():
            reason = (
                f"Round {state.iteration} added no finding, so the report of round "
                f"{state.iteration - 1} stands: complete."
            )
            decide(
                state,
                "decide_iteration",
                reason,
                {"iteration": state.iteration, "new_findings": 0},
                {"should_iterate": False, "next_phase": "COMPLETED", "report_rewritten": False},
            )
            if self._evaluates:
                record_verdict(state, False, reason, another_round=False)
            return None
        order = [Phase.PLANNING, Phase.GATHERING, Phase.ANALYSIS, Phase.SYNTHESIS]
        return order[order.index(phase) + 1]

    def _round_added_nothing(self) -> bool:
        """A later round whose analysis found nothing new: writing again would change nothing."""
        state = self.state
        return (
            state.iteration > 1
            and state.report is not None
            and not any(f.iteration == state.iteration for f in state.findings)
        )
