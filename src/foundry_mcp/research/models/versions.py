"""A report that lives: its versions, and the revision that makes the next one.

A completed research's report can be made again without researching again:

* **rewrite**: written again from the saved findings and sources, in another form, for another
  audience, length or language, with corrections; no search;
* **deepen**: one part (a sub-question, a gap, a section, or a question of the caller's)
  searched and read further, its findings added, the report written again;
* **refresh**: the research's searches asked again for what is new, its cited pages read again
  for what changed, and the report written again with a section on what changed.

Each makes a new :class:`ReportVersion`, kept with the research (``ResearchState.versions``);
the research's ``report`` is always the latest version's. While one is made, the research holds
its :class:`Revision` (``ResearchState.revision``), so an interrupted revision resumes where it
stopped, like any run.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field, PrivateAttr, field_validator

from foundry_mcp.research.models.base import _Model, new_id, utcnow
from foundry_mcp.research.models.records import Finding, ReportMetadata, UsageTotals

MAX_INSTRUCTION_CHARS = 4_000
MIN_LENGTH_WORDS = 100
MAX_LENGTH_WORDS = 20_000


class RevisionKind(StrEnum):
    """What made a version of the report."""

    RESEARCH = "research"  # the research itself (its first report, or a further round's)
    REWRITE = "rewrite"
    DEEPEN = "deepen"
    REFRESH = "refresh"


class ReportForm(StrEnum):
    """The shape a rewrite gives the report."""

    REPORT = "report"  # the full report, sections by part
    BRIEF = "brief"  # one page: the answer first, the key facts, what to do
    TABLE = "table"  # a comparison table with a short lead and notes
    MEMO = "memo"  # a memo: to whom, the recommendation, the reasons


def misfit(kind: RevisionKind, *, part: str | None, max_searches: int | None) -> tuple[str, str]:
    """The first key a revision of ``kind`` cannot take as given, and why (("", "") when it
    takes them all): a deepen needs its part, only a deepen takes one, a rewrite searches
    nothing. The one statement of the rule; the request and the engine each say it their way."""
    named = bool(part and part.strip())
    if kind is RevisionKind.DEEPEN and not named:
        return "part", "is required for a deepen: the part of the report to research further"
    if kind is not RevisionKind.DEEPEN and named:
        return "part", f"applies to a deepen only, not to a {kind.value}"
    if kind is RevisionKind.REWRITE and max_searches is not None:
        return "max_searches", "applies to a deepen or a refresh: a rewrite makes no search"
    return "", ""


class RevisionStep(StrEnum):
    """Where a revision is: each step is saved before the next begins."""

    GATHERING = "gathering"  # searching (deepen, refresh) and reading pages again (refresh)
    ANALYSIS = "analysis"  # the new pages read for findings
    WRITING = "writing"  # the report written again and checked
    DONE = "done"


class WritingInstructions(_Model):
    """What the caller asks of the rewritten report; every field optional."""

    form: ReportForm = ReportForm.REPORT
    audience: str | None = None  # "the engineering team", "a CFO"
    length_words: int | None = Field(None, ge=MIN_LENGTH_WORDS, le=MAX_LENGTH_WORDS)
    language: str | None = None  # None: the research's report language
    corrections: str | None = Field(None, max_length=MAX_INSTRUCTION_CHARS)

    def is_plain(self) -> bool:
        """Whether nothing is asked beyond the research's own report."""
        return self == WritingInstructions()


class VersionCost(_Model):
    """What making a version cost: the LLM calls by phase, and the searches."""

    total: UsageTotals = Field(default_factory=UsageTotals)
    by_phase: dict[str, UsageTotals] = Field(default_factory=dict)
    search_calls: int = 0


class VersionChanges(_Model):
    """What a deepen or a refresh found that the version before did not have."""

    new_source_ids: list[str] = Field(default_factory=list)  # pages found that were not known
    changed_source_ids: list[str] = Field(default_factory=list)  # known pages whose text changed
    moved_source_ids: list[str] = Field(default_factory=list)  # known pages gone or redirected
    new_finding_ids: list[str] = Field(default_factory=list)
    # Findings of the version before that the changed pages no longer support.
    dropped_finding_ids: list[str] = Field(default_factory=list)
    # They leave the research's findings: kept here, so the version can say what no longer holds.
    dropped_findings: list[Finding] = Field(default_factory=list)
    moved_to: dict[str, str] = Field(default_factory=dict)  # a redirected page: its new address

    @property
    def nothing_new(self) -> bool:
        return not (
            self.new_source_ids
            or self.changed_source_ids
            or self.moved_source_ids
            or self.new_finding_ids
            or self.dropped_finding_ids
        )


class Revision(_Model):
    """A rewrite, deepen or refresh being made (``ResearchState.revision``)."""

    id: str = Field(default_factory=lambda: new_id("rev"))
    kind: RevisionKind
    instructions: WritingInstructions = Field(default_factory=WritingInstructions)
    # deepen: the part as the caller named it, and what it resolved to (a sub-question's id,
    # a gap's id, or None for a question of the caller's own), with the question researched.
    part: str | None = None
    part_id: str | None = None
    part_question: str | None = None
    max_searches: int | None = None  # deepen, refresh: the searches it may make
    since: datetime | None = None  # refresh: what is new is what came after this
    step: RevisionStep = RevisionStep.WRITING
    iteration: int = 1  # the iteration its searches, sources and findings carry
    base_version: int = 1  # the version it revises
    # The research's usage when it began: its cost is what was added since.
    usage_before: dict[str, UsageTotals] = Field(default_factory=dict)
    search_calls_before: int = 0
    finding_ids_before: list[str] = Field(default_factory=list)
    changes: VersionChanges = Field(default_factory=VersionChanges)
    requested_at: datetime = Field(default_factory=utcnow)
    # Refresh: the text a changed page had, by source id, from its gathering to its analysis
    # (not saved: a resumed analysis reads the changed pages whole).
    _earlier_texts: dict[str, str] = PrivateAttr(default_factory=dict)

    @field_validator("part", "part_question", mode="before")
    @classmethod
    def _short(cls, value: object) -> object:
        return value.strip()[:MAX_INSTRUCTION_CHARS] if isinstance(value, str) else value

    @property
    def earlier_texts(self) -> dict[str, str]:
        """Refresh: the text each changed page had before (in memory only, see above)."""
        return self._earlier_texts


class ReportVersion(_Model):
    """One version of a research's report, with what made it and what it cost."""

    number: int  # 1, 2, ...: the first is the research's own report
    kind: RevisionKind = RevisionKind.RESEARCH
    instructions: WritingInstructions | None = None
    part: str | None = None  # deepen: the part as named
    report: str
    report_metadata: ReportMetadata | None = None
    finding_ids: list[str] = Field(default_factory=list)  # the evidence base it was written from
    changes: VersionChanges | None = None  # deepen, refresh
    cost: VersionCost = Field(default_factory=VersionCost)
    created_at: datetime = Field(default_factory=utcnow)

    @property
    def cited_source_ids(self) -> list[str]:
        return list(self.report_metadata.cited_source_ids) if self.report_metadata else []
