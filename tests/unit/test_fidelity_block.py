"""The report's fidelity block lists up to 100 degraded items and counts the rest."""

from __future__ import annotations

from foundry_mcp.context.fidelity.bookkeeping import finish_phase, make_record
from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.service.payloads.status import REPORT_ITEMS, fidelity_block


def _state(degraded: int, full: int) -> ResearchState:
    state = ResearchState(query="q", llm_provider="openai", llm_model="gpt-4.1-mini")
    for n in range(degraded + full):
        level = ContentLevel.CONDENSED if n < degraded else ContentLevel.FULL
        state.content_fidelity[f"src-{n:08x}"] = make_record(
            item_type="source",
            original_tokens=1000,
            current_tokens=700 if n < degraded else 1000,
            level=level,
            method="summarization" if n < degraded else "full",
            phase="analysis",
            iteration=1,
        )
    ids = list(state.content_fidelity)
    finish_phase(state, "analysis", ids, 1000, 200_000, [])
    return state


def test_up_to_a_hundred_degraded_items_are_listed_and_the_rest_counted() -> None:
    block = fidelity_block(_state(degraded=130, full=5), include_items=True)
    assert REPORT_ITEMS == 100
    assert len(block["content_fidelity"]) == 100
    assert block["content_fidelity_not_shown"] == 30
    assert all(r["current_level"] != "full" for r in block["content_fidelity"].values())


def test_a_short_list_is_shown_whole() -> None:
    block = fidelity_block(_state(degraded=3, full=5), include_items=True)
    assert len(block["content_fidelity"]) == 3 and block["content_fidelity_not_shown"] == 0
