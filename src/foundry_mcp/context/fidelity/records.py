"""What token management records of a research: each item's fidelity and each phase's budget.

These records are kept in the research's state (``content_fidelity`` and
``content_allocation_metadata``); :mod:`foundry_mcp.context.fidelity.bookkeeping` writes them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from foundry_mcp.context.levels import ContentLevel


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_assignment=False)


class ContentFidelity(_Record):
    """How much of one content item (a source, a finding) reached the model, in tokens."""

    item_type: str = "source"
    original_tokens: int = 0
    current_tokens: int = 0
    current_level: ContentLevel = ContentLevel.FULL
    # The tokens of the passages that bear on the question (None: the whole original was read).
    relevant_tokens: int | None = None
    compression_ratio: float = 1.0  # current_tokens / (relevant or original) tokens, at most 1
    content_hash: str | None = None  # sha256 of the original: its count is reused on resume
    # full | focus | budget | selection | summary | truncation | dropped; budget: the reading
    # budget chose the page's most relevant passages; selection: chosen to fit the window
    method: str = "full"
    summarizer: str | None = None  # the provider spec that wrote a summary
    phase: str = "analysis"
    iteration: int = 1
    archived: bool = False


class PhaseAllocation(_Record):
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


class ContentAllocationMetadata(_Record):
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
