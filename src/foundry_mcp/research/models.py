"""The vocabulary of a deep research: state, handoffs and records.

Every object that is persisted, handed from one agent to the next or returned to a user is a
pydantic model defined here. Names follow the design seed (``002``) where it names them.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from foundry_mcp.context.levels import ContentLevel

RESEARCH_ID_PATTERN = re.compile(r"^deepres-[0-9a-f]{12}$")

STATE_SCHEMA_VERSION = 3


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def new_research_id() -> str:
    """A fresh research id: ``deepres-`` followed by 12 hex digits."""
    return f"deepres-{secrets.token_hex(6)}"


def new_id(prefix: str) -> str:
    """A short random id such as ``src-1a2b3c4d``."""
    return f"{prefix}-{secrets.token_hex(4)}"


EventListener = Callable[[str, dict[str, Any]], None]


class Phase(StrEnum):
    """The five working phases of the supervisor's state machine."""

    PLANNING = "planning"
    GATHERING = "gathering"
    ANALYSIS = "analysis"
    SYNTHESIS = "synthesis"
    REFINEMENT = "refinement"


PHASE_ORDER: tuple[Phase, ...] = (
    Phase.PLANNING,
    Phase.GATHERING,
    Phase.ANALYSIS,
    Phase.SYNTHESIS,
    Phase.REFINEMENT,
)


class Status(StrEnum):
    """The one canonical lifecycle status of a research."""

    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"

    @property
    def is_active(self) -> bool:
        """True while some process is (or should be) working on the research."""
        return self in (Status.QUEUED, Status.RUNNING, Status.CANCELLING)

    @property
    def is_resumable(self) -> bool:
        """True for the unfinished end states a resume can continue from."""
        return self in (Status.CANCELLED, Status.FAILED, Status.TIMED_OUT, Status.INTERRUPTED)


class AgentRole(StrEnum):
    """The supervisor and its five specialists."""

    SUPERVISOR = "supervisor"
    PLANNER = "planner"
    GATHERER = "gatherer"
    ANALYZER = "analyzer"
    SYNTHESIZER = "synthesizer"
    REFINER = "refiner"


PHASE_TO_AGENT: dict[Phase, AgentRole] = {
    Phase.PLANNING: AgentRole.PLANNER,
    Phase.GATHERING: AgentRole.GATHERER,
    Phase.ANALYSIS: AgentRole.ANALYZER,
    Phase.SYNTHESIS: AgentRole.SYNTHESIZER,
    Phase.REFINEMENT: AgentRole.REFINER,
}


class Confidence(StrEnum):
    """How strongly the sources support a finding."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CONFIRMED = "confirmed"
    SPECULATION = "speculation"


class SourceQuality(StrEnum):
    """The analyzer's judgement of a source's reliability."""

    UNKNOWN = "unknown"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class SubQueryStatus(StrEnum):
    """Where a sub-query is in the gathering phase."""

    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"


class Severity(StrEnum):
    """The refiner's judgement of how much a gap matters."""

    CRITICAL = "critical"
    MODERATE = "moderate"
    MINOR = "minor"


class Verdict(StrEnum):
    """What the cited sources say about one claim of the report."""

    SUPPORTED = "supported"
    PARTIAL = "partial"
    UNSUPPORTED = "unsupported"
    UNVERIFIED = "unverified"  # the judge could not be asked or its answer was unreadable


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_assignment=False)


# --------------------------------------------------------------------------- state records


class SubQuery(_Model):
    """A focused search query the planner (or refiner) derived from the question."""

    id: str = Field(default_factory=lambda: new_id("sq"))
    query: str
    rationale: str = ""
    priority: int = 1
    iteration: int = 1
    gap_id: str | None = None
    status: SubQueryStatus = SubQueryStatus.PENDING
    error: str | None = None
    source_ids: list[str] = Field(default_factory=list)
    providers: list[str] = Field(default_factory=list)


class Source(_Model):
    """A document found by a search provider, with the text read from it."""

    id: str = Field(default_factory=lambda: new_id("src"))
    sub_query_id: str | None = None
    title: str
    url: str | None = None
    snippet: str = ""
    content: str | None = None
    quality: SourceQuality = SourceQuality.UNKNOWN
    provider: str = ""
    score: float | None = None
    iteration: int = 1
    analyzed: bool = False


class Finding(_Model):
    """A claim extracted from sources, with the ids of the sources that support it."""

    id: str = Field(default_factory=lambda: new_id("fnd"))
    content: str
    confidence: Confidence = Confidence.MEDIUM
    source_ids: list[str] = Field(default_factory=list)
    category: str | None = None
    iteration: int = 1


class Gap(_Model):
    """A question the research has not answered yet."""

    id: str = Field(default_factory=lambda: new_id("gap"))
    description: str
    suggested_queries: list[str] = Field(default_factory=list)
    priority: int = 1
    addressed: bool = False
    severity: Severity | None = None
    iteration: int = 1


class Contradiction(_Model):
    """Sources that disagree about something that matters to the question."""

    id: str = Field(default_factory=lambda: new_id("con"))
    description: str
    source_ids: list[str] = Field(default_factory=list)
    resolution: str | None = None
    iteration: int = 1


class ClaimCheck(_Model):
    """The verification verdict on one cited sentence of the report."""

    sentence: str
    source_ids: list[str] = Field(default_factory=list)
    verdict: Verdict = Verdict.UNVERIFIED
    reason: str = ""


class VerificationSummary(_Model):
    """Counts of the citation verification pass over the report."""

    claims_checked: int = 0
    supported: int = 0
    partial: int = 0
    unsupported: int = 0
    unverified: int = 0
    uncited_sentences: int = 0
    removed: int = 0
    llm_calls: int = 0


class AgentDecision(_Model):
    """One recorded step of the supervisor: a dispatch, an evaluation or an iteration decision."""

    agent: AgentRole
    action: str
    rationale: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, Any] | None = None
    timestamp: datetime = Field(default_factory=utcnow)


MAX_LLM_CALL_RECORDS = 200  # per research; older records are dropped, totals are kept


class LLMCallRecord(_Model):
    """One LLM call: who answered, for what, what it read and wrote, and its estimated cost."""

    provider: str
    model: str
    phase: str
    purpose: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None  # None: no price known for the model
    at: datetime = Field(default_factory=utcnow)


class UsageTotals(_Model):
    """Tokens, calls and estimated cost summed over LLM calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost_usd: float = 0.0  # of the calls whose price is known
    unpriced_calls: int = 0

    def add(self, record: LLMCallRecord) -> None:
        self.input_tokens += record.input_tokens
        self.output_tokens += record.output_tokens
        self.calls += 1
        if record.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += record.cost_usd


class LLMUsage(_Model):
    """Every LLM call of a research (the most recent ones) and totals by phase and provider."""

    calls: list[LLMCallRecord] = Field(default_factory=list)
    dropped_calls: int = 0
    total: UsageTotals = Field(default_factory=UsageTotals)
    by_phase: dict[str, UsageTotals] = Field(default_factory=dict)
    by_provider: dict[str, UsageTotals] = Field(default_factory=dict)
    by_model: dict[str, UsageTotals] = Field(default_factory=dict)  # "provider:model"
    max_cost_usd: float | None = None  # the ceiling of the last run
    cost_ceiling_reached: bool = False

    @property
    def spent_usd(self) -> float:
        return self.total.cost_usd

    def add(self, record: LLMCallRecord) -> None:
        self.calls.append(record)
        if len(self.calls) > MAX_LLM_CALL_RECORDS:
            excess = len(self.calls) - MAX_LLM_CALL_RECORDS
            del self.calls[:excess]
            self.dropped_calls += excess
        self.total.add(record)
        self.by_phase.setdefault(record.phase, UsageTotals()).add(record)
        self.by_provider.setdefault(record.provider, UsageTotals()).add(record)
        self.by_model.setdefault(f"{record.provider}:{record.model}", UsageTotals()).add(record)


class ReportMetadata(_Model):
    """Facts about the final report (the synthesizer's output schema)."""

    sections: list[str] = Field(default_factory=list)
    word_count: int = 0
    citations_count: int = 0
    sources_cited: int = 0
    sources_examined: int = 0
    confidence_summary: dict[str, int] = Field(default_factory=dict)
    dropped_citations: int = 0
    cited_source_ids: list[str] = Field(default_factory=list)
    verification: VerificationSummary | None = None


class ResearchLimits(_Model):
    """The bounds one research runs within (resolved from request and configuration)."""

    max_iterations: int = 3
    max_sub_queries: int = 5
    max_sources_per_query: int = 5
    max_concurrent: int = 3
    task_timeout: float = 600.0


PHASE_BUDGET_FRACTIONS: dict[str, float] = {
    "planning": 0.10,
    "analysis": 0.40,
    "synthesis": 0.35,
    "refinement": 0.15,
}


class TokenBudgetOptions(_Model):
    """Token management of one research (``[research]`` token keys, resolved when it starts).

    ``context_window`` and ``max_output`` are the research model's limits after
    ``model_context_overrides``; ``phase_fractions`` split one call's available input between
    the phases (see ``specs/token-management.md``).
    """

    enabled: bool = True
    safety_margin: float = 0.15
    runtime_overhead: int = 60_000
    client_window: int = 200_000
    context_window: int | None = None  # None: looked up from the model name at run time
    max_output: int | None = None
    limits_source: str = "default"
    model_context_overrides: dict[str, int] = Field(default_factory=dict)  # for other models
    phase_fractions: dict[str, float] = Field(default_factory=lambda: dict(PHASE_BUDGET_FRACTIONS))
    summarization_providers: list[str] = Field(default_factory=list)  # empty: the research's LLM
    summarization_timeout: float = 60.0
    summarization_cache: bool = True
    allow_content_dropping: bool = False
    archive_enabled: bool = False
    archive_dir: str | None = None
    archive_ttl_hours: float = 168.0
    cache_dir: str | None = None  # where summaries are cached (the research_dir)


class ResearchOptions(_Model):
    """Workflow switches of one research, resolved from configuration when it starts."""

    verify_citations: bool = True
    max_verified_claims: int = 60
    gate_retries: int = 1
    enable_reflection: bool = False
    phase_timeouts: dict[str, float] = Field(default_factory=dict)  # seconds, by phase value
    token_budget: TokenBudgetOptions = Field(default_factory=TokenBudgetOptions)


class ContentFidelity(_Model):
    """How much of one content item (a source, a finding) reached the model, in tokens."""

    item_type: str = "source"
    original_tokens: int = 0
    current_tokens: int = 0
    current_level: ContentLevel = ContentLevel.FULL
    compression_ratio: float = 1.0  # current_tokens / original_tokens, at most 1
    content_hash: str | None = None  # sha256 of the original: its count is reused on resume
    method: str = "full"  # full | selection | summary | truncation | dropped
    summarizer: str | None = None  # the provider spec that wrote a summary
    phase: str = "analysis"
    iteration: int = 1
    archived: bool = False


class PhaseAllocation(_Model):
    """The latest allocation of one phase's content budget."""

    iteration: int = 1
    tokens_used: int = 0
    tokens_available: int = 0
    utilization: float = 0.0
    items: int = 0
    items_dropped: int = 0
    items_summarized: int = 0
    items_degraded: int = 0
    fidelity: float = 1.0


class ContentAllocationMetadata(_Model):
    """Research-wide token accounting: fidelity over every item and the phases' budgets."""

    fidelity: float = 1.0
    tokens_used: int = 0
    tokens_available: int = 0
    utilization: float = 0.0
    items_dropped: int = 0
    items_summarized: int = 0
    items_degraded: int = 0
    items_total: int = 0
    phases: dict[str, PhaseAllocation] = Field(default_factory=dict)
    fidelity_by_iteration: dict[str, float] = Field(default_factory=dict)


class ResearchState(_Model):
    """Everything known about one research; persisted after every unit of work."""

    schema_version: int = STATE_SCHEMA_VERSION
    id: str = Field(default_factory=new_research_id)
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

    research_brief: str | None = None
    sub_queries: list[SubQuery] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)
    contradictions: list[Contradiction] = Field(default_factory=list)
    claim_checks: list[ClaimCheck] = Field(default_factory=list)
    report: str | None = None
    report_metadata: ReportMetadata | None = None

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
    started_at: datetime | None = None
    completed_at: datetime | None = None

    _listener: EventListener | None = PrivateAttr(default=None)

    # ----------------------------------------------------------------- derived views

    def source_by_id(self) -> dict[str, Source]:
        return {source.id: source for source in self.sources}

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


# --------------------------------------------------------------------------- agent handoffs


class PlannedSubQuery(_Model):
    query: str
    rationale: str = ""
    priority: int = 1


class PlannerOutput(_Model):
    """The planner's handoff: a research brief and the sub-queries to search."""

    research_brief: str = ""
    sub_queries: list[PlannedSubQuery] = Field(default_factory=list)


class GatheringStats(_Model):
    queries_executed: int = 0
    queries_failed: int = 0
    sources_collected: int = 0
    duplicates_skipped: int = 0


class GathererOutput(_Model):
    """The gatherer's handoff: the new sources and how the searches went."""

    sources: list[Source] = Field(default_factory=list)
    stats: GatheringStats = Field(default_factory=GatheringStats)


class ExtractedFinding(_Model):
    content: str
    confidence: Confidence = Confidence.MEDIUM
    source_ids: list[str] = Field(default_factory=list)
    category: str | None = None


class IdentifiedGap(_Model):
    description: str
    suggested_queries: list[str] = Field(default_factory=list)
    priority: int = 1


class IdentifiedContradiction(_Model):
    description: str
    source_ids: list[str] = Field(default_factory=list)


class QualityUpdate(_Model):
    source_id: str
    quality: SourceQuality


class AnalyzerOutput(_Model):
    """The analyzer's handoff: findings, gaps and source-quality judgements."""

    findings: list[ExtractedFinding] = Field(default_factory=list)
    gaps: list[IdentifiedGap] = Field(default_factory=list)
    quality_updates: list[QualityUpdate] = Field(default_factory=list)
    contradictions: list[IdentifiedContradiction] = Field(default_factory=list)


class SynthesizerOutput(_Model):
    """The synthesizer's handoff: the report with resolved citations, and its metadata."""

    report: str
    report_metadata: ReportMetadata


class FollowUpQuery(_Model):
    query: str
    expected_contribution: str = ""


class GapAssessment(_Model):
    gap_id: str
    severity: Severity = Severity.MODERATE
    addressable: bool = True
    follow_up_queries: list[FollowUpQuery] = Field(default_factory=list)


class IterationRecommendation(_Model):
    should_iterate: bool = False
    rationale: str = ""
    priority_gaps: list[str] = Field(default_factory=list)


class RefinerOutput(_Model):
    """The refiner's handoff: an assessment of each gap and whether to go round again."""

    gap_analysis: list[GapAssessment] = Field(default_factory=list)
    iteration_recommendation: IterationRecommendation = Field(
        default_factory=IterationRecommendation
    )
    report_improvements: list[str] = Field(default_factory=list)


class QualityAssessment(_Model):
    score: float = 0.0
    strengths: list[str] = Field(default_factory=list)
    weaknesses: list[str] = Field(default_factory=list)


class ReflectionDecision(_Model):
    """The supervisor model's answer at a think pause."""

    action: str = "proceed"  # proceed | retry | iterate | complete
    rationale: str = ""
    quality_assessment: QualityAssessment = Field(default_factory=QualityAssessment)
    guidance: str | None = None


class ValidationResult(_Model):
    """The outcome of a phase's quality gate."""

    valid: bool
    issues: list[str] = Field(default_factory=list)
    quality_score: float = 0.0
