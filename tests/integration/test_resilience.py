"""Resilience, fallback, cost and health through whole researches against the loopback fakes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from foundry_mcp.cli import main as cli
from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import ProviderNotConfiguredError
from foundry_mcp.runtime import research_runtime
from foundry_mcp.server import create_server
from tests.e2e.conftest import call
from tests.fakes import (
    FakeHTTPServer,
    FakeResponse,
    ResearchBrain,
    fake_anthropic,
    fake_gemini,
)
from tests.support import wait_until

pytestmark = pytest.mark.anyio

TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted"}
PHASES = ("planning", "analysis", "synthesis", "refinement")


def _settings(env: dict[str, str], toml: str, **more_env: str) -> Settings:
    """Settings from ``research_env`` with its configuration file replaced by ``toml``."""
    Path(env["FOUNDRY_MCP_CONFIG"]).write_text(toml)
    env = {**env, **more_env}
    home = Path(env["HOME"])
    return load_settings(env=env, cwd=home, home=home)


async def _research(settings: Settings, query: str, **limits: Any) -> tuple[dict[str, Any], Any]:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(query, **limits)
        status = await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
        events = (await service.events(started["research_id"], limit=500))["events"]
    return status, (state, events)


def _always_429(_: Any) -> FakeResponse:
    return FakeResponse(
        429,
        {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}},
        {"retry-after": "0.05"},
    )


# --------------------------------------------------------------------------- fallback


async def test_phases_complete_on_the_fallback_when_the_primary_is_rate_limited_forever(
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    anthropic_server: FakeHTTPServer,
    brain: ResearchBrain,
) -> None:
    openai_server.route("POST", "/v1/chat/completions", _always_429)
    phase_lists = "".join(
        f'deep_research_{phase}_provider = "openai:gpt-4.1-mini"\n'
        f'deep_research_{phase}_providers = ["anthropic:claude-test"]\n'
        for phase in PHASES
    )
    settings = _settings(
        research_env,
        "[providers.openai]\nmax_retries = 1\ncircuit_breaker_failures = 4\n\n"
        "[providers.anthropic]\nmax_retries = 0\n\n"
        "[providers.tavily]\nmax_retries = 0\n\n"
        f"[research]\n{phase_lists}",
        ANTHROPIC_API_KEY="sk-ant-test-secret",
        ANTHROPIC_BASE_URL=anthropic_server.base_url,
    )
    status, (state, events) = await _research(settings, "How do glaciers move?", max_iterations=2)

    assert status["status"] == "completed", status["error"]
    assert state.report
    fallbacks = [d for d in state.decisions if d.action == "provider_fallback"]
    assert fallbacks, "the switch to the fallback is recorded"
    assert fallbacks[0].outputs == {
        "from": "openai:gpt-4.1-mini",
        "to": "anthropic:claude-test",
        "kind": "rate_limit",
    }
    # Once the primary's circuit opened, calls skipped it without asking it again.
    assert any(d.outputs and d.outputs.get("kind") == "circuit_open" for d in fallbacks)
    # Concurrent calls may each have been sent before the fourth failure opened it.
    primary_calls = len(openai_server.requests_to("/v1/chat/completions"))
    assert 4 <= primary_calls <= 4 + 2 * state.limits.max_concurrent
    kinds = [e["kind"] for e in events]
    assert "provider_fallback" in kinds and "llm_retry" in kinds
    usage = status["usage"]
    assert set(usage["by_provider"]) == {"anthropic"}
    assert {"planning", "analysis", "synthesis"} <= set(usage["by_phase"])
    assert brain.calls["planner"] == 1 and brain.calls["writer"] >= 1


async def test_when_every_provider_of_a_phase_fails_the_run_fails_resumably(
    research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    openai_server.route("POST", "/v1/chat/completions", _always_429)
    settings = _settings(
        research_env,
        "[providers.openai]\nmax_retries = 0\n\n"
        '[providers.backup]\ntype = "openai"\nmax_retries = 0\napi_key = "sk-backup-secret"\n'
        f'base_url = "{openai_server.base_url}/v1"\n\n'
        '[research]\ndeep_research_planning_providers = ["openai", "backup:gpt-4.1-nano"]\n',
    )
    status, _ = await _research(settings, "What is a neutron star?")
    assert status["status"] == "failed"
    assert "Every LLM provider for planning failed" in status["error"]
    assert "openai:gpt-4.1-mini (rate_limit)" in status["error"]
    assert "sk-backup-secret" not in json.dumps(status)
    assert status["next_action"].startswith("Resume it")


async def test_phase_provider_specs_are_checked_when_a_research_starts(
    research_env: dict[str, str],
) -> None:
    settings = _settings(
        research_env, '[research]\ndeep_research_analysis_providers = ["openai", "nonsense"]\n'
    )
    async with research_runtime(settings, warm=False) as service:
        with pytest.raises(ProviderNotConfiguredError) as caught:
            await service.start("What is a pulsar?")
    assert "[research] deep_research_analysis_providers" in caught.value.message
    assert "nonsense" in caught.value.message

    settings = _settings(research_env, '[research]\ndeep_research_synthesis_provider = "gemini"\n')
    async with research_runtime(settings, warm=False) as service:
        with pytest.raises(ProviderNotConfiguredError) as caught:
            await service.start("What is a pulsar?")
    assert "deep_research_synthesis_provider" in caught.value.message
    assert "GEMINI_API_KEY" in caught.value.remediation

    # Summarization lists are token management's: an unusable entry is skipped with a warning.
    settings = _settings(research_env, '[research]\nsummarization_providers = ["nonsense"]\n')
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What is a pulsar?", max_iterations=1)
        assert started["phase_providers"] == {}
        status = await wait_until(service, started["research_id"], TERMINAL)
    assert status["status"] == "completed", status["error"]


# --------------------------------------------------------------------------- search resilience


async def test_search_failures_are_retried_by_the_policy(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    settings = _settings(research_env, "[providers.tavily]\nmax_retries = 2\n")
    tavily_server.fail_next(503, times=2)
    status, (state, _) = await _research(settings, "How do tides form?", max_iterations=1)
    assert status["status"] == "completed"
    assert all(sq.status.value == "completed" for sq in state.sub_queries)
    assert len(tavily_server.requests_to("/search")) == len(state.sub_queries) + 2


# --------------------------------------------------------------------------- Gemini


async def test_a_whole_research_runs_on_gemini(
    research_env: dict[str, str], brain: ResearchBrain
) -> None:
    with fake_gemini(brain, api_key="gm-test-secret-key") as gemini:
        settings = _settings(
            research_env,
            "[providers.gemini]\nmax_retries = 0\n",
            GEMINI_API_KEY="gm-test-secret-key",
            GOOGLE_GEMINI_BASE_URL=gemini.base_url,
            FOUNDRY_MCP_DEFAULT_PROVIDER="gemini",
        )
        status, (state, _) = await _research(settings, "How do bees navigate?", max_iterations=1)
    assert status["status"] == "completed", status["error"]
    assert status["provider"] == "gemini:gemini-2.5-flash"
    assert state.report and brain.calls["writer"] >= 1
    assert status["usage"]["by_provider"]["gemini"]["cost_usd"] > 0  # priced from the table


# --------------------------------------------------------------------------- cost


async def test_usage_and_cost_in_status_and_report(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("How do wind turbines work?", max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        report, _ = await service.report(started["research_id"])
    usage = status["usage"]
    assert usage["total"]["cost_usd"] > 0 and usage["total"]["unpriced_calls"] == 0
    assert usage["by_provider"]["openai"]["calls"] == usage["total"]["calls"] > 0
    assert {"planning", "analysis", "synthesis"} <= set(usage["by_phase"])
    assert sum(p["cost_usd"] for p in usage["by_phase"].values()) == pytest.approx(
        usage["total"]["cost_usd"], abs=1e-5
    )
    assert report["usage"]["total"]["cost_usd"] == usage["total"]["cost_usd"]


async def test_cost_ceiling_after_the_report_ends_completed_with_a_warning(
    research_env: dict[str, str], brain: ResearchBrain
) -> None:
    settings = _settings(
        research_env,
        "[providers.openai]\nmax_retries = 0\n\n"
        '[pricing."gpt-pricey"]\ninput_per_mtok = 1000000\noutput_per_mtok = 1000000\n\n'
        "[research]\nmax_cost_usd = 0.5\n"
        'deep_research_synthesis_provider = "openai:gpt-pricey"\n',
    )
    status, (state, _) = await _research(settings, "How do tides form?", max_iterations=2)
    assert status["status"] == "completed", status["error"]
    assert state.report, "the report written before the ceiling is kept"
    assert any(w.startswith("Cost ceiling reached") for w in status["warnings"])
    assert status["usage"]["cost_ceiling_reached"] is True
    assert status["usage"]["max_cost_usd"] == 0.5
    assert brain.calls["refiner"] == 0  # no call was made past the ceiling
    assert state.iteration == 1


async def test_cost_ceiling_before_any_report_fails_clearly(
    research_env: dict[str, str], brain: ResearchBrain
) -> None:
    settings = _settings(
        research_env,
        "[providers.openai]\nmax_retries = 0\n\n"
        '[pricing."openai:gpt-4.1-mini"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n\n'
        "[research]\nmax_cost_usd = 0.01\n",
    )
    status, (state, _) = await _research(settings, "How do tides form?", max_iterations=1)
    assert status["status"] == "failed"
    assert "cost ceiling" in status["error"] and "max_cost_usd" in status["error"]
    assert status["usage"]["cost_ceiling_reached"] is True
    assert brain.calls["planner"] == 1 and brain.calls["analyzer"] == 0
    assert state.report is None

    # Raising the ceiling and resuming continues where the run stopped.
    settings = _settings(
        research_env,
        "[providers.openai]\nmax_retries = 0\n\n"
        '[pricing."openai:gpt-4.1-mini"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n\n'
        "[research]\nmax_cost_usd = 1000\n",
    )
    async with research_runtime(settings, warm=False) as service:
        await service.resume(state.id)
        status = await wait_until(service, state.id, TERMINAL)
    assert status["status"] == "completed", status["error"]
    assert status["usage"]["cost_ceiling_reached"] is False
    assert status["usage"]["max_cost_usd"] == 1000
    assert brain.calls["planner"] == 1  # planning was not paid for twice


# --------------------------------------------------------------------------- health


def _client(settings: Settings) -> Client:
    return Client(create_server(lambda: settings), mode="legacy")


async def test_health_through_mcp_reports_every_provider_and_the_fixes(
    research_env: dict[str, str],
) -> None:
    with fake_anthropic(api_key="sk-ant-the-right-one") as anthropic:
        settings = _settings(
            research_env,
            "[providers.openai]\nmax_retries = 0\n",
            ANTHROPIC_API_KEY="sk-ant-a-wrong-one",
            ANTHROPIC_BASE_URL=anthropic.base_url,
        )
        async with _client(settings) as client:
            envelope = await call(client, action="health")
    text = json.dumps(envelope)
    for secret in ("sk-test-secret-openai", "tvly-test-secret", "sk-ant-a-wrong-one"):
        assert secret not in text
    assert envelope["success"], envelope
    data = envelope["data"]
    by_name = {p["name"]: p for p in data["providers"]}
    assert data["ok"] is True and data["problems"] == []
    openai = by_name["openai"]
    assert (openai["status"], openai["in_use"], openai["key_present"]) == ("ok", True, True)
    assert openai["role"] == "llm" and openai["model"] == "gpt-4.1-mini"
    assert by_name["tavily"]["status"] == "ok" and by_name["tavily"]["role"] == "search"
    anthropic_entry = by_name["anthropic"]
    assert anthropic_entry["status"] == "error" and anthropic_entry["error_kind"] == "auth"
    assert "ANTHROPIC" in anthropic_entry["fix"] or "api_key" in anthropic_entry["fix"]
    gemini = by_name["gemini"]
    assert gemini["status"] == "not_configured" and not gemini["key_present"]
    assert "GEMINI_API_KEY" in gemini["fix"]
    assert [p["name"] for p in data["providers"]][:2] == ["openai", "tavily"]  # in use first


async def test_health_reports_a_problem_with_a_provider_in_use(
    research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    openai_server.fail_next(401, json={"error": {"message": "Incorrect API key provided"}})
    settings = _settings(research_env, "[providers.openai]\nmax_retries = 0\n")
    async with _client(settings) as client:
        envelope = await call(client, action="health", query="ignored")
    data = envelope["data"]
    assert data["ok"] is False
    (problem,) = data["problems"]
    assert problem.startswith("openai:") and "Fix:" in problem
    assert envelope["meta"]["warnings"]  # the stray parameter is reported


async def test_doctor_prints_provider_checks(
    research_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in research_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(research_env["HOME"])
    code = await _in_thread(cli.main, ["doctor"])
    out = capsys.readouterr().out
    checks = json.loads(out)
    assert code == 0, out
    assert checks["llm"].startswith("ok: openai:")
    names = {p["name"]: p["status"] for p in checks["providers"]}
    assert names["openai"] == "ok" and names["tavily"] == "ok"
    assert research_env["OPENAI_API_KEY"] not in out


async def _in_thread(function: Any, *args: Any) -> Any:
    import anyio

    return await anyio.to_thread.run_sync(function, *args)
