"""A revision's run: its steps in order, each saved before the next, then its version added.

The runner calls :func:`revise` instead of the supervisor when the research holds a revision,
within the same handlers: a revision cancelled, timed out or interrupted stops as any run does,
and a resumed one goes on from the step it had reached (the calls it made come back from the
research's journal).

GATHERING  deepen: the part searched and read further; refresh: the searches asked again for
           what is new, the cited pages read again (:mod:`.deepen`, :mod:`.refresh`)
ANALYSIS   the new and changed pages read for findings (:mod:`.analysis`)
WRITING    the report written again (:mod:`.writing`); a revision that found nothing new and
           asks for no other writing keeps the report, saying so, with no call to a model
DONE       the version added (:mod:`.versions`), the revision cleared

The research's ``max_time_s`` bounds each run of a revision, counted from its start.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from foundry_mcp.research.models import (
    Phase,
    ResearchState,
    Revision,
    RevisionKind,
    RevisionStep,
)
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.revision.analysis import analyze_new
from foundry_mcp.research.revision.changes import unchanged_report
from foundry_mcp.research.revision.deepen import deepen_gather
from foundry_mcp.research.revision.refresh import refresh_gather
from foundry_mcp.research.revision.versions import revision_version
from foundry_mcp.research.revision.writing import write_again
from foundry_mcp.research.workflow.deadline.ceiling import TimeCeiling

Step = Callable[[ResearchKit, ResearchState, Revision], Awaitable[None]]

_GATHERERS: dict[RevisionKind, Step] = {
    RevisionKind.DEEPEN: deepen_gather,
    RevisionKind.REFRESH: refresh_gather,
}
# The research's phase while a step runs: its status, and the phase its LLM calls are counted in.
_PHASES = {
    RevisionStep.GATHERING: Phase.GATHERING,
    RevisionStep.ANALYSIS: Phase.ANALYSIS,
    RevisionStep.WRITING: Phase.SYNTHESIS,
}
_NEXT = {
    RevisionStep.GATHERING: RevisionStep.ANALYSIS,
    RevisionStep.ANALYSIS: RevisionStep.WRITING,
    RevisionStep.WRITING: RevisionStep.DONE,
}


async def revise(kit: ResearchKit, state: ResearchState) -> None:
    """Make ``state.revision``'s version from the step it is at; saved after every step."""
    revision = state.revision
    if revision is None:
        return
    with _ceiling(kit, state).bound():
        while revision.step is not RevisionStep.DONE:
            step = revision.step
            state.phase = _PHASES[step]
            state.emit(
                "revision_step",
                {
                    "revision": revision.id,
                    "kind": revision.kind.value,
                    "step": step.value,
                    "iteration": revision.iteration,
                },
            )
            await _STEPS[step](kit, state, revision)
            revision.step = _NEXT[step]
            await kit.checkpoint()
    revision_version(state, revision)
    state.revision = None
    await kit.checkpoint()


async def _gather(kit: ResearchKit, state: ResearchState, revision: Revision) -> None:
    gather = _GATHERERS.get(revision.kind)
    if gather is not None:  # a rewrite searches nothing (and never starts here)
        await gather(kit, state, revision)


async def _analyze(kit: ResearchKit, state: ResearchState, revision: Revision) -> None:
    changes = revision.changes
    found = changes.new_source_ids or changes.changed_source_ids or changes.moved_source_ids
    if revision.kind is RevisionKind.REFRESH and not found:
        return  # nothing new or changed to read: no call
    await analyze_new(kit, state, revision)


async def _write(kit: ResearchKit, state: ResearchState, revision: Revision) -> None:
    if revision.kind is not RevisionKind.REWRITE and _unchanged(revision):
        state.report = unchanged_report(state, revision)
        return
    await write_again(kit, state, revision)


def _ceiling(kit: ResearchKit, state: ResearchState) -> TimeCeiling:
    """The research's ``max_time_s`` for this run of its revision, counted from now: the
    research's own runs are long over (inactive without one)."""
    if not state.options.max_time_s:
        return TimeCeiling()
    ceiling = TimeCeiling(state, kit.calls, state.options.max_time_s, anyio.current_time())
    ceiling.writer = kit.llm.model_for("synthesis")
    return ceiling


def _unchanged(revision: Revision) -> bool:
    """Whether the report stays as it was: nothing new was found, and nothing else is asked."""
    return revision.changes.nothing_new and revision.instructions.is_plain()


_STEPS: dict[RevisionStep, Step] = {
    RevisionStep.GATHERING: _gather,
    RevisionStep.ANALYSIS: _analyze,
    RevisionStep.WRITING: _write,
}
