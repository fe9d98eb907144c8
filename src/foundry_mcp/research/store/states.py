"""A research state as every store keeps it: JSON (without page text), upgraded when read, and
the tables it spans.

A stored state written by an older foundry-mcp is upgraded when it is read: each step takes the
JSON of version ``n`` and returns version ``n + 1``, and reading applies every step from the
stored ``schema_version`` up to ``STATE_SCHEMA_VERSION``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from foundry_mcp.errors import ResearchNotFoundError
from foundry_mcp.research.models import STATE_SCHEMA_VERSION, ResearchState

log = logging.getLogger(__name__)

# The tables that hold a research's rows besides its own: deleted with it (and then the pages
# no research links to any more: store/pages.py). Not the spend ledger, which outlives it.
RESEARCH_TABLES = ("events", "branches", "llm_journal", "archived", "research_pages")

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


# What a stored state leaves out: its sources' page text, which the store keeps apart (pages.py).
# (A state saved before that holds it inline, and is read as it is.)
_NOT_STORED: dict[str, Any] = {"sources": {"__all__": {"content"}}}


def encode_state(state: ResearchState) -> str:
    """The JSON a store keeps of ``state``: all of it but the page text of its sources."""
    return state.model_dump_json(exclude=_NOT_STORED)


def decode_state(text: str | bytes, research_id: str) -> ResearchState:
    """The stored JSON of a research as its state; ``ResearchNotFoundError`` when unreadable."""
    try:
        return ResearchState.model_validate(migrate_state(json.loads(text)))
    except (ValidationError, ValueError):
        raise ResearchNotFoundError(
            f"The stored state of {research_id} cannot be read.",
            remediation="Delete it with action='deep-research-delete' and start again.",
        ) from None


def decode_branches(rows: list[tuple[str, str]], research_id: str) -> dict[str, ResearchState]:
    """``(branch_id, JSON)`` rows as the researchers' states, by branch id; a state that
    cannot be read is logged and left out."""
    branches: dict[str, ResearchState] = {}
    for branch_id, text in rows:
        try:
            branches[branch_id] = decode_state(text, research_id)
        except ResearchNotFoundError:
            log.warning("the saved state of %s/%s cannot be read", research_id, branch_id)
    return branches
