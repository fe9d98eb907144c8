"""The supervisor: walks a research through its phases and keeps watch over each.

PLANNING -> GATHERING -> ANALYSIS -> SYNTHESIS -> (iterate?) -> REFINEMENT -> GATHERING ...

What each phase does, and which phase follows, is the research mode's *playbook*
(:mod:`foundry_mcp.research.modes`). The supervisor owns what every mode shares: it records the
dispatch, runs the phase within its timeout, saves the state, evaluates the phase's quality gate
(with a bounded retry carrying the issues as guidance), lets the model reflect when enabled,
calls the hooks and pauses to think, and records every decision. It runs from whatever phase the
state is in, so a resumed research simply continues.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeAlias, TypeVar

import anyio

from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.llm.fanout import together
from foundry_mcp.research.models import (
    PHASE_TO_AGENT,
    AgentDecision,
    AgentRole,
    Phase,
    ReflectionDecision,
    ResearchState,
    ValidationResult,
)
from foundry_mcp.research.workflow.deadline.ceiling import Judgement, Stop, TimeCeiling
from foundry_mcp.research.workflow.dispatch import dispatch_inputs
from foundry_mcp.research.workflow.playbook import Playbook
from foundry_mcp.research.workflow.reflection import reflect
from foundry_mcp.research.workflow.review import AwaitingApproval, plan_to_approve

log = logging.getLogger(__name__)

Checkpoint = Callable[[], Awaitable[None]]

_T = TypeVar("_T")
MaybeAwaitable: TypeAlias = _T | Awaitable[_T]


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

    An override may be a plain method or a coroutine method (``async def``): the supervisor
    calls it and awaits the result when it is awaitable. A hook that raises is logged and
    recorded as a ``hook_failed`` decision and a warning, and the research goes on without it:
    a faulty hook never breaks a research.
    """

    def on_phase_start(self, state: ResearchState, phase: Phase) -> MaybeAwaitable[None]:
        """Called before a phase's agent runs."""

    def on_agent_handoff(
        self, state: ResearchState, agent: AgentRole, phase: Phase
    ) -> MaybeAwaitable[None]:
        """Called when the supervisor hands a phase to its specialist agent."""

    def on_phase_complete(self, state: ResearchState, phase: Phase) -> MaybeAwaitable[None]:
        """Called after a phase ran, passed its gate (or used up its retries) and was saved."""

    def on_think_pause(self, state: ResearchState, prompt: str) -> MaybeAwaitable[str | None]:
        """Called at each reflection point; guidance returned goes to the next agent."""
        return None


class _OutOfTime(Exception):
    """A phase was stopped because writing the report had to start."""


class Supervisor:
    """Runs one research (or one researcher of it) from its current phase until it completes."""

    def __init__(
        self,
        state: ResearchState,
        llm: ResearchLLM,
        playbook: Playbook,
        checkpoint: Checkpoint,
        hooks: SupervisorHooks | None = None,
    ) -> None:
        self.state = state
        self._llm = llm
        self._playbook = playbook
        self._checkpoint = checkpoint
        self._hooks = hooks or SupervisorHooks()
        self._guidance: str | None = None
        self._complete_early = False
        # A sub-question's researcher has no ceiling of its own: the research's stops it.
        self._ceiling = TimeCeiling() if state.branch else TimeCeiling.start(state, llm)
        if not state.branch and state.phase is not Phase.SYNTHESIS:
            state.metadata.pop("time_ceiling_reached", None)  # this run's ceiling decides

    async def run(self) -> None:
        """Advance phase by phase until the research is complete; with a time ceiling
        (``max_time_s``), the phase running when writing must start is stopped and the report
        written from what was found (see :class:`TimeCeiling`)."""
        with self._ceiling.bound():
            await self._advance()

    async def _advance(self) -> None:
        ceiling = self._ceiling
        while True:
            phase = self.state.phase
            if phase is Phase.REFINEMENT and self.state.report is not None:
                refused = ceiling.round_refused()
                if refused is not None:
                    self._note(refused)  # a round that cannot end in time is not begun
                    return
            due = ceiling.due(phase)
            if due is not None:
                if await self._stop_at_ceiling(phase, due, begun=False):
                    continue
                return
            try:
                await self._run_phase(phase)
            except _OutOfTime:
                assert ceiling.last is not None
                if await self._stop_at_ceiling(phase, ceiling.last, begun=True):
                    continue
                return
            if phase is Phase.SYNTHESIS and ceiling.ended_it:
                return
            following = self._playbook.next_phase(phase, self._complete_early)
            if following is None:
                return
            self.state.phase = following
            await self._checkpoint()
            if phase is Phase.PLANNING and plan_to_approve(self.state):
                raise AwaitingApproval(self.state.id)

    # ------------------------------------------------------------------ phases

    async def _run_phase(self, phase: Phase) -> None:
        state = self.state
        agent = PHASE_TO_AGENT[phase]
        self._record(
            agent,
            f"execute_{phase.value}",
            f"Phase {phase.value} is handled by the {agent.value}.",
            dispatch_inputs(state, phase),
            None,
        )
        state.emit("phase_started", {"phase": phase.value, "iteration": state.iteration})
        await self._call_hook("on_phase_start", state, phase)
        await self._call_hook("on_agent_handoff", state, agent, phase)
        given_guidance = self._guidance  # from the think pause before this phase
        outputs = await self._execute(phase)
        await self._checkpoint()  # the phase's paid work is saved before anything else
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
            self._playbook.prepare_retry(phase)
            self._guidance = _join(
                given_guidance,
                f"The previous attempt fell short: {'; '.join(issues)}. Fix these issues.",
                reflection.guidance if reflection else None,
            )
            outputs = await self._execute(phase)
            gate = self._evaluate(phase, outputs)
            reflection = None
        # The retried work is saved; without a retry the phase's work was saved above, and
        # the judgement's records go with the next save.
        if attempts:
            await self._checkpoint()
        state.emit(
            "phase_completed",
            {"phase": phase.value, "iteration": state.iteration, "quality_ok": gate.valid},
        )
        await self._call_hook("on_phase_complete", state, phase)
        await self._think_pause(phase, reflection, given_guidance)

    async def _execute(self, phase: Phase) -> dict[str, Any]:
        """Run the phase's work within the phase's timeout, if one is configured, and, before
        the report, until writing must start, if there is a time ceiling (the report's own
        calls are raced against the deadline by the synthesizer, which reports what was found
        when they are cut)."""
        seconds = self._playbook.timeout(phase)
        work = partial(self._playbook.execute, phase, self._guidance)
        with anyio.move_on_after(seconds or None):
            if phase is Phase.SYNTHESIS or not self._ceiling.active:
                return await work()
            finished, outputs = await self._ceiling.race(work)
            if not finished or outputs is None:
                raise _OutOfTime
            return outputs
        raise PhaseTimeoutError(phase, seconds or 0.0)

    async def _stop_at_ceiling(self, stopped: Phase, judged: Judgement, *, begun: bool) -> bool:
        """Writing must start: record it, and go to the report unless the one written stands
        (nothing was found since). Returns whether the report is to be written."""
        state = self.state
        write = state.report is None or (
            stopped in (Phase.GATHERING, Phase.ANALYSIS)
            and state.iteration > 1
            and any(f.iteration == state.iteration for f in state.findings)
        )
        self._note(self._ceiling.stop(judged, stopped, write=write, begun=begun))
        if write:
            state.phase = Phase.SYNTHESIS
            await self._checkpoint()
        return write

    def _note(self, stop: Stop) -> None:
        """Record a stop of the time ceiling: its decision, warning and flag."""
        self._record(
            AgentRole.SUPERVISOR, "time_ceiling", stop.rationale, stop.inputs, stop.outputs
        )
        self.state.metadata["time_ceiling_reached"] = True
        self.state.warn(stop.warning)

    async def _reflect(
        self, phase: Phase, gate: ValidationResult, outputs: dict[str, Any]
    ) -> ReflectionDecision | None:
        """The model's judgement of the phase, when reflection is enabled."""
        state = self.state
        # Not asked: a judgement whose answer is known, or that would run when writing must.
        judged = state.options.enable_reflection and self._playbook.judged(phase)
        if not judged or not self._ceiling.allows("reflection", phase):
            return None
        decision = await self._judged_beside_work_ahead(phase, gate, outputs)
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

    async def _judged_beside_work_ahead(
        self, phase: Phase, gate: ValidationResult, outputs: dict[str, Any]
    ) -> ReflectionDecision:
        """The model's judgement of ``phase``, with the next phase's work that the judgement
        cannot change done beside it (the playbook's ``ahead``, dropped if the phase is done
        again); not when the gate failed or a plan awaits the user's approval."""
        judging = partial(
            reflect, self._llm, self.state, phase, self._playbook.describe(phase), gate, outputs
        )
        if not gate.valid or plan_to_approve(self.state):
            return await judging()
        judged: list[ReflectionDecision] = []

        async def judge() -> None:
            judged.append(await judging())

        await together(judge, partial(self._playbook.ahead, phase))
        return judged[0]

    def _retry_wanted(
        self, phase: Phase, gate: ValidationResult, reflection: ReflectionDecision | None
    ) -> bool:
        """Retry when the gate failed (or the reflection asked), a retry can change things, and
        the time ceiling leaves time for it."""
        wanted = not gate.valid or (reflection is not None and reflection.action == "retry")
        return wanted and self._playbook.can_retry(phase) and not self._ceiling.reached()

    async def _think_pause(
        self, phase: Phase, reflection: ReflectionDecision | None, given: str | None
    ) -> None:
        """Reflect after the phase: hooks and the model may give guidance to the next agent."""
        state = self.state
        prompt = self._playbook.describe(phase)
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
        carried = None if self._playbook.takes_guidance(phase) else given
        self._guidance = _join(carried, guidance)
        if guidance:
            state.metadata.setdefault("guidance", []).append(
                {"after": phase.value, "iteration": state.iteration, "guidance": guidance}
            )

    async def _call_hook(self, name: str, *args: Any) -> Any:
        """Call hook ``name`` (a plain or a coroutine method); a hook that raises is recorded."""
        state = self.state
        try:
            result = getattr(self._hooks, name)(*args)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.exception("supervisor hook %s failed", name)
            state.warn(f"Supervisor hook {name} failed ({error}); ignored.")
            self._record(
                AgentRole.SUPERVISOR,
                "hook_failed",
                f"Supervisor hook {name} failed ({error}); the research went on without it.",
                {"hook": name, "phase": state.phase.value, "iteration": state.iteration},
                {"hook": name, "error": error},
            )
            return None
        return result

    # ------------------------------------------------------------------ decisions

    def _evaluate(self, phase: Phase, outputs: dict[str, Any]) -> ValidationResult:
        result = self._playbook.gate(phase)
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
    return "\n".join(part.strip() for part in parts if part and part.strip()) or None
