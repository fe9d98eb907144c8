"""The published shape of ``deep-research-status`` and of the parts the report shares with it:
usage and cost, the fidelity block, the domain's words.

The research models are not imported here: the server publishes its schema before the research
code is loaded (see ``server.host``). The word lists below spell the values of the research
enumerations; ``tests/unit/test_results.py`` holds them equal.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict


def _untitled_properties(schema: JsonDict) -> None:
    """Drops the titles pydantic derives from field names: they repeat the key, and a fifth of
    the published schema was made of them."""
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for prop in properties.values():
            if isinstance(prop, dict):
                prop.pop("title", None)


class Result(BaseModel):
    """Base of the result models: a key they do not declare passes (and is returned), so a field
    added by a newer server never fails a client's validation."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_untitled_properties)


Timestamp = Annotated[
    str, Field(description="ISO 8601, UTC.", json_schema_extra={"format": "date-time"})
]

StatusName = Literal[
    "queued",
    "running",
    "cancelling",
    "cancelled",
    "failed",
    "timed_out",
    "interrupted",
    "completed",
    "waiting",
]
PhaseName = Literal["planning", "gathering", "analysis", "synthesis", "refinement"]
ModeName = Literal["auto", "simple", "hierarchical", "hypotheses"]
AgentName = Literal["supervisor", "planner", "gatherer", "analyzer", "synthesizer", "refiner"]
BranchStatusName = Literal["pending", "researching", "completed", "skipped", "failed"]
ConfidenceName = Literal["low", "medium", "high", "confirmed", "speculation"]
HypothesisVerdictName = Literal["supported", "partially_supported", "refuted", "inconclusive"]
FidelityBand = Literal["full", "condensed", "compressed", "minimal"]


class Progress(Result):
    phase_index: int = Field(description="1-based position of the phase among `phases`.")
    phases: int
    sub_queries_done: int
    sub_queries_total: int
    sources: int
    findings: int
    gaps: int
    gaps_unaddressed: int


class TokenBudget(Result):
    """The token figures in effect for the research's model (see specs/token-management.md)."""

    enabled: bool
    model: str = Field(description="provider:model")
    limits_source: str = Field(description="Where the model's limits come from.")
    context_window: int
    max_output: int
    runtime_overhead: int
    safety_margin: float = Field(description="Fraction of the window kept free.")
    safety_margin_tokens: int
    reserved_output: int
    available: int = Field(description="Input tokens one call may carry.")
    phase_budgets: dict[str, int] = Field(description="Input tokens per phase.")
    client_window: int
    assistant_overhead: int
    client_budget: int = Field(description="Tokens left in the client's context for a response.")


class UsageTotals(Result):
    input_tokens: int
    output_tokens: int
    calls: int
    cost_usd: float = Field(description="Estimated, of the calls whose price is known.")
    unpriced_calls: int = Field(description="Calls to models without a known price.")


class Usage(Result):
    """Tokens and estimated cost of the research's LLM calls."""

    cost_is_estimate: bool
    max_cost_usd: float | None = Field(description="The cost ceiling of the last run.")
    cost_ceiling_reached: bool
    total: UsageTotals
    by_phase: dict[str, UsageTotals]
    by_provider: dict[str, UsageTotals]
    by_model: dict[str, UsageTotals] = Field(description="Keyed by provider:model.")
    models_by_phase: dict[str, list[str]] = Field(description="The models that ran each phase.")


class RecentDecision(Result):
    agent: AgentName
    action: str
    rationale: str
    timestamp: Timestamp


class SubQuestionBrief(Result):
    id: str
    question: str
    priority: float = Field(description="0..1")
    status: BranchStatusName
    phase: str = Field(description="The sub-question researcher's current phase.")
    iteration: int = Field(description="Rounds used.")
    max_iterations: int
    sources: int
    findings: int
    confidence: ConfidenceName | None = Field(description="Of its answer, once written.")
    quality: float


class HypothesisBrief(Result):
    id: str
    statement: str
    priority: int = Field(description="Exploration order, 1 first.")
    status: BranchStatusName
    confidence: int = Field(description="0..100, before exploring: how likely it pays off.")
    final_confidence: int | None = Field(description="0..100, after weighing the evidence.")
    verdict: HypothesisVerdictName | None
    evidence_for: int = Field(description="Findings supporting it.")
    evidence_against: int
    skip_reason: str | None


class ResearchTree(Result):
    """Sub-questions (hierarchical) or hypotheses; only the ones the research has are present."""

    mode: ModeName
    strategy: str | None = Field(None, description="How the question was decomposed.")
    sub_questions: list[SubQuestionBrief] | None = None
    hypotheses: list[HypothesisBrief] | None = None


class PhaseAllocation(Result):
    iteration: int
    tokens_used: int
    tokens_available: int
    utilization: float
    items: int
    items_dropped: int
    items_summarized: int
    items_degraded: int
    fidelity: float


class Fidelity(Result):
    """How much of the gathered content reached the model. Until content has been allocated only
    `enabled`, `score`, `band`, `warning` and `items_total` (0) are present."""

    enabled: bool
    score: float | None = Field(description="0..1, the mean of the items' fidelity.")
    band: FidelityBand | None
    warning: str | None = Field(description="Set when the score is below 0.5.")
    items_total: int
    tokens_used: int | None = None
    tokens_available: int | None = None
    utilization: float | None = None
    items_degraded: int | None = None
    items_summarized: int | None = None
    items_dropped: int | None = None
    dropped_ids: list[str] | None = Field(None, description="The first dropped source ids.")
    archived: int | None = Field(None, description="Originals kept in the content archive.")
    phases: dict[str, PhaseAllocation] | None = None


class StatusResult(Result):
    """``deep-research-status``: where a research is and what it has used."""

    research_id: str
    query: str = Field(description="Cut to 200 characters.")
    status: StatusName
    phase: PhaseName
    mode: ModeName = Field(description="'auto' until planning has chosen.")
    iteration: int
    max_iterations: int
    progress: Progress
    elapsed_s: float = Field(description="Seconds of the current or last run.")
    last_activity_at: Timestamp
    stale: bool = Field(description="Active but without activity for 3 minutes.")
    next_action: str = Field(description="One sentence: what to call next.")
    usage: Usage
    token_budget: TokenBudget
    search_calls: int
    provider: str = Field(description="provider:model")
    language: str | None = Field(
        None, description="The report's language; null: the question's, as the writer reads it."
    )
    provider_choice: str | None = Field(
        description="Why this LLM, when no configuration named one and it was found on this "
        "machine (an API key, an assistant's program, a local server); else null."
    )
    report_available: bool
    error: str | None = Field(description="Why the last run ended failed, timed out, ...")
    error_code: str | None
    warnings: list[str]
    recent_decisions: list[RecentDecision] = Field(description="The latest five.")
    created_at: Timestamp
    updated_at: Timestamp
    tree: ResearchTree | None = Field(description="None in simple mode.")
    fidelity: Fidelity
    clarification: Clarified | None = None
    bounds: BoundsReport | None = Field(None, description="Its source bounds, when bounded.")
    waiting_for: Literal["plan_approval"] | None = Field(
        None, description="Status waiting: what it waits for."
    )
    plan: Plan | None = Field(None, description="Status waiting: the plan to approve.")
    plan_review: Literal["waiting", "approved", "edited", "cancelled"] | None = Field(
        None, description="review_plan: what became of the plan."
    )
    plan_answer: PlanFormAnswer | None = Field(
        None, description="The plan's form answered during this call: was its answer applied?"
    )


class PlanFormAnswer(Result):
    """An answer to the plan's form, and whether it was applied."""

    answer: Literal["approve", "cancel"]
    applied: bool
    reason: str | None = Field(
        None, description="Not applied: what the research did while the form was open."
    )


class AskedQuestion(Result):
    question: str
    choices: list[str] | None = None
    answer: str | None = Field(description="null: not answered (its assumption was made).")


class BoundsReport(Result):
    """A research's source bounds and who applies them."""

    include_domains: list[str] = Field(default_factory=list)
    exclude_domains: list[str] = Field(default_factory=list)
    published_after: str | None = None
    published_before: str | None = None
    applied_by_service: dict[str, list[str]] = Field(
        description="Per search provider, the bounds its service applied itself; the others "
        "are checked on its results."
    )
    not_bounded: list[str] = Field(description="The user's own sources: never bounded.")


class Clarified(Result):
    """What was asked before researching, or assumed where nobody could be asked."""

    outcome: Literal["clear", "answered", "declined", "dismissed", "timed_out", "not_asked"] = (
        Field(
            description="dismissed: the form was closed unanswered; not_asked: the client could "
            "not be asked. Unanswered, the research made assumptions."
        )
    )
    asked: list[AskedQuestion]
    assumptions: list[str] = Field(description="What the research assumed, unanswered.")


class Plan(Result):
    """The plan of a research waiting for approval (review_plan)."""

    mode: ModeName
    research_brief: str
    queries: list[str] = Field(description="Searches, or sub-questions in hierarchical mode.")
    editable: bool = Field(description="False in hypotheses mode: approve or cancel only.")
    preferred_sources: list[str]
    source_types: list[str]
