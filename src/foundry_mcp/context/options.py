"""The token-management options of one research, resolved from ``[research]`` when it starts.

They are kept in the research's state (its ``options.token_budget``) so that a run fits its
content the same way after a resume; ``context.budget`` turns them into one call's budget.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

PHASE_BUDGET_FRACTIONS: dict[str, float] = {
    "planning": 0.10,
    "analysis": 0.40,
    "synthesis": 0.35,
    "refinement": 0.15,
}


class TokenBudgetOptions(BaseModel):
    """Token management of one research (``[research]`` token keys, resolved when it starts).

    ``context_window`` and ``max_output`` are the research model's limits after
    ``model_context_overrides``; ``phase_fractions`` split one call's available input between
    the phases (see ``specs/token-management.md``).
    """

    model_config = ConfigDict(extra="ignore")

    enabled: bool = True
    safety_margin: float = 0.15
    runtime_overhead: int = 0  # taken from every call's window (a runtime around the model)
    assistant_overhead: int = 60_000  # taken from the calling assistant's window
    client_window: int = 200_000
    context_window: int | None = None  # None: looked up from the model name at run time
    max_output: int | None = None
    limits_source: str = "default"
    model_context_overrides: dict[str, int] = Field(default_factory=dict)  # for other models
    # An untrusted project file's model_context_overrides: they only lower a window.
    model_window_ceilings: dict[str, int] = Field(default_factory=dict)
    phase_fractions: dict[str, float] = Field(default_factory=lambda: dict(PHASE_BUDGET_FRACTIONS))
    summarization_providers: list[str] = Field(default_factory=list)  # empty: the research's LLM
    summarization_timeout: float = 60.0
    summarization_cache: bool = True
    allow_content_dropping: bool = False
    archive_enabled: bool = False
    archive_dir: str | None = None
    archive_ttl_hours: float = 168.0
    cache_dir: str | None = None  # where summaries are cached (the research_dir)
