"""Stored states written by older versions load with today's meaning."""

from __future__ import annotations

import json

from foundry_mcp.research.models import STATE_SCHEMA_VERSION, ResearchState
from foundry_mcp.research.store.states import migrate_state


def _version_four(token_budget: dict[str, object]) -> dict[str, object]:
    data = json.loads(
        ResearchState(query="q", llm_provider="openai", llm_model="m").model_dump_json()
    )
    data["schema_version"] = 4
    data["options"]["token_budget"] = token_budget
    return data


def test_the_old_runtime_overhead_becomes_the_assistant_overhead() -> None:
    # Before version 5, runtime_overhead sized the report for the calling assistant only.
    data = _version_four({"enabled": True, "runtime_overhead": 30_000})

    state = ResearchState.model_validate(migrate_state(data))

    budget = state.options.token_budget
    assert state.schema_version == STATE_SCHEMA_VERSION
    assert budget.assistant_overhead == 30_000
    assert budget.runtime_overhead == 0  # a resumed research keeps every call's room


def test_a_state_without_token_options_gets_the_defaults() -> None:
    data = _version_four({})
    data["options"].pop("token_budget")
    state = ResearchState.model_validate(migrate_state(data))
    assert state.options.token_budget.runtime_overhead == 0
    assert state.options.token_budget.assistant_overhead == 60_000
