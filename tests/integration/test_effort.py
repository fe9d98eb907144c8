"""Effort presets: one word sets how thorough a research is; explicit limits still win."""

from __future__ import annotations

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import InputError
from foundry_mcp.research.effort import PRESETS, Effort, check_effort
from foundry_mcp.runtime import research_runtime
from tests.fakes import ResearchBrain
from tests.support import TERMINAL, wait_until

QUESTION = "How do heat pumps perform in cold climates?"


async def _calls(settings: Settings, brain: ResearchBrain, **given: object) -> int:
    before = len(brain.history)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, **given)
        status = await wait_until(service, started["research_id"], TERMINAL)
    assert status["status"] == "completed", status["error"]
    return len(brain.history) - before


@pytest.mark.anyio
async def test_quick_makes_far_fewer_llm_calls_than_standard(
    settings: Settings, brain: ResearchBrain
) -> None:
    standard = await _calls(settings, brain, effort="standard")
    quick = await _calls(settings, brain, effort="quick")
    assert quick * 2 <= standard, (quick, standard)


@pytest.mark.anyio
async def test_a_preset_sets_what_the_caller_left_out(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        quick = await service.start(QUESTION, effort="QUICK", max_sources_per_query=5)
        deep = await service.start(QUESTION, effort="deep")
        states = [service.store.load(s["research_id"]) for s in (quick, deep)]
        for started in (quick, deep):
            await wait_until(service, started["research_id"], TERMINAL)
    assert quick["effort"] == "quick" and deep["effort"] == "deep"
    fast, thorough = states
    assert (fast.limits.max_iterations, fast.limits.max_sub_queries) == (1, 2)
    assert fast.limits.max_sources_per_query == 5  # given explicitly: it wins
    assert fast.mode.value == "simple" and fast.options.enable_reflection is False
    assert fast.options.max_verified_claims == 20
    assert (thorough.limits.max_iterations, thorough.limits.max_sub_queries) == (4, 6)
    assert thorough.options.enable_reflection is True and thorough.options.effort == "deep"
    # How much of the pages a round reads: quick a little, deep whole pages.
    assert fast.limits.reading_budget == 14_000 and thorough.limits.reading_budget is None


@pytest.mark.anyio
async def test_the_reading_budget_comes_from_the_effort_unless_the_caller_gives_one(
    settings: Settings,
) -> None:
    async with research_runtime(settings, warm=False) as service:
        started = {
            "standard": await service.start(QUESTION),
            "deep, bounded": await service.start(QUESTION, effort="deep", reading_budget=5_000),
            "whole pages": await service.start(QUESTION, effort="quick", reading_budget=0),
        }
        budgets = {
            name: service.store.load(s["research_id"]).limits.reading_budget
            for name, s in started.items()
        }
        with pytest.raises(InputError) as refused:
            await service.start(QUESTION, reading_budget=1_000)
        for s in started.values():
            await wait_until(service, s["research_id"], TERMINAL)
    assert budgets == {
        "standard": settings.research.deep_research_reading_budget,
        "deep, bounded": 5_000,
        "whole pages": None,
    }
    assert settings.research.deep_research_reading_budget == 32_000
    assert refused.value.details["field"] == "reading_budget"
    assert "0" in refused.value.message and "whole pages" in refused.value.message


def test_standard_is_the_configuration_and_an_unknown_effort_is_refused() -> None:
    assert PRESETS[Effort.STANDARD].limits(max_iterations=None) == {
        "max_iterations": None,
        "max_sub_queries": None,
        "max_sources_per_query": None,
        "reading_budget": None,
    }
    assert check_effort(None) is None and check_effort(" Deep ") is Effort.DEEP
    with pytest.raises(InputError) as refused:
        check_effort("thorough")
    assert refused.value.details["field"] == "effort"
    assert "quick" in refused.value.remediation
