"""Priority allocation: property-based checks of the budget, the guardrails and the order."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foundry_mcp.context.allocation import allocate, level_cost, minimum_cost
from foundry_mcp.context.errors import ContextExceededError
from foundry_mcp.context.levels import ContentLevel, fidelity_band, lowest_level_keeping
from foundry_mcp.context.priority import (
    ContentItem,
    Tier,
    allowed_levels,
    assign_tiers,
    priority_score,
)

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def content_items(draw: st.DrawFn) -> list[ContentItem]:
    count = draw(st.integers(min_value=0, max_value=30))
    items = []
    for n in range(count):
        kind = draw(st.sampled_from(["source", "source", "finding"]))
        items.append(
            ContentItem(
                item_id=f"{kind[:3]}-{n:04d}",
                item_type=kind,
                tokens=draw(st.integers(min_value=0, max_value=20_000)),
                overhead=draw(st.integers(min_value=0, max_value=80)),
                relevance=draw(unit),
                recency=draw(unit),
                quality=draw(unit),
                user_priority=draw(unit),
                protected=draw(st.booleans()) and draw(st.booleans()),
                confidence_rank=draw(st.integers(min_value=0, max_value=4))
                if kind == "finding"
                else 0,
                high_confidence=kind == "finding" and draw(st.booleans()),
                floor=draw(st.sampled_from([0, 12, 24])),
            )
        )
    return items


budgets = st.integers(min_value=0, max_value=200_000)


@settings(max_examples=300, deadline=None)
@given(items=content_items(), budget=budgets, allow_dropping=st.booleans())
def test_allocation_never_exceeds_the_budget_and_fails_only_when_minimums_do(
    items: list[ContentItem], budget: int, allow_dropping: bool
) -> None:
    needed = minimum_cost(assign_tiers(items, allow_dropping=allow_dropping))
    if needed > budget:
        with pytest.raises(ContextExceededError) as raised:
            allocate(items, budget, allow_dropping=allow_dropping)
        assert raised.value.details["minimum_needed"] == needed
        return
    allocation = allocate(items, budget, allow_dropping=allow_dropping)
    assert allocation.used <= budget
    assert allocation.used == sum(
        level_cost(item, allocation.levels[item.item_id]) for item in allocation.items
    )
    assert set(allocation.levels) == {item.item_id for item in items}


@settings(max_examples=300, deadline=None)
@given(items=content_items(), budget=budgets, allow_dropping=st.booleans())
def test_guardrails_hold_in_every_allocation(
    items: list[ContentItem], budget: int, allow_dropping: bool
) -> None:
    try:
        allocation = allocate(items, budget, allow_dropping=allow_dropping)
    except ContextExceededError:
        return
    sources = sorted(
        (i for i in items if i.item_type == "source"), key=lambda i: (-i.priority, i.item_id)
    )
    top = {i.item_id for i in sources[:5]}
    for item in items:
        level = allocation.levels[item.item_id]
        if item.item_id in top:
            assert level.ratio >= 0.3, "a top-5 source fell below 30% fidelity"
        if item.protected:
            assert level.rank >= ContentLevel.HEADLINE.rank, "a protected item was dropped"
        if not allow_dropping:
            assert level is not ContentLevel.DROPPED


@settings(max_examples=300, deadline=None)
@given(items=content_items(), budget=budgets, allow_dropping=st.booleans())
def test_an_earlier_item_is_below_a_later_one_only_when_it_could_not_grow(
    items: list[ContentItem], budget: int, allow_dropping: bool
) -> None:
    """Ordering: tiers, confidence and priority decide who gets room first.

    When an item that comes earlier in allocation order ended at a lower level than a later
    one, it is because its next level costs more than what was left.
    """
    try:
        allocation = allocate(items, budget, allow_dropping=allow_dropping)
    except ContextExceededError:
        return
    ordered = allocation.items
    assert [i.sort_key() for i in ordered] == sorted(i.sort_key() for i in ordered)
    for position, first in enumerate(ordered):
        level = allocation.levels[first.item_id]
        higher = [lv for lv in allowed_levels(first) if lv.rank > level.rank]
        if not higher:
            continue
        step = level_cost(first, higher[-1]) - allocation.costs[first.item_id]
        for later in ordered[position + 1 :]:
            if allocation.levels[later.item_id].rank > level.rank:
                assert step > allocation.remaining


@settings(max_examples=200, deadline=None)
@given(
    items=content_items(),
    budget=budgets,
    allow_dropping=st.booleans(),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_allocation_is_deterministic_and_independent_of_input_order(
    items: list[ContentItem], budget: int, allow_dropping: bool, seed: int
) -> None:
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    try:
        first = allocate(items, budget, allow_dropping=allow_dropping)
    except ContextExceededError:
        with pytest.raises(ContextExceededError):
            allocate(shuffled, budget, allow_dropping=allow_dropping)
        return
    second = allocate(shuffled, budget, allow_dropping=allow_dropping)
    again = allocate(items, budget, allow_dropping=allow_dropping)
    assert first.levels == second.levels == again.levels
    assert first.costs == second.costs


# --------------------------------------------------------------------------- examples


def test_the_priority_formula_weights_the_four_signals() -> None:
    assert priority_score(1, 0, 0, 0) == pytest.approx(0.4)
    assert priority_score(0, 1, 0, 0) == pytest.approx(0.3)
    assert priority_score(0, 0, 1, 0) == pytest.approx(0.2)
    assert priority_score(0, 0, 0, 1) == pytest.approx(0.1)
    assert priority_score(2, -1, 0.5, 0.5) == pytest.approx(0.4 + 0.1 + 0.05)


def test_everything_fits_at_full_fidelity_when_the_budget_allows() -> None:
    items = [ContentItem(f"src-{n}", "source", tokens=1000, overhead=20) for n in range(8)]
    allocation = allocate(items, 8 * 1020, allow_dropping=False)
    assert set(allocation.levels.values()) == {ContentLevel.FULL}
    assert allocation.remaining == 0


def test_protected_items_get_room_before_the_top_sources() -> None:
    items = [
        ContentItem("src-user", "source", tokens=1000, relevance=0.0, protected=True),
        *(ContentItem(f"src-{n}", "source", tokens=1000, relevance=0.9) for n in range(5)),
    ]
    allocation = allocate(items, 1000 + 5 * 400, allow_dropping=False)
    assert allocation.levels["src-user"] is ContentLevel.FULL
    assert all(allocation.levels[f"src-{n}"] is ContentLevel.COMPRESSED for n in range(5))


def test_high_confidence_findings_keep_fidelity_before_speculation() -> None:
    strong = ContentItem(
        "fnd-strong", "finding", tokens=100, relevance=0.1, confidence_rank=3, high_confidence=True
    )
    medium = ContentItem("fnd-medium", "finding", tokens=100, relevance=0.9, confidence_rank=2)
    guess = ContentItem("fnd-guess", "finding", tokens=100, relevance=1.0, confidence_rank=0)
    ordered = assign_tiers([guess, medium, strong], allow_dropping=True)
    assert [i.item_id for i in ordered] == ["fnd-strong", "fnd-medium", "fnd-guess"]
    assert ordered[0].tier is Tier.PRIORITY
    allocation = allocate([guess, medium, strong], 200, allow_dropping=True)
    assert allocation.levels["fnd-strong"] is ContentLevel.FULL
    assert allocation.levels["fnd-medium"] is ContentLevel.FULL
    assert allocation.levels["fnd-guess"] is ContentLevel.DROPPED


def test_dropping_needs_allow_content_dropping() -> None:
    items = [ContentItem(f"src-{n}", "source", tokens=1000) for n in range(12)]
    with pytest.raises(ContextExceededError) as raised:
        allocate(items, 5 * 400 + 6 * 100, allow_dropping=False)
    assert "allow_content_dropping" in raised.value.remediation
    allocation = allocate(items, 5 * 400 + 6 * 100, allow_dropping=True)
    assert allocation.dropped  # the regular tail was dropped, the top five kept at 40%+


def test_levels_and_bands() -> None:
    assert lowest_level_keeping(0.3) is ContentLevel.COMPRESSED
    assert lowest_level_keeping(0.1) is ContentLevel.HEADLINE
    assert ContentLevel.CONDENSED.below() is ContentLevel.COMPRESSED
    assert ContentLevel.DROPPED.below() is None
    assert [fidelity_band(x) for x in (1.0, 0.9, 0.89, 0.6, 0.59, 0.3, 0.29, 0.0)] == [
        "full",
        "full",
        "condensed",
        "condensed",
        "compressed",
        "compressed",
        "minimal",
        "minimal",
    ]


# --------------------------------------------------------------------------- fidelity


def test_fidelity_is_recorded_banded_and_never_regresses_silently() -> None:
    from foundry_mcp.context.fidelity.bookkeeping import finish_phase, make_record, record_item
    from foundry_mcp.research.models import ResearchState
    from foundry_mcp.research.service.payloads.status import fidelity_block

    state = ResearchState(query="q", llm_provider="openai", llm_model="gpt-4o")
    assert fidelity_block(state)["score"] is None
    regressions: list[str] = []
    for item_id, level, current in (
        ("fnd-a", ContentLevel.FULL, 100),
        ("fnd-b", ContentLevel.FULL, 50),
    ):
        record = make_record(
            item_type="finding",
            original_tokens=100 if item_id == "fnd-a" else 50,
            current_tokens=current,
            level=level,
            method="full",
            phase="synthesis",
            iteration=1,
        )
        record_item(state, item_id, record, regressions)
    finish_phase(state, "synthesis", ["fnd-a", "fnd-b"], 150, 1000, regressions)
    block = fidelity_block(state)
    assert block["score"] == 1.0 and block["band"] == "full" and not state.warnings

    state.iteration = 2
    regressions = []
    record_item(
        state,
        "fnd-a",
        make_record(
            item_type="finding",
            original_tokens=100,
            current_tokens=10,
            level=ContentLevel.HEADLINE,
            method="truncation",
            phase="synthesis",
            iteration=2,
        ),
        regressions,
    )
    record_item(
        state,
        "fnd-b",
        make_record(
            item_type="finding",
            original_tokens=50,
            current_tokens=0,
            level=ContentLevel.DROPPED,
            method="dropped",
            phase="synthesis",
            iteration=2,
        ),
        regressions,
    )
    finish_phase(state, "synthesis", ["fnd-a", "fnd-b"], 30, 1000, regressions)
    block = fidelity_block(state)
    assert block["score"] == pytest.approx(0.05) and block["band"] == "minimal"
    assert block["warning"] and "Reduce deep_research_max_sources" in block["warning"]
    assert block["items_dropped"] == 1 and block["phases"]["synthesis"]["iteration"] == 2
    assert any("Fidelity fell in iteration 2 for 2 item(s)" in w for w in state.warnings)
    assert any("Research fidelity fell from 1.00 to 0.05" in w for w in state.warnings)
    assert any("Content fidelity is 0.05 (minimal)" in w for w in state.warnings)


def test_a_research_that_already_drops_content_is_not_told_to_allow_dropping() -> None:
    from foundry_mcp.context.errors import ContextExceededError

    items = [ContentItem(f"s{n}", "source", 1000, overhead=50, relevance=0.9) for n in range(6)]
    for allow_dropping, advised in ((False, True), (True, False)):
        with pytest.raises(ContextExceededError) as raised:
            allocate(items, 100, allow_dropping=allow_dropping)
        assert ("allow_content_dropping" in raised.value.remediation) is advised
        assert "larger context window" in raised.value.remediation
