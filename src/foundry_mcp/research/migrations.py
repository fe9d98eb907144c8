"""Upgrades of stored research states written by older versions of foundry-mcp.

Each step takes the JSON of version ``n`` and returns version ``n + 1``; loading applies every
step from the stored ``schema_version`` up to ``STATE_SCHEMA_VERSION``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from foundry_mcp.research.models import STATE_SCHEMA_VERSION

State = dict[str, Any]


def _v1_to_v2(state: State) -> State:
    """Version 2 keeps ownership in the store's lease columns, not in the state."""
    state.pop("owner_pid", None)
    state.pop("owner_host", None)
    state.setdefault("options", {})
    state.setdefault("contradictions", [])
    state.setdefault("claim_checks", [])
    return state


def _v2_to_v3(state: State) -> State:
    """Version 3 keeps token totals only in ``llm_usage`` (they were also in ``usage``)."""
    old = state.pop("usage", None) or {}
    usage = state.setdefault("llm_usage", {})
    total = usage.setdefault("total", {})
    if not total.get("calls") and old.get("calls"):
        total.update(
            input_tokens=old.get("input_tokens", 0),
            output_tokens=old.get("output_tokens", 0),
            calls=old["calls"],
            unpriced_calls=old["calls"],
        )
    return state


def _v3_to_v4(state: State) -> State:
    """Version 4 adds the research modes; a research started before them ran in simple mode."""
    state.setdefault("mode", "simple")
    return state


def _v4_to_v5(state: State) -> State:
    """Version 5 takes ``runtime_overhead`` from every call's window, as the specification says;
    what it meant before (the calling assistant's share) is ``assistant_overhead``."""
    budget = state.get("options", {}).get("token_budget")
    if isinstance(budget, dict) and "assistant_overhead" not in budget:
        budget["assistant_overhead"] = budget.pop("runtime_overhead", 60_000)
        budget["runtime_overhead"] = 0
    return state


STEPS: dict[int, Callable[[State], State]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
}


def migrate_state(state: State) -> State:
    """``state`` upgraded to the current schema version.

    Raises ``ValueError`` for a state written by a newer foundry-mcp.
    """
    version = int(state.get("schema_version", 1))
    if version > STATE_SCHEMA_VERSION:
        raise ValueError(f"state schema {version} is newer than {STATE_SCHEMA_VERSION}")
    while version < STATE_SCHEMA_VERSION:
        state = STEPS[version](state)
        version += 1
        state["schema_version"] = version
    return state
