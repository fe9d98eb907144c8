"""A revision requested: the research checked, its usage snapshotted, its first version kept.

:func:`new_revision` is called by the service with the caller's request already read; it
leaves ``state.revision`` set (and the research's first version recorded, the first time), and
the service saves the state and schedules the run that makes the version (:mod:`.run`).
"""

from __future__ import annotations

from foundry_mcp.errors import InputError, InvalidStateError
from foundry_mcp.research.language import check_language
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    ResearchState,
    Revision,
    RevisionKind,
    RevisionStep,
    Status,
    WritingInstructions,
)
from foundry_mcp.research.models.versions import misfit
from foundry_mcp.research.revision.deepen import resolve_part
from foundry_mcp.research.revision.versions import first_version, usage_snapshot

_STATUS_HINT = "Read its status with action='deep-research-status'."
_FIXES = {
    "part": "Give part for a deepen: a sub-question's or gap's id (action='deep-research-status' "
    "lists them), a section's heading, or a question of your own; leave it out otherwise.",
    "max_searches": "Leave max_searches out of a rewrite.",
}


def new_revision(
    state: ResearchState,
    kind: RevisionKind,
    *,
    instructions: WritingInstructions | None = None,
    part: str | None = None,
    max_searches: int | None = None,
) -> Revision:
    """Set ``state.revision`` to a new rewrite, deepen or refresh of its report, and return it.

    ``InvalidStateError`` for a research that is running or has no completed report;
    ``InputError`` for a request its kind cannot take (a deepen without a part it can resolve,
    a part or searches for a rewrite). A revision that stopped unfinished (cancelled, failed)
    is replaced by this one.
    """
    _check_revisable(state)
    instructions = instructions or WritingInstructions()
    if instructions.language is not None:
        instructions = instructions.model_copy(
            update={"language": check_language(instructions.language)}
        )
    key, why = misfit(kind, part=part, max_searches=max_searches)
    if key:
        raise InputError(f"{key} {why}.", remediation=_FIXES[key], details={"field": key})
    part_id, question = _resolved_part(state, kind, part)
    if state.revision is not None:  # stopped unfinished: what it added stays, its version not
        state.record(
            AgentDecision(
                agent=AgentRole.SUPERVISOR,
                action="replace_revision",
                rationale=f"The unfinished {state.revision.kind.value} was replaced by a "
                f"{kind.value}.",
                inputs={"revision": state.revision.id, "step": state.revision.step.value},
            )
        )
    if not state.versions:
        first_version(state)
    base = state.versions[-1]
    searching = kind is not RevisionKind.REWRITE
    revision = Revision(
        kind=kind,
        instructions=instructions,
        part=part.strip() if part else None,
        part_id=part_id,
        part_question=question,
        max_searches=max_searches,
        since=base.created_at if kind is RevisionKind.REFRESH else None,
        step=RevisionStep.GATHERING if searching else RevisionStep.WRITING,
        iteration=state.iteration + 1 if searching else state.iteration,
        base_version=base.number,
        usage_before=usage_snapshot(state),
        search_calls_before=state.search_calls,
        finding_ids_before=[f.id for f in state.findings],
    )
    state.iteration = revision.iteration  # its searches, sources and findings carry it
    state.revision = revision
    return revision


def _check_revisable(state: ResearchState) -> None:
    """A research may be revised once it completed with a report, and when a revision of it
    stopped unfinished; not while it runs."""
    if state.status.is_active:
        raise InvalidStateError(
            f"Research {state.id} is {state.status.value}; its report can be revised once it "
            "has completed.",
            remediation="Wait for it to complete (action='deep-research-status', wait=true), "
            "then ask again.",
        )
    if state.report is None:
        raise InvalidStateError(
            f"Research {state.id} has no report to revise (it is {state.status.value}).",
            remediation="Resume it (action='deep-research-resume') until it completes with a "
            "report, then ask again. " + _STATUS_HINT,
        )
    if state.status is not Status.COMPLETED and state.revision is None:
        raise InvalidStateError(
            f"Research {state.id} is {state.status.value}: its report is not final.",
            remediation="Resume it (action='deep-research-resume') so it completes, then ask "
            "again; or revise it once it has.",
        )


def _resolved_part(
    state: ResearchState, kind: RevisionKind, part: str | None
) -> tuple[str | None, str | None]:
    """What a deepen's ``part`` names (its kind takes one: :func:`misfit`): a sub-question's or
    gap's id, or None, and the question to research; (None, None) for the other kinds."""
    if kind is not RevisionKind.DEEPEN or part is None:
        return None, None
    named = part.strip()
    part_id, question = resolve_part(state, named)
    if not question.strip():
        raise InputError(
            f"part {named!r} names nothing of research {state.id} to deepen.",
            remediation="Give a sub-question's or gap's id, a section's heading, or a question "
            "of your own.",
            details={"field": "part"},
        )
    return part_id, question.strip()
