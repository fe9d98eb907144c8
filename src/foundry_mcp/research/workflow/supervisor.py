"""The supervisor: walks the specialists through the phases and decides when to stop.

PLANNING -> GATHERING -> ANALYSIS -> SYNTHESIS -> (iterate?) -> REFINEMENT -> GATHERING ...

After every phase the supervisor evaluates the phase's quality gate, pauses to reflect (the
think-pause hook), records its decisions in the state, and saves the state. It runs from
whatever phase the state is in, so a resumed research simply continues.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.search.base import SearchProvider
from foundry_mcp.research.models import (
    PHASE_TO_AGENT,
    AgentDecision,
    AgentRole,
    Confidence,
    Phase,
    RefinerOutput,
    ResearchState,
    SubQuery,
    SubQueryStatus,
)
from foundry_mcp.research.workflow.analyzer import analyze
from foundry_mcp.research.workflow.calls import CallLog, ResearchLLM
from foundry_mcp.research.workflow.gates import GATES
from foundry_mcp.research.workflow.gatherer import gather
from foundry_mcp.research.workflow.planner import plan
from foundry_mcp.research.workflow.refiner import refine
from foundry_mcp.research.workflow.synthesizer import synthesize

log = logging.getLogger(__name__)

Checkpoint = Callable[[], Awaitable[None]]


class SupervisorHooks:
    """Extension points for library users; override any method. All default to no-ops."""

    async def on_phase_start(self, state: ResearchState, phase: Phase) -> None:
        """Called before a phase's agent runs."""

    async def on_phase_complete(self, state: ResearchState, phase: Phase) -> None:
        """Called after a phase's agent ran and its state was saved."""

    async def on_think_pause(self, state: ResearchState, prompt: str) -> str | None:
        """Called at each reflection point; guidance returned goes to the next agent."""
        return None


def reflection_prompt(state: ResearchState, phase: Phase) -> str:
    """The supervisor's reflection question after ``phase``."""
    iteration = f"{state.iteration}/{state.limits.max_iterations}"
    if phase is Phase.PLANNING:
        count = sum(1 for sq in state.sub_queries if sq.iteration == state.iteration)
        return (
            f"Planning done: {count} sub-queries, research brief "
            f"{'present' if state.research_brief else 'missing'}. Do the sub-queries cover the "
            "question, and is any aspect missing?"
        )
    if phase is Phase.GATHERING:
        return (
            f"Gathering done: {len(state.sources)} sources collected. Are the sources diverse "
            "enough, and how is their quality spread?"
        )
    if phase is Phase.ANALYSIS:
        return (
            f"Analysis done: {len(state.findings)} findings, {len(state.gaps)} gaps. Are the "
            "findings well supported, and which gaps are critical?"
        )
    if phase is Phase.SYNTHESIS:
        return (
            f"Synthesis done: report of {len(state.report or '')} characters, iteration "
            f"{iteration}. Is the report good enough, or does it need refinement?"
        )
    addressed = sum(1 for g in state.gaps if g.addressed)
    return (
        f"Refinement done: {addressed}/{len(state.gaps)} gaps addressed. Iterate again or finalise?"
    )


class Supervisor:
    """Runs one research from its current phase until it completes."""

    def __init__(
        self,
        state: ResearchState,
        llm: ResearchLLM,
        search: list[SearchProvider],
        calls: CallLog,
        checkpoint: Checkpoint,
        hooks: SupervisorHooks | None = None,
    ) -> None:
        self.state = state
        self._llm = llm
        self._search = search
        self._calls = calls
        self._checkpoint = checkpoint
        self._hooks = hooks or SupervisorHooks()
        self._guidance: str | None = None

    async def run(self) -> None:
        """Advance phase by phase; returns when the research is complete."""
        while True:
            phase = self.state.phase
            await self._run_phase(phase)
            following = self._next_phase(phase)
            if following is None:
                return
            self.state.phase = following
            await self._checkpoint()

    # ------------------------------------------------------------------ phases

    async def _run_phase(self, phase: Phase) -> None:
        state = self.state
        self._record(
            PHASE_TO_AGENT[phase],
            f"execute_{phase.value}",
            f"Phase {phase.value} is handled by the {PHASE_TO_AGENT[phase].value}.",
            {"phase": phase.value, "iteration": state.iteration},
            None,
        )
        await self._hooks.on_phase_start(state, phase)
        outputs: dict[str, Any]
        if phase is Phase.PLANNING:
            outputs = await self._planning()
        elif phase is Phase.GATHERING:
            outputs = await self._gathering()
        elif phase is Phase.ANALYSIS:
            outputs = await self._analysis()
        elif phase is Phase.SYNTHESIS:
            outputs = await self._synthesis()
        else:
            outputs = await self._refinement()
        self._evaluate(phase, outputs)
        await self._checkpoint()
        await self._hooks.on_phase_complete(state, phase)
        guidance = await self._hooks.on_think_pause(state, reflection_prompt(state, phase))
        self._guidance = guidance or None
        if self._guidance:
            state.metadata.setdefault("guidance", []).append(
                {"after": phase.value, "iteration": state.iteration, "guidance": self._guidance}
            )

    async def _planning(self) -> dict[str, Any]:
        state = self.state
        if not any(sq.iteration == state.iteration for sq in state.sub_queries):
            output = await plan(self._llm, state, self._guidance)
            state.research_brief = output.research_brief or state.research_brief
            state.sub_queries.extend(
                SubQuery(
                    query=p.query,
                    rationale=p.rationale,
                    priority=p.priority,
                    iteration=state.iteration,
                )
                for p in output.sub_queries
            )
        return {
            "sub_query_count": sum(
                1 for sq in state.sub_queries if sq.iteration == state.iteration
            ),
            "has_research_brief": bool(state.research_brief),
        }

    async def _gathering(self) -> dict[str, Any]:
        state = self.state
        output = await gather(state, self._search, self._calls, self._checkpoint)
        current = [sq for sq in state.sub_queries if sq.iteration == state.iteration]
        if not state.sources and current and all(sq.error for sq in current):
            # Writing a report from no evidence would only repeat the model's memory.
            errors = "; ".join(dict.fromkeys(sq.error or "" for sq in current))
            raise ProviderError(
                f"Every search failed, so there is nothing to analyse: {errors}",
                provider=", ".join(p.name for p in self._search),
                retryable=True,
                remediation="Check the search provider's key and status, then resume the "
                "research; the failed searches are retried.",
            )
        self._mark_searched_gaps()
        return {"source_count": len(state.sources), **output.stats.model_dump()}

    async def _analysis(self) -> dict[str, Any]:
        output = await analyze(self._llm, self.state, self._guidance, self._checkpoint)
        return {
            "finding_count": len(self.state.findings),
            "new_findings": len(output.findings),
            "high_confidence_count": sum(
                1 for f in self.state.findings if f.confidence is Confidence.HIGH
            ),
        }

    async def _synthesis(self) -> dict[str, Any]:
        output = await synthesize(self._llm, self.state, self._guidance)
        self.state.report = output.report
        self.state.report_metadata = output.report_metadata
        return {"has_report": True, "report_length": len(output.report)}

    async def _refinement(self) -> dict[str, Any]:
        state = self.state
        # Re-running after a crash must not plan the next iteration twice.
        if not self._next_iteration_queries():
            output = await refine(self._llm, state, self._guidance)
            follow_ups = self._follow_up_queries(output)
            iterate = output.iteration_recommendation.should_iterate and bool(follow_ups)
            self._record(
                AgentRole.SUPERVISOR,
                "plan_next_iteration",
                output.iteration_recommendation.rationale
                or ("Follow-up queries address open gaps." if iterate else "Nothing to follow up."),
                {"unaddressed_gaps": len(state.unaddressed_gaps())},
                {"should_iterate": iterate, "follow_up_queries": len(follow_ups)},
            )
            if iterate:
                state.sub_queries.extend(follow_ups)
        return {
            "unaddressed_gaps": len(state.unaddressed_gaps()),
            "should_iterate": bool(self._next_iteration_queries()),
        }

    def _follow_up_queries(self, output: RefinerOutput) -> list[SubQuery]:
        state = self.state
        known = {" ".join(sq.query.lower().split()) for sq in state.sub_queries}
        follow_ups: list[SubQuery] = []
        for assessment in output.gap_analysis:
            if not assessment.addressable:
                continue
            for follow_up in assessment.follow_up_queries:
                key = " ".join(follow_up.query.lower().split())
                if key and key not in known and len(follow_ups) < state.limits.max_sub_queries:
                    known.add(key)
                    follow_ups.append(
                        SubQuery(
                            query=follow_up.query.strip(),
                            rationale=follow_up.expected_contribution,
                            iteration=state.iteration + 1,
                            gap_id=assessment.gap_id,
                        )
                    )
        return follow_ups

    def _next_iteration_queries(self) -> list[SubQuery]:
        return [sq for sq in self.state.sub_queries if sq.iteration == self.state.iteration + 1]

    # ------------------------------------------------------------------ decisions

    def _next_phase(self, phase: Phase) -> Phase | None:
        state = self.state
        if phase is Phase.SYNTHESIS:
            return Phase.REFINEMENT if self._decide_iteration() else None
        if phase is Phase.REFINEMENT:
            if not self._next_iteration_queries():
                return None
            state.iteration += 1
            return Phase.GATHERING
        order = [Phase.PLANNING, Phase.GATHERING, Phase.ANALYSIS, Phase.SYNTHESIS]
        return order[order.index(phase) + 1]

    def _decide_iteration(self) -> bool:
        state = self.state
        gaps = len(state.unaddressed_gaps())
        should = gaps > 0 and state.iteration < state.limits.max_iterations
        if should:
            rationale = f"{gaps} unaddressed gap(s) and iterations remain: refine."
        elif gaps:
            rationale = f"{gaps} gap(s) remain but the iteration limit is reached: complete."
        else:
            rationale = "No unaddressed gaps: complete."
        self._record(
            AgentRole.SUPERVISOR,
            "decide_iteration",
            rationale,
            {
                "gap_count": gaps,
                "iteration": state.iteration,
                "max_iterations": state.limits.max_iterations,
            },
            {"should_iterate": should, "next_phase": "refinement" if should else "COMPLETED"},
        )
        return should

    def _evaluate(self, phase: Phase, outputs: dict[str, Any]) -> None:
        result = GATES[phase](self.state)
        rationale = (
            f"{phase.value.capitalize()} meets its quality gate."
            if result.valid
            else f"{phase.value.capitalize()} gate issues: {'; '.join(result.issues)}."
        )
        self._record(
            AgentRole.SUPERVISOR,
            "evaluate_phase",
            rationale,
            {"phase": phase.value, "iteration": self.state.iteration},
            {
                **outputs,
                "quality_ok": result.valid,
                "quality_score": round(result.quality_score, 2),
                "issues": result.issues,
            },
        )

    def _mark_searched_gaps(self) -> None:
        """A gap counts as addressed once every follow-up query made for it was searched."""
        for gap in self.state.gaps:
            follow_ups = [sq for sq in self.state.sub_queries if sq.gap_id == gap.id]
            if follow_ups and all(sq.status is not SubQueryStatus.PENDING for sq in follow_ups):
                gap.addressed = True

    def _record(
        self,
        agent: AgentRole,
        action: str,
        rationale: str,
        inputs: dict[str, Any],
        outputs: dict[str, Any] | None,
    ) -> None:
        self.state.record(
            AgentDecision(
                agent=agent, action=action, rationale=rationale, inputs=inputs, outputs=outputs
            )
        )
        log.debug("%s %s: %s", agent.value, action, rationale)
