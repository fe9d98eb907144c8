"""A research's report versions, as the caller reads them: the list with what made each and what
it cost (``deep-research-versions``), one version picked for the report, its resource and its
export, and the delta between two (:mod:`.delta`).

A research never revised has one version, implicit: its report, costing the whole research
(:func:`versions_of`). Once revised, ``ResearchState.versions`` holds them all, the first
included, and the research's report is the latest's.
"""

from __future__ import annotations

from typing import Any

from foundry_mcp.errors import InputError
from foundry_mcp.research.models import (
    ReportVersion,
    ResearchState,
    VersionChanges,
    VersionCost,
)
from foundry_mcp.research.revision.versions import research_version
from foundry_mcp.research.service.completed.delta import version_delta
from foundry_mcp.research.service.inputs import check_range
from foundry_mcp.research.service.payloads.status import usage_totals

MAX_VERSION = 1_000_000


def versions_of(state: ResearchState) -> list[ReportVersion]:
    """Every version of the research's report, oldest first (none before it has a report)."""
    if state.versions:
        return list(state.versions)
    if state.report is None:
        return []
    return [research_version(state)]


def version_of(state: ResearchState, number: Any, field: str = "version") -> ReportVersion:
    """Version ``number`` of the research's report; ``InputError`` listing those there are."""
    number = check_range(field, number, 1, MAX_VERSION)
    versions = versions_of(state)
    for version in versions:
        if version.number == number:
            return version
    there = [str(v.number) for v in versions]
    listed = ", ".join(there) if there else "none yet (it has no report)"
    raise InputError(
        f"Research {state.id} has no version {number} of its report; its versions: {listed}.",
        remediation=f"Pass {field} one of {', '.join(there)}, or leave it out for the latest "
        "(action='deep-research-versions' lists them)."
        if there
        else "Read its status (action='deep-research-status'): a report comes once it completes.",
        details={"field": field, "versions": [v.number for v in versions]},
    )


def at_version(state: ResearchState, number: Any) -> tuple[ResearchState, int]:
    """The research with version ``number``'s report (None: as it is, the latest), and that
    version's number. An earlier version's report has no claim checks of its own kept: its
    evidence is empty."""
    if number is None:
        versions = versions_of(state)
        return state, versions[-1].number if versions else 1
    version = version_of(state, number)
    if version.report == state.report:
        return state, version.number
    shown = state.model_copy(
        update={
            "report": version.report,
            "report_metadata": version.report_metadata,
            "claim_checks": [],
        }
    )
    return shown, version.number


def versions_payload(
    state: ResearchState, version: Any = None, compare_to: Any = None
) -> dict[str, Any]:
    """What ``deep-research-versions`` returns (``VersionsResult``): every version, and with
    ``version`` the delta against ``compare_to`` (default: the version before it)."""
    versions = versions_of(state)
    if not versions:
        version_of(state, 1)  # raises: no report, no version
    latest = versions[-1].number
    payload: dict[str, Any] = {
        "research_id": state.id,
        "status": state.status.value,
        "latest": latest,
        "versions": [version_entry(v, latest) for v in versions],
        "revision": revision_entry(state),
    }
    if version is None and compare_to is not None:
        raise InputError(
            "compare_to needs version: the version compared with it.",
            remediation="Pass version too: compare_to is the version it is compared with.",
            details={"field": "version"},
        )
    if version is not None:
        shown = version_of(state, version)
        if compare_to is None and shown.number == versions[0].number:
            raise InputError(
                f"Version {shown.number} is the first: there is no version before it to compare.",
                remediation=f"Pass compare_to with another version (the latest is {latest}).",
                details={"field": "compare_to"},
            )
        if compare_to is None:
            base = versions[[v.number for v in versions].index(shown.number) - 1]
        else:
            base = version_of(state, compare_to, "compare_to")
        payload["delta"] = version_delta(state, shown, base)
    return payload


def version_entry(version: ReportVersion, latest: int) -> dict[str, Any]:
    """One version as listed: what made it, how long, what it cites, what it cost."""
    metadata = version.report_metadata
    instructions = (
        version.instructions.model_dump(mode="json", exclude_none=True)
        if version.instructions is not None
        else None
    )
    return {
        "number": version.number,
        "kind": version.kind.value,
        "latest": version.number == latest,
        "created_at": version.created_at.isoformat(),
        "instructions": instructions,
        "part": version.part,
        "words": (metadata.word_count if metadata and metadata.word_count else None)
        or len(version.report.split()),
        "sections": len(metadata.sections) if metadata else None,
        "cited_sources": len(version.cited_source_ids),
        "findings": len(version.finding_ids),
        "changes": changes_counts(version.changes),
        "changes_summary": changes_summary(version),
        "cost": cost_entry(version.cost),
    }


def cost_entry(cost: VersionCost) -> dict[str, Any]:
    """A version's cost: the LLM calls in total and by phase, and the searches."""
    return {
        "total": usage_totals(cost.total),
        "by_phase": {phase: usage_totals(t) for phase, t in cost.by_phase.items()},
        "search_calls": cost.search_calls,
    }


def changes_counts(changes: VersionChanges | None) -> dict[str, int] | None:
    if changes is None:
        return None
    return {
        "new_sources": len(changes.new_source_ids),
        "changed_sources": len(changes.changed_source_ids),
        "moved_sources": len(changes.moved_source_ids),
        "new_findings": len(changes.new_finding_ids),
        "dropped_findings": len(changes.dropped_finding_ids),
    }


def changes_summary(version: ReportVersion) -> str | None:
    """What a deepen or a refresh found, in a sentence (None for the others)."""
    counts = changes_counts(version.changes)
    if counts is None:
        return None
    said = [
        _count(counts["new_sources"], "new source"),
        _count(counts["changed_sources"], "changed page"),
        _count(counts["moved_sources"], "page gone or moved", "pages gone or moved"),
        _count(counts["new_findings"], "new finding"),
        _count(
            counts["dropped_findings"],
            "finding no longer supported",
            "findings no longer supported",
        ),
    ]
    found = [part for part in said if part]
    return "; ".join(found) if found else "nothing new found"


def _count(n: int, one: str, many: str | None = None) -> str:
    if n == 0:
        return ""
    return f"1 {one}" if n == 1 else f"{n:,} {many or one + 's'}"


def revision_entry(state: ResearchState) -> dict[str, Any] | None:
    """The revision being made (or stopped before its version was made), if any."""
    revision = state.revision
    if revision is None:
        return None
    return {
        "revision_id": revision.id,
        "kind": revision.kind.value,
        "step": revision.step.value,
        "base_version": revision.base_version,
        "part": revision.part_question or revision.part,
        "requested_at": revision.requested_at.isoformat(),
    }
