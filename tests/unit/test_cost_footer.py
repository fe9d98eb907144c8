"""The report as served ends with what its LLM calls read, wrote and cost, phase by phase."""

from __future__ import annotations

from foundry_mcp.research.export.footer import cost_footer, with_cost_footer
from foundry_mcp.research.models import LLMCallRecord, ResearchState


def call(phase: str, prompt: int, completion: int, cost: float | None) -> LLMCallRecord:
    return LLMCallRecord(
        provider="openai",
        model="gpt-4.1-mini",
        phase=phase,
        purpose=phase,
        input_tokens=prompt,
        output_tokens=completion,
        cost_usd=cost,
    )


def test_the_footer_gives_tokens_and_cost_per_phase_in_the_research_order() -> None:
    state = ResearchState(
        query="q", llm_provider="openai", llm_model="gpt-4.1-mini", report="# Report\n\nText [1].\n"
    )
    for record in (
        call("synthesis", 3_000, 800, 0.002),
        call("planning", 500, 200, 0.0005),
        call("analysis", 40_000, 1_500, 0.018),
        call("analysis", 20_000, 700, 0.009),
    ):
        state.llm_usage.add(record)
    served = with_cost_footer(state)
    assert served.startswith("# Report\n\nText [1].\n\n---\n*Cost: ")
    footer = cost_footer(state)
    assert "63,500 prompt and 3,200 completion tokens in 4 calls, about $0.0295" in footer
    assert (
        footer.index("planning 500 + 200 ($0.0005)")
        < footer.index("analysis 60,000 + 2,200 ($0.0270)")
        < footer.index("synthesis 3,000 + 800 ($0.0020)")
    )


def test_a_model_without_a_price_is_said_unpriced_not_free() -> None:
    state = ResearchState(
        query="q", llm_provider="openai", llm_model="gpt-4.1-mini", report="Report."
    )
    state.llm_usage.add(call("analysis", 1_000, 100, None))
    state.llm_usage.add(call("synthesis", 1_000, 100, 0.001))
    footer = cost_footer(state)
    assert "analysis 1,000 + 100 (cost unknown (no price known for the model))" in footer
    assert "1 unpriced call(s) not counted" in footer


def test_no_call_no_footer() -> None:
    state = ResearchState(
        query="q", llm_provider="openai", llm_model="gpt-4.1-mini", report="Report.\n"
    )
    assert with_cost_footer(state) == "Report.\n"


def test_a_revised_version_says_what_it_cost_on_its_own() -> None:
    from foundry_mcp.research.models import ReportVersion, RevisionKind, VersionCost

    state = ResearchState(
        query="q", llm_provider="openai", llm_model="gpt-4.1-mini", report="# Brief\n\nB [1].\n"
    )
    state.llm_usage.add(call("analysis", 40_000, 1_500, 0.018))
    state.llm_usage.add(call("synthesis", 3_000, 800, 0.002))
    brief_cost = VersionCost(search_calls=0)
    brief_cost.total.add(call("synthesis", 3_000, 800, 0.002))
    state.versions = [
        ReportVersion(number=1, report="# Report\n\nR [1].\n"),
        ReportVersion(number=2, kind=RevisionKind.REWRITE, report=state.report, cost=brief_cost),
    ]
    served = with_cost_footer(state)
    assert "*Cost: 43,000 prompt" in served  # the research's, every version included
    assert "*Version 2 (rewrite): 3,000 prompt and 800 completion tokens in 1 call ($0.0020)" in (
        served
    )
    assert "and 0 searches" in served
    state.report = state.versions[0].report  # the first version shown: no line of its own
    assert "*Version" not in with_cost_footer(state)
