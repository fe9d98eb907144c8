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
from typing import Any, Protocol, TypeAlias, TypeVar

import anyio

from foundry_mcp.research.models import (
    PHASE_TO_AGENT,
    AgentDecision,
    AgentRole,
    Phase,
    ReflectionDecision,
    ResearchState,
    ValidationResult,
    utcnow,
)
from foundry_mcp.research.workflow.calls import ResearchLLM
from foundry_mcp.research.workflow.dispatch import dispatch_inputs
from foundry_mcp.research.workflow.reflection import reflect
from foundry_mcp.research.workflow.time_ceiling import TimeCeiling

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


class Playbook(Protocol):
    """What a research mode decides: the work of each phase and which phase follows.

    Implemented by the modes in :mod:`foundry_mcp.research.modes`.
    """

    async def execute(self, phase: Phase, guidance: str | None) -> dict[str, Any]:
        """Do the phase's work; returns the figures its evaluation records."""
        ...

    def timeout(self, phase: Phase) -> float | None:
        """Seconds the phase may take (None: no limit of its own)."""
        ...

    def gate(self, phase: Phase) -> ValidationResult:
        """The phase's quality gate."""
        ...

    def describe(self, phase: Phase) -> str:
        """The reflection question asked after the phase (think pause, model reflection)."""
        ...

    def can_retry(self, phase: Phase) -> bool:
        """Whether running the phase again can change its outcome."""
        ...

    def prepare_retry(self, phase: Phase) -> None:
        """Undo what the phase produced, so that running it again replaces, not duplicates."""
        ...

    def next_phase(self, phase: Phase, complete_early: bool) -> Phase | None:
        """The phase after ``phase`` (None: the research is complete); records its decision.

        ``complete_early`` is set when the supervisor's reflection judged the report complete.
        """
        ...


class _OutOfTime(Exception):
    """A phase ran into the time kept for the report."""


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
        # A new research counts from the call that started it, a resumed one from now.
        fresh = state.iteration == 1 and state.phase is Phase.PLANNING
        spent = (utcnow() - state.created_at).total_seconds() if fresh else 0.0
        self._ceiling = TimeCeiling.start(state.options.max_time_s, max(0.0, spent))

    async def run(self) -> None:
        """Advance phase by phase; returns when the research is complete.

        With a time ceiling (``max_time_s``), a phase before the report that would run into
        the time kept for the report is stopped, and the report is written from what was found
        (see :class:`TimeCeiling`).
        """
        while True:
            phase = self.state.phase
            if phase is not Phase.SYNTHESIS and self._ceiling.reached():
                if self.state.report is not None and phase in (Phase.REFINEMENT, Phase.GATHERING):
                    self._stop_at_ceiling(phase)  # nothing new to write: the report stands
                    return
                await self._write_now(phase)
                continue
            try:
                await self._run_phase(phase)
            except _OutOfTime:
                await self._write_now(phase)
                continue
            if phase is Phase.SYNTHESIS and self._ceiling.ended_it:
                return
            following = self._playbook.next_phase(phase, self._complete_early)
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
            dispatch_inputs(state, phase),
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
            self._playbook.prepare_retry(phase)
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
        """Run the phase's work within the phase's timeout, if one is configured, and before
        the report's share of the time ceiling, if there is one."""
        seconds = self._playbook.timeout(phase)
        left = None if phase is Phase.SYNTHESIS else self._ceiling.left_before_report()
        if not seconds and left is None:
            return await self._playbook.execute(phase, self._guidance)
        limit = min(s for s in (seconds, left) if s is not None)
        with anyio.move_on_after(max(0.0, limit)) as scope:
            return await self._playbook.execute(phase, self._guidance)
        assert scope.cancelled_caught
        if left is not None and left <= (seconds or left):
            raise _OutOfTime
        raise PhaseTimeoutError(phase, seconds or limit)

    async def _write_now(self, stopped: Phase) -> None:
        """The time ceiling is near: record it and go straight to the report."""
        self._stop_at_ceiling(stopped, write=True)
        self.state.phase = Phase.SYNTHESIS
        await self._checkpoint()

    def _stop_at_ceiling(self, stopped: Phase, *, write: bool = False) -> None:
        """Record that the time ceiling ended the research at ``stopped``."""
        state = self.state
        self._ceiling.ended_it = True
        limit = state.options.max_time_s or 0.0
        then = (
            "the report is written from what was found so far"
            if write
            else ("the report already written stands")
        )
        self._record(
            AgentRole.SUPERVISOR,
            "time_ceiling",
            f"The time ceiling (max_time_s = {limit:g}) is near: {stopped.value} was not run "
            f"to its end, and {then}.",
            {"phase": stopped.value, "iteration": state.iteration, "max_time_s": limit},
            {"next_phase": Phase.SYNTHESIS.value if write else "COMPLETED"},
        )
        state.metadata["time_ceiling_reached"] = True
        state.warn(
            f"Time ceiling reached (max_time_s = {limit:g}): {stopped.value} of iteration "
            f"{state.iteration} was not run to its end and no further round was run; the report "
            "rests on what was found until then."
        )

    async def _reflect(
        self, phase: Phase, gate: ValidationResult, outputs: dict[str, Any]
    ) -> ReflectionDecision | None:
        """The model's judgement of the phase, when reflection is enabled."""
        state = self.state
        if not state.options.enable_reflection or self._ceiling.reached():
            return None  # no judgement when the time left is the report's
        decision = await reflect(
            self._llm, state, phase, self._playbook.describe(phase), gate, outputs
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
        return wanted and self._playbook.can_retry(phase)

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
        # The gatherer uses no model, so guidance given before it carries over to the analyzer.
        self._guidance = _join(given, guidance) if phase is Phase.GATHERING else guidance
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
    kept = [part.strip() for part in parts if part and part.strip()]
    return "\n".join(kept) or None
