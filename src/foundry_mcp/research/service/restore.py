"""Bringing an archived or dropped source back into a research.

``restore_content(state, item_id, archive)`` puts the source's original text back (read from
the archive by its hash, which is checked, when the state no longer holds it), marks it not yet
analysed and *protected* (allocated first, never below a headline, read whole whatever the
reading budget), and takes it off the
dropped list. When the research stopped after its analysis in the current iteration, its phase
goes back to analysis, so that resuming it analyses the restored source and writes the report
again. A completed research analyses it in the next iteration of a continued run.
"""

from __future__ import annotations

from typing import Any

from foundry_mcp.context.archive import ArchiveError, ContentArchive
from foundry_mcp.errors import InputError, InvalidStateError
from foundry_mcp.research.models import Phase, ResearchState, Status


def restore_content(
    state: ResearchState, item_id: str, archive: ContentArchive | None
) -> dict[str, Any]:
    """Restore source ``item_id`` of ``state`` (which must not be running); see the module."""
    if state.status.is_active:
        raise InvalidStateError(
            f"Research {state.id} is {state.status.value}; restore content once it has stopped.",
            remediation="Cancel it or wait for it to finish, then restore and resume.",
        )
    source = state.source_by_id().get(item_id)
    if source is None:
        raise InputError(
            f"Research {state.id} has no source {item_id!r}.",
            remediation="Use an id listed in the fidelity block's dropped_ids or content_fidelity.",
            details={"field": "item_id"},
        )
    digest = state.content_archive_hashes.get(item_id)
    restored_from = "state"
    if not source.content:
        if digest is None or archive is None:
            raise ArchiveError(
                f"The original of {item_id} is neither in the research nor in an archive.",
                remediation="Enable content_archive_enabled to keep the originals of dropped "
                "content; this one cannot be restored.",
            )
        record = archive.read(digest)
        source.content = record.content
        restored_from = "archive"
    source.analyzed = False
    state.readings.pop(item_id, None)  # its whole text is read again, not only what was left
    if item_id not in state.protected_content_ids:
        state.protected_content_ids.append(item_id)
    if item_id in state.dropped_content_ids:
        state.dropped_content_ids.remove(item_id)
    reopened = False
    planned_next = any(sq.iteration == state.iteration + 1 for sq in state.sub_queries)
    past_analysis = state.phase in (Phase.SYNTHESIS, Phase.REFINEMENT)
    if state.status is not Status.COMPLETED and past_analysis and not planned_next:
        state.phase = Phase.ANALYSIS
        reopened = True
    state.warn(f"Source {item_id} was restored (from the {restored_from}) and will be analysed.")
    return {
        "research_id": state.id,
        "item_id": item_id,
        "restored_from": restored_from,
        "content_hash": digest,
        "phase": state.phase.value,
        "reopened_analysis": reopened,
        "next_action": (
            f"Resume it: action='deep-research-resume', research_id='{state.id}'"
            + (
                " with max_iterations above the current iteration"
                if state.status is Status.COMPLETED
                else ""
            )
            + "."
        ),
    }
