"""Price lookup, usage totals, the cost ceiling, and the research LLM's routing and fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.config import DEFAULT_MODELS, load_settings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.research.llm.calls import CallLog, LLMRoute, ResearchLLM, route_group
from foundry_mcp.research.models import (
    MAX_LLM_CALL_RECORDS,
    LLMCallRecord,
    LLMUsage,
    Phase,
    ResearchState,
)
from foundry_mcp.research.pricing import PriceTable, normalise_model, shipped_prices
from foundry_mcp.research.service.payloads.status import status_payload, usage_payload

pytestmark = pytest.mark.anyio

# --------------------------------------------------------------------------- price table


@pytest.mark.parametrize(("provider", "model"), sorted(DEFAULT_MODELS.items()))
def test_the_shipped_table_prices_every_default_model(provider: str, model: str) -> None:
    # Read from the defaults themselves: a new default model without a row fails here.
    price = PriceTable().price(provider, model)
    assert price is not None and price.source == "table", f"{provider}:{model} has no price row"
    assert 0 < price.input_per_mtok < price.output_per_mtok
    assert shipped_prices().as_of


def test_cost_is_per_million_tokens() -> None:
    price = PriceTable().price("openai", "gpt-4.1-mini")
    assert price is not None
    expected = (1_000_000 * price.input_per_mtok + 500_000 * price.output_per_mtok) / 1e6
    assert PriceTable().cost("openai", ("gpt-4.1-mini",), 1_000_000, 500_000) == expected


@pytest.mark.parametrize(
    ("model", "short"),
    [
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("openai/GPT-4o", "gpt-4o"),
        ("gemini-2.5-flash", "gemini-2.5-flash"),
    ],
)
def test_dated_and_vendor_names_find_their_model(model: str, short: str) -> None:
    assert normalise_model(model) == short
    assert PriceTable().price("any", model) == PriceTable().price("any", short)


def test_a_new_model_of_a_known_family_gets_the_family_price() -> None:
    price = PriceTable().price("anthropic", "claude-sonnet-9")
    assert price is not None and price.source == "family"
    assert (price.input_per_mtok, price.output_per_mtok) == (3.0, 15.0)


def test_unknown_models_have_no_price() -> None:
    assert PriceTable().price("ollama", "llama3.1:8b") is None
    assert PriceTable().cost("ollama", ("llama3.1:8b", None), 100, 100) is None


def test_configured_prices_win_provider_model_first(tmp_path: Path) -> None:
    (tmp_path / ".foundry-mcp.toml").write_text(
        '[pricing."ollama:llama3.1"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n\n'
        '[pricing."gpt-4.1-mini"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n\n'
        '[pricing."work:gpt-4.1-mini"]\ninput_per_mtok = 5\noutput_per_mtok = 6\n'
    )
    table = PriceTable.from_settings(load_settings(env={}, cwd=tmp_path, home=tmp_path))
    local = table.price("ollama", "llama3.1")
    assert local is not None and local.source == "config" and local.cost(10**6, 10**6) == 0
    assert table.cost("openai", ("gpt-4.1-mini-2025-04-14",), 10**6, 10**6) == 3.0
    assert table.cost("work", ("gpt-4.1-mini",), 10**6, 10**6) == 11.0
    # the answered model first, then the requested one
    assert table.cost("openai", ("unknown-model", "gpt-4.1-mini"), 10**6, 0) == 1.0


# --------------------------------------------------------------------------- usage totals


def _record(phase: str, provider: str, cost: float | None, tokens: int = 10) -> LLMCallRecord:
    return LLMCallRecord(
        provider=provider,
        model="m",
        phase=phase,
        purpose=phase,
        input_tokens=tokens,
        output_tokens=tokens,
        cost_usd=cost,
    )


def test_usage_totals_by_phase_provider_and_model() -> None:
    usage = LLMUsage()
    usage.add(_record("planning", "openai", 0.01))
    usage.add(_record("analysis", "openai", 0.02))
    usage.add(_record("analysis", "anthropic", None))
    assert usage.spent_usd == pytest.approx(0.03)
    assert usage.total.calls == 3 and usage.total.unpriced_calls == 1
    assert usage.by_phase["analysis"].calls == 2
    assert usage.by_phase["analysis"].cost_usd == pytest.approx(0.02)
    assert usage.by_provider["anthropic"].unpriced_calls == 1
    assert usage.by_model["openai:m"].input_tokens == 20


def test_call_records_are_bounded_but_totals_are_not() -> None:
    usage = LLMUsage()
    for _ in range(MAX_LLM_CALL_RECORDS + 25):
        usage.add(_record("analysis", "openai", 0.001))
    assert len(usage.calls) == MAX_LLM_CALL_RECORDS
    assert usage.dropped_calls == 25
    assert usage.total.calls == MAX_LLM_CALL_RECORDS + 25


def test_status_and_usage_payloads_show_cost() -> None:
    state = ResearchState(query="q", llm_provider="openai", llm_model="m")
    state.llm_usage.add(_record("planning", "openai", 0.25))
    state.llm_usage.max_cost_usd = 1.0
    usage = status_payload(state)["usage"]
    assert usage == usage_payload(state)
    assert usage["total"]["cost_usd"] == 0.25
    assert usage["by_phase"]["planning"]["cost_usd"] == 0.25
    assert usage["by_provider"]["openai"]["calls"] == 1
    assert usage["max_cost_usd"] == 1.0 and usage["cost_ceiling_reached"] is False
    assert usage["cost_is_estimate"] is True


def test_states_saved_before_usage_records_still_load() -> None:
    raw = ResearchState(query="q", llm_provider="openai", llm_model="m").model_dump(mode="json")
    raw.pop("llm_usage")
    state = ResearchState.model_validate(raw)
    assert state.llm_usage.total.calls == 0


# --------------------------------------------------------------------------- the research LLM


class FakeLLM:
    """An adapter that answers, or fails with the given errors first."""

    def __init__(self, name: str, *errors: ProviderError, tokens: int = 1000) -> None:
        self.name = name
        self.errors = list(errors)
        self.requests: list[LLMRequest] = []
        self.tokens = tokens

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if self.errors:
            raise self.errors.pop(0)
        return LLMResponse(
            text=f"answer from {self.name}",
            model=request.model,
            provider=self.name,
            input_tokens=self.tokens,
            output_tokens=self.tokens,
        )

    async def aclose(self) -> None:
        pass


def _fail(provider: str, kind: str) -> ProviderError:
    return ProviderError(f"{provider} {kind}", provider=provider, kind=kind)


def _state(phase: Phase = Phase.PLANNING) -> ResearchState:
    state = ResearchState(query="q", llm_provider="own", llm_model="own-model")
    state.phase = phase
    return state


@pytest.mark.parametrize(
    ("purpose", "phase", "group"),
    [
        ("planning", "planning", "planning"),
        ("analysis", "analysis", "analysis"),
        ("synthesis", "synthesis", "synthesis"),
        ("verification", "synthesis", "synthesis"),
        ("refinement", "refinement", "refinement"),
        ("reflection:analysis", "analysis", "analysis"),
        ("reflection:gathering", "gathering", None),
        ("summarization", "gathering", "summarization"),
        ("compression", "analysis", "analysis"),
        ("compression", "gathering", None),
    ],
)
def test_route_groups(purpose: str, phase: str, group: str | None) -> None:
    assert route_group(purpose, phase) == group


async def test_purposes_use_their_phase_list_or_the_research_provider() -> None:
    own, planner, writer = FakeLLM("own"), FakeLLM("planner"), FakeLLM("writer")
    state = _state()
    llm = ResearchLLM(
        own,
        "own-model",
        state,
        CallLog(),
        routes={"planning": [LLMRoute(planner, "p-model")], "synthesis": [LLMRoute(writer, "w")]},
    )
    assert await llm.ask("planning", "s", "u", json_mode=True) == "answer from planner"
    assert planner.requests[0].model == "p-model"
    state.phase = Phase.SYNTHESIS
    assert await llm.ask("verification", "s", "u", json_mode=True) == "answer from writer"
    state.phase = Phase.ANALYSIS
    assert await llm.ask("analysis", "s", "u", json_mode=True) == "answer from own"
    assert llm.model_for("analysis") == ("own", "own-model")
    assert llm.model_for("planning") == ("planner", "p-model")
    assert state.llm_usage.by_phase["synthesis"].calls == 1


@pytest.mark.parametrize("kind", ["rate_limit", "transient", "circuit_open", "not_found", "auth"])
async def test_fallback_to_the_next_provider(kind: str) -> None:
    primary = FakeLLM("primary", _fail("primary", kind))
    backup = FakeLLM("backup")
    state = _state()
    events: list[tuple[str, dict[str, object]]] = []
    state.attach(lambda k, d: events.append((k, d)))
    llm = ResearchLLM(
        primary,
        "own-model",
        state,
        CallLog(),
        routes={"planning": [LLMRoute(primary, "a"), LLMRoute(backup, "b")]},
    )
    assert await llm.ask("planning", "s", "u", json_mode=True) == "answer from backup"
    (decision,) = [d for d in state.decisions if d.action == "provider_fallback"]
    assert decision.agent.value == "supervisor"
    assert decision.outputs == {"from": "primary:a", "to": "backup:b", "kind": kind}
    assert any(k == "provider_fallback" for k, _ in events)
    assert state.llm_usage.by_provider["backup"].calls == 1
    assert bool(state.warnings) is (kind == "auth")  # a rejected key is reported


@pytest.mark.parametrize("kind", ["bad_request", "context_overflow"])
async def test_no_fallback_for_request_problems(kind: str) -> None:
    primary = FakeLLM("primary", _fail("primary", kind))
    backup = FakeLLM("backup")
    llm = ResearchLLM(
        primary,
        "m",
        _state(),
        CallLog(),
        routes={"planning": [LLMRoute(primary, "a"), LLMRoute(backup, "b")]},
    )
    with pytest.raises(ProviderError) as caught:
        await llm.ask("planning", "s", "u", json_mode=True)
    assert caught.value.kind == kind and not backup.requests


async def test_when_every_provider_fails_the_last_error_is_raised() -> None:
    first = FakeLLM("first", _fail("first", "rate_limit"))
    second = FakeLLM("second", _fail("second", "transient"))
    llm = ResearchLLM(
        first,
        "m",
        _state(),
        CallLog(),
        routes={"planning": [LLMRoute(first, "a"), LLMRoute(second, "b")]},
    )
    with pytest.raises(ProviderError) as caught:
        await llm.ask("planning", "s", "u", json_mode=True)
    error = caught.value
    assert error.kind == "transient" and error.provider == "second"
    assert "first:a (rate_limit)" in error.message and "second:b (transient)" in error.message


async def test_a_repeated_fallback_is_one_decision_and_many_events() -> None:
    primary = FakeLLM("primary", *[_fail("primary", "circuit_open")] * 3)
    backup = FakeLLM("backup")
    state = _state()
    events: list[str] = []
    state.attach(lambda k, d: events.append(k))
    routes = {"planning": [LLMRoute(primary, "a"), LLMRoute(backup, "b")]}
    llm = ResearchLLM(primary, "m", state, CallLog(), routes=routes)
    for _ in range(3):
        await llm.ask("planning", "s", "u", json_mode=True)
    assert [d.action for d in state.decisions].count("provider_fallback") == 1
    assert events.count("provider_fallback") == 3


async def test_calls_are_priced_and_the_ceiling_stops_further_calls() -> None:
    llm_provider = FakeLLM("openai", tokens=1_000_000)  # $0.40 + $1.60 per call at list price
    state = _state()
    llm = ResearchLLM(
        llm_provider, "gpt-4.1-mini", state, CallLog(), prices=PriceTable(), max_cost_usd=3.0
    )
    await llm.ask("planning", "s", "u", json_mode=True)
    assert state.llm_usage.spent_usd == pytest.approx(2.0)
    await llm.ask("planning", "s", "u", json_mode=True)  # $2 < $3: still allowed
    with pytest.raises(ProviderError) as caught:
        await llm.ask("planning", "s", "u", json_mode=True)
    assert caught.value.kind == "budget"
    assert "max_cost_usd" in caught.value.remediation
    assert len(llm_provider.requests) == 2
    assert state.llm_usage.cost_ceiling_reached
    assert any("Cost ceiling reached" in w for w in state.warnings)
    record = state.llm_usage.calls[0]
    assert (record.provider, record.model, record.phase, record.cost_usd) == (
        "openai",
        "gpt-4.1-mini",
        "planning",
        pytest.approx(2.0),
    )


async def test_unpriced_calls_are_counted_not_guessed() -> None:
    state = _state()
    llm = ResearchLLM(
        FakeLLM("ollama"), "llama3", state, CallLog(), prices=PriceTable(), max_cost_usd=0.01
    )
    for _ in range(3):
        await llm.ask("planning", "s", "u", json_mode=True)
    assert state.llm_usage.total.unpriced_calls == 3
    assert state.llm_usage.spent_usd == 0
