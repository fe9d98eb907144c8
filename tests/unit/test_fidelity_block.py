"""The report's fidelity block lists up to 100 degraded items and counts the rest; its warning
names what cut the text (the reading budget or the model's window) and the setting to change."""

from __future__ import annotations

from foundry_mcp.context.fidelity.bookkeeping import (
    READ_BY_BUDGET,
    finish_phase,
    low_fidelity_warning,
    make_record,
    record_item,
)
from foundry_mcp.context.fidelity.records import ContentFidelity
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


def _cut(method: str, kept: int, level: ContentLevel = ContentLevel.KEY_POINTS) -> ContentFidelity:
    return make_record(
        item_type="source",
        original_tokens=1000,
        current_tokens=kept,
        level=level,
        method=method,
        phase="analysis",
        iteration=1,
    )


def test_pages_the_reading_budget_read_in_part_are_said_to_be_its_choice() -> None:
    said = low_fidelity_warning(0.3, [_cut(READ_BY_BUDGET, 100)] * 3 + [_cut("full", 1000)])
    assert said.startswith("Content fidelity is 0.30 (compressed): the reading budget read")
    assert "of 3 page(s)" in said
    assert "reading_budget" in said and "deep_research_reading_budget" in said
    assert "effort='deep'" in said
    assert "window" not in said and "deep_research_max_sources" not in said


def test_text_shortened_to_fit_the_window_names_the_window() -> None:
    for method in ("selection", "summary", "truncation", "dropped"):
        said = low_fidelity_warning(0.2, [_cut(method, 100)])
        assert "to fit the model's context window" in said
        assert "Reduce deep_research_max_sources" in said and "reading budget" not in said


def test_both_causes_are_said_the_one_that_cut_more_first() -> None:
    budget_more = low_fidelity_warning(
        0.3, [_cut(READ_BY_BUDGET, 100)] * 3 + [_cut("summary", 800)]
    )
    assert budget_more.index("reading budget read") < budget_more.index("1 item(s) were shortened")
    window_more = low_fidelity_warning(0.3, [_cut(READ_BY_BUDGET, 900), _cut("summary", 100)])
    assert window_more.index("1 item(s) were shortened") < window_more.index("reading budget read")
    for said in (budget_more, window_more):
        assert "raise reading_budget" in said and "larger context window" in said


def test_the_research_carries_one_fidelity_warning_the_latest() -> None:
    state = ResearchState(query="q", llm_provider="openai", llm_model="gpt-4.1-mini")
    state.warn("Another warning.")
    for n in range(3):  # three analysis calls, each reading pages in part
        record_item(state, f"src-{n}", _cut(READ_BY_BUDGET, 100 + n), [])
        finish_phase(state, "analysis", [f"src-{n}"], 100, 10_000, [], accumulate=True)
    fidelity = [w for w in state.warnings if w.startswith("Content fidelity is")]
    assert len(fidelity) == 1 and "of 3 page(s)" in fidelity[0]
    assert state.warnings[0] == "Another warning."
    for n in range(6):  # the synthesis's findings, whole: fidelity back above the line
        record_item(state, f"fnd-{n}", _cut("full", 1000, ContentLevel.FULL), [])
    finish_phase(state, "synthesis", [f"fnd-{n}" for n in range(6)], 100, 10_000, [])
    assert state.warnings == ["Another warning."]
