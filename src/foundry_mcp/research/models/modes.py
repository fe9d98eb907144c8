"""The research modes and what they add to a research: sub-questions, hypotheses, the mode choice.

* **simple**: one pass over the question (plan, gather, analyse, write, refine).
* **hierarchical** (seeds 000/001): the question is decomposed into 2-5 sub-questions, each
  researched by its own researcher with its own iteration budget and synthesis; a
  meta-synthesis integrates them.
* **hypotheses** (seed 004): investigative hypotheses, each with a search strategy, are explored
  in priority order, with a coverage assessment after each.
* **auto** picks one of these from a lexical prior and the planner's complexity assessment.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, field_validator

from foundry_mcp.research.models.base import Confidence, _Model, new_id


class ResearchMode(StrEnum):
    """How a research is organised."""

    AUTO = "auto"
    SIMPLE = "simple"
    HIERARCHICAL = "hierarchical"
    HYPOTHESES = "hypotheses"


class HypothesisMode(StrEnum):
    """Which hypotheses are explored (seed 004)."""

    ADAPTIVE = "adaptive"  # in priority order until the coverage assessment says enough
    EXHAUSTIVE = "exhaustive"  # every hypothesis, within the budget
    BEST_FIRST = "best_first"  # only the first in priority order


class ExplorationMode(StrEnum):
    """Whether hypotheses are explored one after another or all at once."""

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"


class BranchStatus(StrEnum):
    """Where a sub-question or a hypothesis is."""

    PENDING = "pending"
    RESEARCHING = "researching"
    COMPLETED = "completed"
    SKIPPED = "skipped"  # a hypothesis the coverage assessment or a threshold left out
    FAILED = "failed"


class SearchTarget(StrEnum):
    """Where one sub-query is searched (seed 003's allocation between documents and the web)."""

    BOTH = "both"
    WEB = "web"
    LOCAL = "local"


class LexicalPrior(_Model):
    """What the question's wording alone suggests (cheap, no model)."""

    suggests: ResearchMode = ResearchMode.SIMPLE
    hierarchical_signals: list[str] = Field(default_factory=list)
    hypothesis_signals: list[str] = Field(default_factory=list)

    @property
    def strength(self) -> int:
        return max(len(self.hierarchical_signals), len(self.hypothesis_signals))


class ComplexityAssessment(_Model):
    """The planner's judgement of the question (seed 003's master planner)."""

    is_complex: bool = False
    recommended_mode: ResearchMode = ResearchMode.SIMPLE
    reasoning: str = ""

    @field_validator("recommended_mode", mode="before")
    @classmethod
    def _lenient_mode(cls, value: object) -> object:
        text = str(value or "").strip().lower()
        if text in ("hierarchical", "decompose", "decomposition", "complex"):
            return ResearchMode.HIERARCHICAL
        if text.startswith("hypothes"):
            return ResearchMode.HYPOTHESES
        return ResearchMode.SIMPLE


class ModeDecision(_Model):
    """The mode a research runs in, and why."""

    requested: ResearchMode = ResearchMode.AUTO
    mode: ResearchMode = ResearchMode.SIMPLE
    lexical: LexicalPrior = Field(default_factory=LexicalPrior)
    assessment: ComplexityAssessment | None = None  # None: not asked, or unreadable
    reasons: list[str] = Field(default_factory=list)
    fallback: str | None = None  # why the research fell back to simple mode


class SubQuestionSynthesis(_Model):
    """A sub-question's own answer (seed 000 phase 5)."""

    direct_answer: str = ""
    evidence: list[str] = Field(default_factory=list)  # sentences citing [src-...] ids
    citations: list[str] = Field(default_factory=list)  # the source ids it rests on
    caveats: list[str] = Field(default_factory=list)
    confidence: Confidence = Confidence.MEDIUM
    fallback: str | None = None  # set when built from the findings because writing failed


class SubQuestion(_Model):
    """One part of a decomposed question, researched by its own researcher."""

    id: str = Field(default_factory=lambda: new_id("sqn"))
    parent_id: str | None = None
    depth: int = 0
    question: str
    priority: float = Field(0.5, ge=0.0, le=1.0)
    rationale: str = ""
    status: BranchStatus = BranchStatus.PENDING
    iteration_budget: int = 1
    iterations_used: int = 0
    phase: str = "planning"  # the researcher's current phase, for status
    source_count: int = 0
    finding_ids: list[str] = Field(default_factory=list)
    synthesis: SubQuestionSynthesis | None = None
    quality_score: float = 0.0
    stop_reasons: list[str] = Field(default_factory=list)
    error: str | None = None


class SearchStrategy(_Model):
    """How a hypothesis is to be investigated."""

    sources: list[str] = Field(default_factory=list)  # e.g. "web", "academic", "local"
    signals: list[str] = Field(default_factory=list)
    expected_entities: list[str] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)


class HypothesisVerdict(StrEnum):
    """What the evidence says about a hypothesis."""

    SUPPORTED = "supported"
    PARTIALLY_SUPPORTED = "partially_supported"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"


class Hypothesis(_Model):
    """One investigative angle on a question (seed 004)."""

    id: str = Field(default_factory=lambda: new_id("hyp"))
    statement: str
    confidence: int = Field(50, ge=0, le=100)  # before exploring: how likely it pays off
    search_strategy: SearchStrategy = Field(default_factory=SearchStrategy)
    exploration_priority: int = 1
    priority_reasoning: str = ""
    status: BranchStatus = BranchStatus.PENDING
    final_confidence: int | None = Field(None, ge=0, le=100)
    verdict: HypothesisVerdict | None = None
    evidence_for: list[str] = Field(default_factory=list)  # finding ids
    evidence_against: list[str] = Field(default_factory=list)
    entities_found: list[str] = Field(default_factory=list)
    assessment: str = ""
    skip_reason: str | None = None


class CoverageAssessment(_Model):
    """After a hypothesis: is the question covered well enough to stop exploring?"""

    after: str  # the hypothesis id just explored
    sufficient: bool = False
    reasoning: str = ""
    recommended_next: str | None = None  # a hypothesis id
