"""The answer to ``deep-research``: the research queued, and what it will run with."""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.service.asking.conversation import assumptions_hint, clarified

STARTED = (
    "Research started in the background. Follow it with its research_id: "
    "action='deep-research-status' with wait=true (returns when it moves); then read "
    "action='deep-research-report'."
)


def started_payload(
    state: ResearchState, routes: dict[str, list[tuple[str, str]]], search_warnings: list[str]
) -> dict[str, Any]:
    """What a start answers: its id, limits, mode, providers (``routes``: the per-phase LLM
    routes), its searches (``search_warnings``: providers left out and why) and bounds."""
    options = state.options
    stated = state.metadata.get("provider_choice")
    return {
        "research_id": state.id,
        "status": state.status.value,
        "phase": state.phase.value,
        "message": STARTED + assumptions_hint(state),
        "limits": state.limits.model_dump(),
        "mode": options.mode.requested.value,
        "effort": options.effort,
        **clarified(state),
        "provider": f"{state.llm_provider}:{state.llm_model}",
        **({"provider_choice": stated} if stated else {}),
        "phase_providers": {
            group: [f"{name}:{model}" for name, model in pairs] for group, pairs in routes.items()
        },
        "search": {
            "providers": state.search_providers,
            "source_types": options.search.source_types,
            "strategy": options.search.strategy,
            "warnings": search_warnings,
            "preferred_sources": options.preferred_sources,
            **({"bounds": state.metadata["bounds"]} if "bounds" in state.metadata else {}),
        },
    }
