"""The published shapes of a report that lives: ``deep-research-revise`` (a revision started)
and ``deep-research-versions`` (the versions, what made each and its cost; a delta)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from foundry_mcp.server.results.status import Result, StatusName, Timestamp, UsageTotals

KindName = Literal["research", "rewrite", "deepen", "refresh"]


class ReviseResult(Result):
    """``deep-research-revise``: the revision is queued and runs in the background."""

    research_id: str
    revision_id: str
    kind: Literal["rewrite", "deepen", "refresh"]
    status: StatusName
    version: int = Field(description="The version it will make.")
    base_version: int = Field(description="The version it revises.")
    part: str | None = Field(description="deepen: the question researched further.")
    max_searches: int | None
    plan: str = Field(description="What it will do, in a sentence.")
    next_action: str


class VersionCost(Result):
    total: UsageTotals
    by_phase: dict[str, UsageTotals]
    search_calls: int


class VersionChangeCounts(Result):
    new_sources: int
    changed_sources: int = Field(description="Known pages whose text changed.")
    moved_sources: int = Field(description="Known pages gone or redirected.")
    new_findings: int
    dropped_findings: int = Field(description="Findings the changed pages no longer support.")


class VersionEntry(Result):
    number: int
    kind: KindName = Field(description="What made it; research: the research's own report.")
    latest: bool
    created_at: Timestamp
    instructions: dict[str, str | int] | None = Field(
        description="rewrite: form, audience, length_words, language, corrections as asked."
    )
    part: str | None = Field(description="deepen: the part, as named.")
    words: int
    sections: int | None
    cited_sources: int
    findings: int = Field(description="The findings it was written from.")
    changes: VersionChangeCounts | None = Field(description="deepen, refresh: what was new.")
    changes_summary: str | None
    cost: VersionCost = Field(description="What making it cost, by phase.")


class RevisionInProgress(Result):
    revision_id: str
    kind: Literal["rewrite", "deepen", "refresh"]
    step: Literal["gathering", "analysis", "writing", "done"]
    base_version: int
    part: str | None
    requested_at: Timestamp


class DeltaSource(Result):
    number: int = Field(description="Its [n] in the version that cites it.")
    source_id: str
    title: str | None
    url: str | None


class DeltaFinding(Result):
    finding_id: str
    content: str
    confidence: str
    source_ids: list[str]


class DeltaSide(Result):
    sections: list[str] = Field(description="Headings of sections the other has not.")
    sources: list[DeltaSource] = Field(description="Cited here, not there.")
    findings: list[DeltaFinding] = Field(description="Written from here, not there.")


class ChangedSection(Result):
    heading: str
    words_before: int
    words_after: int


class RecordedChanges(Result):
    version: int
    kind: KindName
    new_source_ids: list[str]
    changed_source_ids: list[str]
    moved_source_ids: list[str]
    new_finding_ids: list[str]
    dropped_finding_ids: list[str]


class VersionDelta(Result):
    version: int
    compare_to: int
    added: DeltaSide = Field(description="What version has that compare_to has not.")
    removed: DeltaSide = Field(description="What compare_to has that version has not.")
    changed_sections: list[ChangedSection] = Field(description="In both, their text differs.")
    changes: list[RecordedChanges] = Field(
        description="What the deepens and refreshes between the two found."
    )
    summary: str


class VersionsResult(Result):
    """``deep-research-versions``: every version of the report; with version, a delta."""

    research_id: str
    status: StatusName
    latest: int
    versions: list[VersionEntry]
    revision: RevisionInProgress | None = Field(description="A revision being made, if any.")
    delta: VersionDelta | None = Field(None, description="With version (and compare_to).")
