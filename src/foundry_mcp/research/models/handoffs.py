"""What one agent hands to the next: the parsed, validated outputs of the specialists."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, ValidationError, ValidationInfo, field_validator

from foundry_mcp.research.models.base import Confidence, Severity, SourceQuality, _Model
from foundry_mcp.research.models.modes import ComplexityAssessment, SearchTarget
from foundry_mcp.research.models.records import ReportMetadata, Source


class PlannedSubQuery(_Model):
    query: str
    rationale: str = ""
    priority: int = 1
    target: SearchTarget = SearchTarget.BOTH  # asked for when the user's documents are searched
    source_types: list[str] = Field(default_factory=list)  # asked for when a research has kinds
    sources: list[str] = Field(default_factory=list)  # the user's named sources to search

    @field_validator("sources", mode="before")
    @classmethod
    def _lenient_sources(cls, value: object) -> list[str]:
        """Names as strings, lower-cased; anything else is no choice."""
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            return []
        return [item.strip().lower() for item in value if isinstance(item, str) and item.strip()]

    @field_validator("target", mode="before")
    @classmethod
    def _lenient_target(cls, value: object) -> SearchTarget:
        """local, web or both, in any case and a few common words for them; else both."""
        words = {
            "documents": SearchTarget.LOCAL,
            "docs": SearchTarget.LOCAL,
            "kb": SearchTarget.LOCAL,
            "rag": SearchTarget.LOCAL,
            "internet": SearchTarget.WEB,
            "online": SearchTarget.WEB,
        }
        if not isinstance(value, str):
            return SearchTarget.BOTH
        key = value.strip().lower()
        try:
            return SearchTarget(key)
        except ValueError:
            return words.get(key, SearchTarget.BOTH)

    @field_validator("source_types", mode="before")
    @classmethod
    def _lenient_source_types(cls, value: object) -> list[str]:
        """Kinds of sources as a list or one comma-separated text, lower-cased; else none.

        The planner keeps those the research searches (see ``workflow.planner``).
        """
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list):
            return []
        kinds = [item.strip().lower() for item in items if isinstance(item, str)]
        return list(dict.fromkeys(kind for kind in kinds if kind))


class PlannedSubQuestion(_Model):
    """One part of a decomposed question, as the planner proposed it."""

    question: str
    priority: float = 0.5
    rationale: str = ""

    @field_validator("priority", mode="before")
    @classmethod
    def _lenient_priority(cls, value: object) -> float:
        """0-1 as asked; words, percentages and out-of-range numbers are mapped onto it."""
        words = {"critical": 1.0, "high": 0.9, "medium": 0.6, "moderate": 0.6, "low": 0.3}
        if isinstance(value, str):
            if value.strip().lower() in words:
                return words[value.strip().lower()]
            try:
                value = float(value.strip().rstrip("%"))
            except ValueError:
                return 0.5
        if isinstance(value, bool) or not isinstance(value, int | float):
            return 0.5
        number = float(value)
        if number > 1:
            number = number / 100 if number <= 100 else 1.0
        return min(1.0, max(0.0, number))


class Decomposition(_Model):
    """The planner's split of a complex question into sub-questions (seeds 000/001)."""

    strategy: str = ""
    sub_questions: list[PlannedSubQuestion] = Field(default_factory=list)


class PlannerOutput(_Model):
    """The planner's handoff: a research brief and the sub-queries to search.

    Asked to judge the question (auto and hierarchical modes), it also gives its complexity
    assessment and, for a complex question, the decomposition. Shown the user's documents, it
    aims each sub-query at them, the web or both and says why (seed 003's allocation).
    """

    research_brief: str = ""
    sub_queries: list[PlannedSubQuery] = Field(default_factory=list)
    assessment: ComplexityAssessment | None = None
    decomposition: Decomposition | None = None
    allocation_strategy: str = ""
    assumptions: list[str] = Field(default_factory=list)  # its reading of an ambiguous question

    @field_validator("assumptions", mode="before")
    @classmethod
    def _lenient_assumptions(cls, value: object) -> list[str]:
        """Assumptions are a few short texts; anything else is none."""
        if not isinstance(value, list):
            return []
        texts = [" ".join(item.split())[:300] for item in value if isinstance(item, str)]
        return [text for text in texts if text][:3]

    @field_validator("allocation_strategy", mode="before")
    @classmethod
    def _lenient_strategy(cls, value: object) -> str:
        """A missing or non-text strategy is none, not a failed plan."""
        return " ".join(value.split()) if isinstance(value, str) else ""

    @field_validator("assessment", "decomposition", mode="before")
    @classmethod
    def _lenient_parts(cls, value: object, info: ValidationInfo) -> object:
        """A malformed assessment or decomposition is left out, not a failed plan."""
        if info.field_name == "decomposition" and isinstance(value, list):
            value = {"sub_questions": value}
        if not isinstance(value, dict):
            return None
        target = ComplexityAssessment if info.field_name == "assessment" else Decomposition
        try:
            return target.model_validate(value)
        except ValidationError:
            return None


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
    parts: list[str] = Field(default_factory=list)  # the parts of the question it answers


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


def _texts(value: object, from_object: Callable[[dict[str, Any]], object]) -> list[str]:
    """The non-blank texts of a list, of one value alone, or of objects (read by
    ``from_object``); anything else gives nothing."""
    texts = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict):
            item = from_object(item)
        if isinstance(item, str) and item.strip():
            texts.append(item.strip())
    return texts


class IterationRecommendation(_Model):
    should_iterate: bool = False
    rationale: str = ""
    priority_gaps: list[str] = Field(default_factory=list)  # gap ids, most important first

    @field_validator("priority_gaps", mode="before")
    @classmethod
    def _lenient_gap_ids(cls, value: object) -> list[str]:
        """Gap ids as a list, one id alone, or objects carrying a ``gap_id`` (or ``id``)."""
        return _texts(value, lambda item: item.get("gap_id", item.get("id")))


class RefinerOutput(_Model):
    """The refiner's handoff: an assessment of each gap and whether to go round again.

    ``priority_gaps`` orders the follow-up searches; ``report_improvements`` go to the writer of
    the next report.
    """

    gap_analysis: list[GapAssessment] = Field(default_factory=list)
    iteration_recommendation: IterationRecommendation = Field(
        default_factory=IterationRecommendation
    )
    report_improvements: list[str] = Field(default_factory=list)

    @field_validator("report_improvements", mode="before")
    @classmethod
    def _lenient_improvements(cls, value: object) -> list[str]:
        """A list of texts; one text alone, or objects, give their text values; the rest none."""
        return _texts(value, lambda item: " ".join(v for v in item.values() if isinstance(v, str)))


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
