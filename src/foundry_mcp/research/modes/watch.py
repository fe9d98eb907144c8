"""Parts of a research researched at once, watched: one that stops moving never holds the rest.

Each part (a sub-question's researcher) runs in a cancel scope of its own. The research is
*stalled* when, for ``stall_timeout`` seconds (``ResearchOptions.stall_timeout``), no provider
call of it has been in flight and nothing of it has moved (no call landed, no researcher saved
its work): what its parts wait for then is something of the research's own, which no
provider's timeout will end. The parts still running are stopped, each named in the status as
having made no progress, and the research goes on with what the others found. A part whose own
phase runs past its timeout (``PhaseTimeoutError``) is stopped the same way, alone. Either way
the part is ``failed`` with the reason, its work so far is kept, and a resumed research
researches it again. Any other error of a part ends the research, as before.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence

import anyio

from foundry_mcp.research.llm.calls import CallLog
from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    BranchStatus,
    ResearchState,
    SubQuestion,
)
from foundry_mcp.research.workflow.supervisor import PhaseTimeoutError

MAX_POLL_SECONDS = 5.0
_ROUND = ("gathering", "analysis", "synthesis", "refinement")  # a researcher's round's phases


def gathering_bound(state: ResearchState) -> float | None:
    """How long a hierarchical research's gathering may take: what its parts' own phase
    timeouts allow (planning, then every round of the largest iteration budget, each phase
    with its gate's retries), in as many waves as ``max_concurrent`` makes of the parts left.
    None when a phase has no timeout (the research's ``task_timeout`` still bounds it)."""
    timeouts = state.options.phase_timeouts
    if any(phase not in timeouts for phase in ("planning", *_ROUND)):
        return None
    parts = [sq for sq in state.sub_questions if sq.status is not BranchStatus.COMPLETED]
    if not parts:
        return None
    tries = 1 + state.options.gate_retries
    rounds = max(sq.iteration_budget for sq in parts)
    one_part = tries * (timeouts["planning"] + rounds * sum(timeouts[p] for p in _ROUND))
    waves = math.ceil(len(parts) / max(1, state.limits.max_concurrent))
    return one_part * waves


async def research_parts(
    state: ResearchState,
    parts: Sequence[SubQuestion],
    research_one: Callable[[SubQuestion], Awaitable[None]],
    calls: CallLog,
    save: Callable[[], Awaitable[None]],
) -> None:
    """Run ``research_one(part)`` for every part, ``max_concurrent`` at once, under the watch
    (see the module); a part waiting for its turn is not watched."""
    stall = state.options.stall_timeout
    turns = anyio.Semaphore(max(1, state.limits.max_concurrent))
    running: dict[str, anyio.CancelScope] = {}
    stalled: set[str] = set()

    async def watch() -> None:
        while True:
            await anyio.sleep(min(MAX_POLL_SECONDS, stall / 4))
            if running and calls.idle_for() >= stall:
                stalled.update(running)
                for scope in running.values():
                    scope.cancel()
                calls.moved()  # the parts waiting their turn start from now

    async def one(part: SubQuestion) -> None:
        stopped: str | None = None
        async with turns:
            with anyio.CancelScope() as scope:
                running[part.id] = scope
                calls.moved()  # a part starting is the research moving
                try:
                    await research_one(part)
                except PhaseTimeoutError as exc:
                    stopped = (
                        f"its {exc.phase.value} phase ran past its timeout of "
                        f"{exc.seconds:g} s (deep_research_{exc.phase.value}_timeout)"
                    )
                finally:
                    running.pop(part.id, None)
        if scope.cancelled_caught and part.id in stalled:
            stopped = (
                f"it made no progress for {stall:g} s while no provider call was in flight "
                "(deep_research_stall_timeout)"
            )
        if stopped is not None:
            _stop(state, part, stopped)
            await save()

    error: Exception | None = None
    async with anyio.create_task_group() as watching:
        watching.start_soon(watch)
        try:
            await fan_out(one, parts)
        except Exception as exc:  # raised below, as itself: not inside this group's
            error = exc
        finally:
            watching.cancel_scope.cancel()
    if error is not None:
        raise error


def _stop(state: ResearchState, part: SubQuestion, why: str) -> None:
    """Record that ``part`` was stopped, and why, where the status shows it."""
    part.status = BranchStatus.FAILED
    part.error = f"Stopped: {why}. The research went on without it; resume it to try again."
    state.warn(
        f"Sub-question '{part.question[:80]}' was stopped: {why}. The report rests on the "
        "other parts; resuming the research researches it again."
    )
    state.record(
        AgentDecision(
            agent=AgentRole.SUPERVISOR,
            action="stop_part",
            rationale=f"Sub-question {part.id} was stopped: {why}.",
            inputs={"sub_question": part.id, "phase": part.phase},
            outputs={"status": part.status.value},
        )
    )
