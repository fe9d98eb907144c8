"""The limits and switches one research runs with, resolved when it starts or resumes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from foundry_mcp.context.options import TokenBudgetOptions
from foundry_mcp.providers.search.bounds import SourceBounds
from foundry_mcp.research.models.base import _Model
from foundry_mcp.research.models.modes import ExplorationMode, HypothesisMode, ResearchMode


class ResearchLimits(_Model):
    """The bounds one research runs within (resolved from request and configuration)."""

    max_iterations: int = 3
    max_sub_queries: int = 5
    max_sources_per_query: int = 5
    max_concurrent: int = 3
    task_timeout: float = 600.0
    # Tokens of page text one round of one researcher reads, its most relevant passages across
    # its pages first (None: whole pages, as far as the model's window allows).
    reading_budget: int | None = None


class ModeOptions(_Model):
    """How a research is organised (``[research] mode`` and the keys of the modes)."""

    requested: ResearchMode = ResearchMode.AUTO
    min_sub_questions: int = 2
    max_sub_questions: int = 5
    sub_question_min_iterations: int = 1
    sub_question_max_iterations: int = 3
    sub_question_max_queries: int = 3  # searches a sub-question researcher plans per round
    max_hypotheses_per_task: int = 4
    hypothesis_mode: HypothesisMode = HypothesisMode.ADAPTIVE
    exploration_mode: ExplorationMode = ExplorationMode.SEQUENTIAL
    min_confidence_threshold: int = 0  # 0: every hypothesis is considered


class SearchOptions(_Model):
    """Which kinds of sources a research searches, and how its search providers share the work.

    ``source_types`` are values of ``providers.search.base.SOURCE_TYPES``, checked when the
    research starts; empty: every provider of the research, in one priority order.
    ``strategy`` is ``[research] deep_research_search_strategy``: "priority" asks the first
    usable provider and the next one when it fails; "all" asks every provider at once.
    """

    source_types: list[str] = Field(default_factory=list)
    strategy: Literal["priority", "all"] = "priority"
    # The caller's source bounds (domains, publication days); None: unbounded.
    bounds: SourceBounds | None = None
    # Whether words only the user's own sources hold may go to public search services
    # (workflow/agents/privacy.py); off: they are left out of those queries.
    private_text_in_public: bool = False


class ResearchOptions(_Model):
    """Workflow switches of one research, resolved from configuration when it starts."""

    verify_citations: bool = True
    parallel_writing: bool = True  # write the report's sections at once (workflow/report/parts.py)
    pinned_provider: bool = False  # the caller named provider_id: it runs every LLM call
    preferred_sources: list[str] = Field(default_factory=list)  # domains or address prefixes
    report_quotes: bool = False  # [report] quotes: the backing passages under each source
    clarify: str = "auto"  # when to ask the user about a vague question (models.conversation)
    review_plan: bool = False  # stop after planning until the user approves the plan
    language: str | None = None  # the report's language (research/language.py); None: as asked
    # Whether the question's language is still to be recognised (when the report is written).
    language_from_question: bool = False
    effort: str = "standard"  # the preset it started with (research/effort.py)
    max_time_s: float | None = None  # time ceiling of a run (workflow/deadline/ceiling.py)
    max_verified_claims: int = 60
    gate_retries: int = 1
    enable_reflection: bool = True
    phase_timeouts: dict[str, float] = Field(default_factory=dict)  # seconds, by phase value
    # Seconds a research's parts may go without moving, no provider call in flight, before
    # those still running are stopped (modes/watch.py).
    stall_timeout: float = 120.0
    token_budget: TokenBudgetOptions = Field(default_factory=TokenBudgetOptions)
    mode: ModeOptions = Field(default_factory=ModeOptions)
    search: SearchOptions = Field(default_factory=SearchOptions)
    # The caller's JSON Schema for a structured answer, as checked when the research started
    # (workflow/report/answer_schema.py); None: the report only.
    output_schema: dict[str, Any] | None = None
