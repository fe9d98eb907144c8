"""``ResearchState``: everything known about one research, persisted after every unit of work."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from pydantic import Field, PrivateAttr

from foundry_mcp.context.fidelity.records import (
    ContentAllocationMetadata,
    ContentFidelity,
)
from foundry_mcp.research.models.answer import StructuredAnswer
from foundry_mcp.research.models.base import (
    STATE_SCHEMA_VERSION,
    AgentRole,
    EventListener,
    Phase,
    Status,
    SubQueryStatus,
    _Model,
    new_research_id,
    utcnow,
)
from foundry_mcp.research.models.conversation import Clarification, FollowUp, PlanReview
from foundry_mcp.research.models.modes import (
    CoverageAssessment,
    Hypothesis,
    ModeDecision,
    ResearchMode,
    SubQuestion,
    SubQuestionSynthesis,
)
from foundry_mcp.research.models.options import ResearchLimits, ResearchOptions
from foundry_mcp.research.models.records import (
    AgentDecision,
    ClaimCheck,
    Contradiction,
    FiledFinding,
    Finding,
    Gap,
    LLMUsage,
    PageRecord,
    ReportMetadata,
    Source,
    SubQuery,
)
from foundry_mcp.research.models.versions import ReportVersion, Revision


class ResearchState(_Model):
    """Everything known about one research; persisted after every unit of work."""

    schema_version: int = STATE_SCHEMA_VERSION
    id: str = Field(default_factory=new_research_id)
    # Whose it is on a team server (the name of the token that started it); None: the local
    # user's. Older states have none and need no migration.
    principal: str | None = None
    query: str
    system_prompt: str | None = None
    status: Status = Status.QUEUED
    phase: Phase = Phase.PLANNING
    iteration: int = 1
    limits: ResearchLimits = Field(default_factory=ResearchLimits)
    options: ResearchOptions = Field(default_factory=ResearchOptions)
    llm_provider: str
    llm_model: str
    search_providers: list[str] = Field(default_factory=list)

    # The mode it runs in (auto until planning decides) and, for a sub-question's researcher,
    # the sub-question it answers (its state is stored beside the research's, by that id).
    mode: ResearchMode = ResearchMode.AUTO
    mode_decision: ModeDecision | None = None
    branch: str | None = None
    parent_query: str | None = None  # a sub-question's researcher: the question it helps answer
    decomposition_strategy: str | None = None
    sub_questions: list[SubQuestion] = Field(default_factory=list)
    hypotheses: list[Hypothesis] = Field(default_factory=list)
    coverage: list[CoverageAssessment] = Field(default_factory=list)

    # Talking with the user: what was asked before researching, the plan's review
    # (review_plan), and the follow-up questions asked once it completed.
    clarification: Clarification | None = None
    plan_review: PlanReview | None = None
    follow_ups: list[FollowUp] = Field(default_factory=list)

    research_brief: str | None = None
    answer: SubQuestionSynthesis | None = None  # a sub-question researcher's structured answer
    sub_queries: list[SubQuery] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    # What of each source's page the analyst has read, by source id: research-wide (in
    # hierarchical mode the research's, shared by its researchers), so a page is read once
    # (research/workflow/reading/).
    readings: dict[str, PageRecord] = Field(default_factory=dict)
    read_by_round: dict[int, int] = Field(default_factory=dict)  # this researcher's, in tokens
    findings: list[Finding] = Field(default_factory=list)
    filed: list[FiledFinding] = Field(default_factory=list)  # for other sub-questions
    gaps: list[Gap] = Field(default_factory=list)
    contradictions: list[Contradiction] = Field(default_factory=list)
    claim_checks: list[ClaimCheck] = Field(default_factory=list)
    report: str | None = None
    report_metadata: ReportMetadata | None = None
    structured_answer: StructuredAnswer | None = None  # in the caller's output_schema, if any
    # The report's versions once it was rewritten, deepened or refreshed (the first is the
    # research's own; ``report`` is the latest's), and the revision being made (models.versions).
    versions: list[ReportVersion] = Field(default_factory=list)
    revision: Revision | None = None

    decisions: list[AgentDecision] = Field(default_factory=list)
    llm_usage: LLMUsage = Field(default_factory=LLMUsage)
    search_calls: int = 0

    # Token management: what reached the model of each item, and what was set aside.
    content_fidelity: dict[str, ContentFidelity] = Field(default_factory=dict)
    content_allocation_metadata: ContentAllocationMetadata | None = None
    dropped_content_ids: list[str] = Field(default_factory=list)
    content_archive_hashes: dict[str, str] = Field(default_factory=dict)  # item id -> sha256:...
    protected_content_ids: list[str] = Field(default_factory=list)  # restored by the user
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    error_code: str | None = None  # the FoundryError code that ended the last run
    metadata: dict[str, Any] = Field(default_factory=dict)

    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    # When it was queued for its first run, once its user had answered its clarifying
    # questions: its deadline (max_time_s) counts from here, not from created_at.
    queued_at: datetime | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None

    _listener: EventListener | None = PrivateAttr(default=None)
    # What the analyst was sent of each page in this run, by source id (one text a reading):
    # what the fact-checker matches a claim against. Not saved: after a resume, a page read
    # before it is matched whole.
    _pages_sent: dict[str, list[str]] = PrivateAttr(default_factory=dict)

    # ----------------------------------------------------------------- derived views

    def source_by_id(self) -> dict[str, Source]:
        return {source.id: source for source in self.sources}

    def citation_numbers(self) -> dict[str, int]:
        """Each cited source's number in the report's Sources list (``[n]``), in that order."""
        cited = self.report_metadata.cited_source_ids if self.report_metadata else []
        numbers: dict[str, int] = {}
        for n, source_id in enumerate(cited, start=1):
            numbers.setdefault(source_id, n)
        return numbers

    def completed_sub_queries(self) -> list[SubQuery]:
        return [sq for sq in self.sub_queries if sq.status is SubQueryStatus.COMPLETED]

    def pending_sub_queries(self) -> list[SubQuery]:
        return [sq for sq in self.sub_queries if sq.status is SubQueryStatus.PENDING]

    def unaddressed_gaps(self) -> list[Gap]:
        return [gap for gap in self.gaps if not gap.addressed]

    def elapsed_seconds(self, now: datetime | None = None) -> float:
        if self.started_at is None:
            return 0.0
        end = self.completed_at or now or utcnow()
        return max(0.0, (end - self.started_at).total_seconds())

    def pages_sent(self) -> dict[str, list[str]]:
        """What the analyst was sent of each page in this run (see ``_pages_sent``)."""
        return self._pages_sent

    def detached(self) -> ResearchState:
        """A deep copy sharing no object with this state, as the store would give it back: it
        sends its events nowhere, and knows nothing of what the analyst was sent."""
        return copy.deepcopy(self, {id(self._listener): None, id(self._pages_sent): {}})

    def attach(self, listener: EventListener | None) -> None:
        """Send this state's decisions, warnings and emitted events to ``listener``."""
        self._listener = listener

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        """Report an event (a phase started, a provider call...) to the audit trail, if any."""
        if self._listener is not None:
            self._listener(kind, data)

    def record(self, decision: AgentDecision) -> None:
        self.decisions.append(decision)
        self.emit("decision", decision.model_dump(mode="json"))

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            self.emit("warning", {"message": message})

    def record_fallback(self, agent: AgentRole, message: str) -> None:
        """Note that an agent fell back to its safe default, as a warning and a decision."""
        self.warn(message)
        self.record(AgentDecision(agent=agent, action="fallback", rationale=message))
