"""The supervisor's optional model-based reflection at a think pause."""

from __future__ import annotations

from functools import partial
from typing import Any

from foundry_mcp.errors import ProviderError
from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    AgentRole,
    Phase,
    ReflectionDecision,
    ResearchState,
    ValidationResult,
)
from foundry_mcp.research.prompts.supervisor import supervisor_prompts

ACTIONS = ("proceed", "retry", "iterate", "complete")


async def reflect(
    llm: ResearchLLM,
    state: ResearchState,
    phase: Phase,
    prompt: str,
    gate: ValidationResult,
    metrics: dict[str, Any],
) -> ReflectionDecision:
    """Ask the model to judge the phase; ``proceed`` whenever its answer is unusable."""
    gate_summary = "passed" if gate.valid else f"failed: {'; '.join(gate.issues)}"
    system, user = supervisor_prompts(
        state.query, prompt, gate_summary, metrics, state.iteration, state.limits.max_iterations
    )
    try:
        decision = await ask_json(
            partial(llm.ask, f"reflection:{phase.value}", json_mode=True),
            system,
            user,
            ReflectionDecision,
            state=state,
            agent=AgentRole.SUPERVISOR,
        )
    except ProviderError as exc:
        state.record_fallback(
            AgentRole.SUPERVISOR,
            f"Reflection after {phase.value} failed ({exc.message}); proceeding.",
        )
        return ReflectionDecision(action="proceed", rationale="Reflection unavailable.")
    if decision is None or decision.action not in ACTIONS:
        state.record_fallback(
            AgentRole.SUPERVISOR,
            f"The reflection after {phase.value} could not be read; proceeding.",
        )
        return ReflectionDecision(action="proceed", rationale="Unreadable reflection.")
    return decision
