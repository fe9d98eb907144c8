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

import anyio

from foundry_mcp.providers.fetch import PageFetcher
from foundry_mcp.providers.search.base import SearchProvider
from foundry_mcp.research.models import (
    PHASE_TO_AGENT,
    AgentDecision,
    AgentRole,
    Confidence,
    Phase,
    RefinerOutput,
    ReflectionDecision,
    ResearchState,
    SubQuery,
    SubQueryStatus,
    ValidationResult,
)
from foundry_mcp.research.workflow.analyzer import analyze
from foundry_mcp.research.workflow.calls import CallLog, ResearchLLM
from foundry_mcp.research.workflow.gates import GATES
from foundry_mcp.research.workflow.gatherer import gather
from foundry_mcp.research.workflow.planner import plan
from foundry_mcp.research.workflow.refiner import refine
from foundry_mcp.research.workflow.reflection import reflect
from foundry_mcp.research.workflow.synthesizer import synthesize

log = logging.getLogger(__name__)

Checkpoint = Callable[[], Awaitable[None]]


class PhaseTimeoutError(Exception):
    """A phase ran longer than its configured timeout."""

    def __init__(self, phase: Phase, seconds: float) -> None:
        super().__init__(
            f"The {phase.value} phase exceeded its timeout of {seconds:g} s. Resume the "
            f"research to continue; raise deep_research_{phase.value}_timeout if it recurs."
        )
        self.phase = phase
        self.seconds = seconds


class SupervisorHooks:
    """Extension points for library users; override any method. All default to no-ops.

    A hook that raises is logged and ignored (with a warning on the research): a faulty hook
    never breaks a research.
    """

    async def on_phase_start(self, state: ResearchState, phase: Phase) -> None:
        """Called before a phase's agent runs."""

    async def on_agent_handoff(self, state: ResearchState, agent: AgentRole, phase: Phase) -> None:
        """Called when the supervisor hands a phase to its specialist agent."""

    async def on_phase_complete(self, state: ResearchState, phase: Phase) -> None:
        """Called after a phase ran, passed its gate (or used up its retries) and was saved."""

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
        fetcher: PageFetcher | None = None,
    ) -> None:
        self.state = state
        self._fetcher = fetcher
        self._llm = llm
        self._search = search
        self._calls = calls
        self._checkpoint = checkpoint
        self._hooks = hooks or SupervisorHooks()
        self._guidance: str | None = None
        self._complete_early = False

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
        agent = PHASE_TO_AGENT[phase]
        self._record(
            agent,
            f"execute_{phase.value}",
            f"Phase {phase.value} is handled by the {agent.value}.",
            {"phase": phase.value, "iteration": state.iteration},
            None,
        )
        state.emit("phase_started", {"phase": phase.value, "iteration": state.iteration})
        await self._call_hook("on_phase_start", state, phase)
        await self._call_hook("on_agent_handoff", state, agent, phase)
        given_guidance = self._guidance  # from the think pause before this phase
        outputs = await self._execute(phase)
        await self._checkpoint()  # the phase's paid work is on disk before anything else
        gate = self._evaluate(phase, outputs)
        reflection = await self._reflect(phase, gate, outputs)
        attempts = 0
        while attempts < state.options.gate_retries and self._retry_wanted(phase, gate, reflection):
            attempts += 1
            issues = gate.issues or [reflection.rationale if reflection else "quality too low"]
            self._record(
                AgentRole.SUPERVISOR,
                "retry_phase",
                f"Retrying {phase.value} (attempt {attempts} of {state.options.gate_retries}): "
                f"{'; '.join(issues)}.",
                {"phase": phase.value, "iteration": state.iteration, "attempt": attempts},
                {"issues": issues},
            )
            self._prepare_retry(phase)
            self._guidance = _join(
                given_guidance,
                f"The previous attempt fell short: {'; '.join(issues)}. Fix these issues.",
                reflection.guidance if reflection else None,
            )
            outputs = await self._execute(phase)
            gate = self._evaluate(phase, outputs)
            reflection = None
        await self._checkpoint()
        state.emit(
            "phase_completed",
            {"phase": phase.value, "iteration": state.iteration, "quality_ok": gate.valid},
        )
        await self._call_hook("on_phase_complete", state, phase)
        await self._think_pause(phase, reflection, given_guidance)

    async def _execute(self, phase: Phase) -> dict[str, Any]:
        """Run the phase's agent within the phase's timeout, if one is configured."""
        seconds = self.state.options.phase_timeouts.get(phase.value)
        if not seconds:
            return await self._dispatch(phase)
        with anyio.move_on_after(seconds) as scope:
            return await self._dispatch(phase)
        assert scope.cancelled_caught
        raise PhaseTimeoutError(phase, seconds)

    async def _dispatch(self, phase: Phase) -> dict[str, Any]:
        if phase is Phase.PLANNING:
            return await self._planning()
        if phase is Phase.GATHERING:
            return await self._gathering()
        if phase is Phase.ANALYSIS:
            return await self._analysis()
        if phase is Phase.SYNTHESIS:
            return await self._synthesis()
        return await self._refinement()

    async def _reflect(
        self, phase: Phase, gate: ValidationResult, outputs: dict[str, Any]
    ) -> ReflectionDecision | None:
        """The model's judgement of the phase, when reflection is enabled."""
        state = self.state
        if not state.options.enable_reflection:
            return None
        decision = await reflect(
            self._llm, state, phase, reflection_prompt(state, phase), gate, outputs
        )
        self._record(
            AgentRole.SUPERVISOR,
            "reflect",
            decision.rationale or f"Reflection chose {decision.action}.",
            {"phase": phase.value, "iteration": state.iteration},
            {
                "action": decision.action,
                "score": decision.quality_assessment.score,
                "guidance": decision.guidance,
            },
        )
        if decision.action == "complete" and phase in (Phase.SYNTHESIS, Phase.REFINEMENT):
            self._complete_early = True
        return decision

    def _retry_wanted(
        self, phase: Phase, gate: ValidationResult, reflection: ReflectionDecision | None
    ) -> bool:
        """Retry when the gate failed (or the reflection asked) and a retry can change things."""
        wanted = not gate.valid or (reflection is not None and reflection.action == "retry")
        return wanted and self._can_retry(phase)

    def _can_retry(self, phase: Phase) -> bool:
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

    def _prepare_retry(self, phase: Phase) -> None:
        """Undo what the phase produced so that running it again replaces, not duplicates."""
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
            for source in state.sources:
                if source.iteration == state.iteration:
                    source.analyzed = False

    async def _think_pause(
        self, phase: Phase, reflection: ReflectionDecision | None, given: str | None
    ) -> None:
        """Reflect after the phase: hooks and the model may give guidance to the next agent."""
        state = self.state
        prompt = reflection_prompt(state, phase)
        hook_guidance = await self._call_hook("on_think_pause", state, prompt)
        guidance = _join(
            hook_guidance if isinstance(hook_guidance, str) else None,
            reflection.guidance if reflection else None,
        )
        self._record(
            AgentRole.SUPERVISOR,
            "think_pause",
            prompt,
            {"phase": phase.value, "iteration": state.iteration},
            {"guidance": guidance},
        )
        # The gatherer uses no model, so guidance given before it carries over to the analyzer.
        self._guidance = _join(given, guidance) if phase is Phase.GATHERING else guidance
        if guidance:
            state.metadata.setdefault("guidance", []).append(
                {"after": phase.value, "iteration": state.iteration, "guidance": guidance}
            )

    async def _call_hook(self, name: str, *args: Any) -> Any:
        try:
            return await getattr(self._hooks, name)(*args)
        except Exception as exc:
            log.exception("supervisor hook %s failed", name)
            self.state.warn(
                f"Supervisor hook {name} failed ({type(exc).__name__}: {exc}); ignored."
            )
            return None

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
        output = await gather(state, self._search, self._calls, self._checkpoint, self._fetcher)
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

    async def _analysis(self) -> dict[str, Any]:
        output = await analyze(self._llm, self.state, self._guidance, self._checkpoint)
        self._mark_addressed_gaps()
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
            if not self._next_iteration_queries() or self._complete_early:
                return None
            state.iteration += 1
            return Phase.GATHERING
        order = [Phase.PLANNING, Phase.GATHERING, Phase.ANALYSIS, Phase.SYNTHESIS]
        return order[order.index(phase) + 1]

    def _decide_iteration(self) -> bool:
        state = self.state
        gaps = len(state.unaddressed_gaps())
        should = gaps > 0 and state.iteration < state.limits.max_iterations
        if should and self._complete_early:
            should = False
            rationale = "The supervisor's reflection judged the report complete."
        elif should:
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

    def _evaluate(self, phase: Phase, outputs: dict[str, Any]) -> ValidationResult:
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
        return result

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


def _join(*parts: str | None) -> str | None:
    """Several pieces of guidance as one, or None when there is none."""
    kept = [part.strip() for part in parts if part and part.strip()]
    return "\n".join(kept) or None
