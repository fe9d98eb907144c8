"""The vocabulary of a deep research: state, handoffs and records.

Every object that is persisted, handed from one agent to the next or returned to a user is a
pydantic model of this package. Names follow the design seeds where they name them:
``base`` (ids and enumerations), ``records`` (what a research accumulates), ``options``
(its limits and switches), ``state`` (``ResearchState``), ``handoffs`` (agent outputs),
``modes`` (the research modes: sub-questions, hypotheses, the mode decision), ``answer`` (the
structured answer in the caller's JSON Schema, with each value's sources). What a caller asks
of one research, its request, is the starting room's (``research.service.starting.request``).
The token-management types a state holds (content levels, budget options, fidelity records)
belong to ``foundry_mcp.context`` and are re-exported here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foundry_mcp.context.fidelity.records import (
    ContentAllocationMetadata,
    ContentFidelity,
    PhaseAllocation,
)
from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.options import PHASE_BUDGET_FRACTIONS, TokenBudgetOptions
from foundry_mcp.research.models.answer import StructuredAnswer, ValueSource
from foundry_mcp.research.models.base import (
    PHASE_ORDER,
    PHASE_TO_AGENT,
    RESEARCH_ID_PATTERN,
    STATE_SCHEMA_VERSION,
    AgentRole,
    Confidence,
    EventListener,
    Phase,
    Severity,
    SourceQuality,
    Status,
    SubQueryStatus,
    Verdict,
    new_id,
    new_research_id,
    utcnow,
)
from foundry_mcp.research.models.conversation import (
    MAX_CLARIFYING_QUESTIONS,
    Clarification,
    ClarificationOutcome,
    ClarifierOutput,
    Clarify,
    ClarifyingQuestion,
    FollowUp,
    FollowUpQuote,
    PlanReview,
)
from foundry_mcp.research.models.modes import (
    BranchStatus,
    ComplexityAssessment,
    CoverageAssessment,
    ExplorationMode,
    Hypothesis,
    HypothesisMode,
    HypothesisVerdict,
    LexicalPrior,
    ModeDecision,
    ResearchMode,
    SearchStrategy,
    SearchTarget,
    SubQuestion,
    SubQuestionSynthesis,
)
from foundry_mcp.research.models.options import (
    ModeOptions,
    ResearchLimits,
    ResearchOptions,
    SearchOptions,
)
from foundry_mcp.research.models.records import (
    MAX_LLM_CALL_RECORDS,
    AgentDecision,
    ClaimCheck,
    Contradiction,
    EvidenceQuote,
    FiledFinding,
    Finding,
    Gap,
    LLMCallRecord,
    LLMUsage,
    PageRecord,
    ReportMetadata,
    Source,
    SubQuery,
    UsageTotals,
    VerificationSummary,
)
from foundry_mcp.research.models.state import (
    ResearchState,
)
from foundry_mcp.research.models.versions import (
    ReportForm,
    ReportVersion,
    Revision,
    RevisionKind,
    RevisionStep,
    VersionChanges,
    VersionCost,
    WritingInstructions,
)

if TYPE_CHECKING:
    from foundry_mcp.research.models.handoffs import (
        AnalyzerOutput,
        Decomposition,
        ExtractedFinding,
        FollowUpQuery,
        GapAssessment,
        GathererOutput,
        GatheringStats,
        IdentifiedContradiction,
        IdentifiedGap,
        IterationRecommendation,
        PlannedSubQuery,
        PlannedSubQuestion,
        PlannerOutput,
        QualityAssessment,
        QualityUpdate,
        RefinerOutput,
        ReflectionDecision,
        SynthesizerOutput,
        ValidationResult,
    )

__all__ = [
    "MAX_CLARIFYING_QUESTIONS",
    "MAX_LLM_CALL_RECORDS",
    "PHASE_BUDGET_FRACTIONS",
    "PHASE_ORDER",
    "PHASE_TO_AGENT",
    "RESEARCH_ID_PATTERN",
    "STATE_SCHEMA_VERSION",
    "AgentDecision",
    "AgentRole",
    "AnalyzerOutput",
    "BranchStatus",
    "ClaimCheck",
    "Clarification",
    "ClarificationOutcome",
    "ClarifierOutput",
    "Clarify",
    "ClarifyingQuestion",
    "ComplexityAssessment",
    "Confidence",
    "ContentAllocationMetadata",
    "ContentFidelity",
    "ContentLevel",
    "Contradiction",
    "CoverageAssessment",
    "Decomposition",
    "EventListener",
    "EvidenceQuote",
    "ExplorationMode",
    "ExtractedFinding",
    "FiledFinding",
    "Finding",
    "FollowUp",
    "FollowUpQuery",
    "FollowUpQuote",
    "Gap",
    "GapAssessment",
    "GathererOutput",
    "GatheringStats",
    "Hypothesis",
    "HypothesisMode",
    "HypothesisVerdict",
    "IdentifiedContradiction",
    "IdentifiedGap",
    "IterationRecommendation",
    "LLMCallRecord",
    "LLMUsage",
    "LexicalPrior",
    "ModeDecision",
    "ModeOptions",
    "PageRecord",
    "Phase",
    "PhaseAllocation",
    "PlanReview",
    "PlannedSubQuery",
    "PlannedSubQuestion",
    "PlannerOutput",
    "QualityAssessment",
    "QualityUpdate",
    "RefinerOutput",
    "ReflectionDecision",
    "ReportForm",
    "ReportMetadata",
    "ReportVersion",
    "ResearchLimits",
    "ResearchMode",
    "ResearchOptions",
    "ResearchState",
    "Revision",
    "RevisionKind",
    "RevisionStep",
    "SearchOptions",
    "SearchStrategy",
    "SearchTarget",
    "Severity",
    "Source",
    "SourceQuality",
    "Status",
    "StructuredAnswer",
    "SubQuery",
    "SubQueryStatus",
    "SubQuestion",
    "SubQuestionSynthesis",
    "SynthesizerOutput",
    "TokenBudgetOptions",
    "UsageTotals",
    "ValidationResult",
    "ValueSource",
    "Verdict",
    "VerificationSummary",
    "VersionChanges",
    "VersionCost",
    "WritingInstructions",
    "new_id",
    "new_research_id",
    "utcnow",
]


# The agents' outputs (``handoffs``: the names imported above for type checkers only) are
# imported when first asked for (``models.AnalyzerOutput``): a process that only reads research
# (a CLI command, a server's handshake) never needs them.
def __getattr__(name: str) -> Any:
    if name in __all__:
        from foundry_mcp.research.models import handoffs

        return getattr(handoffs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
