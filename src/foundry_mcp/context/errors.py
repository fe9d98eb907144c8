"""The error raised when research content cannot be made to fit a model's context window."""

from __future__ import annotations

from foundry_mcp.errors import FoundryError

CONTEXT_REMEDIATION = (
    "Make room, then resume the research: set [research] allow_content_dropping = true to let "
    "low-priority content be dropped; use a model with a larger context window (or correct its "
    "window in [research] model_context_overrides); lower token_safety_margin; or lower "
    "deep_research_max_sources / deep_research_max_sub_queries."
)
# The same, for a research that already lets content be dropped: never advise what is set.
CONTEXT_REMEDIATION_DROPPING = (
    "Make room, then resume the research: use a model with a larger context window (or correct "
    "its window in [research] model_context_overrides); lower token_safety_margin or "
    "runtime_overhead; or lower deep_research_max_sources / deep_research_max_sub_queries."
)


def context_remediation(allow_dropping: bool) -> str:
    """What to change when content does not fit, without naming a setting already set."""
    return CONTEXT_REMEDIATION_DROPPING if allow_dropping else CONTEXT_REMEDIATION


class ContextExceededError(FoundryError):
    """Even the most compressed content the guardrails allow does not fit the budget."""

    error_code = "CONTEXT_EXCEEDED"
    error_type = "context"
    default_remediation = CONTEXT_REMEDIATION
