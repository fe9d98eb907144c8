"""The report's versions: the first (the research's own), each revision's, and their cost.

A version's cost is what the research's usage grew by while it was made: the usage is
snapshotted when a revision begins (:func:`usage_snapshot`) and subtracted when its version is
added. The first version costs the whole research up to then, so the versions' costs add up to
the research's usage.
"""

from __future__ import annotations

from foundry_mcp.research.models import (
    ReportVersion,
    ResearchState,
    Revision,
    RevisionKind,
    UsageTotals,
    VersionChanges,
    VersionCost,
    WritingInstructions,
)

TOTAL = "total"  # the key of the whole usage in a snapshot, beside the phases'


def usage_snapshot(state: ResearchState) -> dict[str, UsageTotals]:
    """The research's LLM usage now: by phase, and the whole under ``"total"``."""
    usage = state.llm_usage
    snapshot = {phase: totals.model_copy() for phase, totals in usage.by_phase.items()}
    snapshot[TOTAL] = usage.total.model_copy()
    return snapshot


def minus(now: UsageTotals, before: UsageTotals | None) -> UsageTotals:
    """``now`` less ``before``, field by field (never below zero)."""
    if before is None:
        return now.model_copy()
    return UsageTotals(
        input_tokens=max(0, now.input_tokens - before.input_tokens),
        output_tokens=max(0, now.output_tokens - before.output_tokens),
        calls=max(0, now.calls - before.calls),
        cost_usd=max(0.0, now.cost_usd - before.cost_usd),
        unpriced_calls=max(0, now.unpriced_calls - before.unpriced_calls),
    )


def cost_since(
    state: ResearchState, before: dict[str, UsageTotals], search_calls_before: int
) -> VersionCost:
    """What the research spent since ``before`` (a :func:`usage_snapshot`): the phases that
    made a call, the whole, and the searches."""
    by_phase = {
        phase: spent
        for phase, totals in state.llm_usage.by_phase.items()
        if (spent := minus(totals, before.get(phase))).calls
    }
    return VersionCost(
        total=minus(state.llm_usage.total, before.get(TOTAL)),
        by_phase=by_phase,
        search_calls=max(0, state.search_calls - search_calls_before),
    )


def spent_on_versions(state: ResearchState) -> tuple[dict[str, UsageTotals], int]:
    """The usage and searches the versions so far account for (their costs added up), as a
    snapshot: what the research spent after its last version is its usage less this."""
    usage: dict[str, UsageTotals] = {TOTAL: UsageTotals()}
    searches = 0
    for version in state.versions:
        _add(usage[TOTAL], version.cost.total)
        for phase, totals in version.cost.by_phase.items():
            _add(usage.setdefault(phase, UsageTotals()), totals)
        searches += version.cost.search_calls
    return usage, searches


def add_version(
    state: ResearchState,
    kind: RevisionKind,
    cost: VersionCost,
    *,
    instructions: WritingInstructions | None = None,
    part: str | None = None,
    changes: VersionChanges | None = None,
) -> ReportVersion:
    """The research's report as its next version (numbered after the last), appended."""
    version = _as_version(state, kind, cost, instructions=instructions, part=part, changes=changes)
    return _appended(state, version)


def research_version(state: ResearchState) -> ReportVersion:
    """The research's report as version 1, costing all the research spent (not appended: a
    research never revised has it implicitly, :func:`first_version` keeps it)."""
    version = _as_version(state, RevisionKind.RESEARCH, cost_since(state, {}, 0), number=1)
    # The report is as old as the run that wrote it, not the request that keeps it.
    version.created_at = state.completed_at or state.updated_at
    return version


def _as_version(
    state: ResearchState,
    kind: RevisionKind,
    cost: VersionCost,
    *,
    number: int | None = None,
    instructions: WritingInstructions | None = None,
    part: str | None = None,
    changes: VersionChanges | None = None,
) -> ReportVersion:
    return ReportVersion(
        number=number or (state.versions[-1].number + 1 if state.versions else 1),
        kind=kind,
        instructions=instructions,
        part=part,
        report=state.report or "",
        report_metadata=state.report_metadata.model_copy(deep=True)
        if state.report_metadata
        else None,
        finding_ids=[f.id for f in state.findings],
        changes=changes,
        cost=cost,
    )


def _appended(state: ResearchState, version: ReportVersion) -> ReportVersion:
    state.versions.append(version)
    state.emit(
        "version_added",
        {
            "number": version.number,
            "kind": version.kind.value,
            "llm_calls": version.cost.total.calls,
        },
    )
    return version


def first_version(state: ResearchState) -> ReportVersion:
    """Version 1 kept: the research's report as it stands (:func:`research_version`)."""
    return _appended(state, research_version(state))


def revision_version(state: ResearchState, revision: Revision) -> ReportVersion:
    """The version a revision made: the report now, costing what was spent since it began."""
    return add_version(
        state,
        revision.kind,
        cost_since(state, revision.usage_before, revision.search_calls_before),
        instructions=revision.instructions,
        part=revision.part,
        changes=None if revision.kind is RevisionKind.REWRITE else revision.changes,
    )


def record_research_version(state: ResearchState) -> ReportVersion | None:
    """After a run of the research itself (a resume with more rounds) completes: its report
    as a new version, when the research already has versions and the report differs from the
    last one's; the version costs what was spent since the versions before it."""
    if state.revision is not None or not state.versions or state.report is None:
        return None
    if state.report == state.versions[-1].report:
        return None
    before, searches = spent_on_versions(state)
    return add_version(state, RevisionKind.RESEARCH, cost_since(state, before, searches))


def _add(total: UsageTotals, more: UsageTotals) -> None:
    total.input_tokens += more.input_tokens
    total.output_tokens += more.output_tokens
    total.calls += more.calls
    total.cost_usd += more.cost_usd
    total.unpriced_calls += more.unpriced_calls
