"""Which provider runs each phase: the caller's ``provider_id`` wins over per-phase config."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import call, editor_stdio, run_to_end
from tests.fakes import FakeHTTPServer

pytestmark = [pytest.mark.anyio, pytest.mark.stdio]

PER_PHASE = (
    '\n[research]\ndeep_research_analysis_provider = "anthropic:claude-3-5-haiku-latest"\n'
    'deep_research_synthesis_provider = "anthropic:claude-3-5-haiku-latest"\n'
    'summarization_provider = "anthropic:claude-3-5-haiku-latest"\n'
)


def _with_per_phase_config(
    research_env: dict[str, str], anthropic_server: FakeHTTPServer
) -> dict[str, str]:
    config = Path(research_env["FOUNDRY_MCP_CONFIG"])
    config.write_text(config.read_text() + PER_PHASE)
    return {
        **research_env,
        "ANTHROPIC_API_KEY": "sk-ant-test-secret",
        "ANTHROPIC_BASE_URL": anthropic_server.base_url,
    }


async def test_an_explicit_provider_id_runs_every_phase(
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    anthropic_server: FakeHTTPServer,
) -> None:
    env = _with_per_phase_config(research_env, anthropic_server)
    async with editor_stdio(env) as client:
        started = await call(
            client,
            action="deep-research",
            query="How does WAL mode work in SQLite?",
            provider_id="openai:gpt-4.1-mini",
        )
        assert started["success"], started
        assert started["data"]["phase_providers"] == {}
        final = await run_to_end(client, started["data"]["research_id"])
    assert final["status"] == "completed", final
    assert anthropic_server.requests == []  # not one call went to the configured phases
    assert openai_server.requests
    served = final["usage"]["models_by_phase"]
    assert {"planning", "analysis", "synthesis"} <= set(served)
    assert all(models == ["openai:gpt-4.1-mini"] for models in served.values())


async def test_without_a_provider_id_the_per_phase_config_applies(
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    anthropic_server: FakeHTTPServer,
) -> None:
    env = _with_per_phase_config(research_env, anthropic_server)
    async with editor_stdio(env) as client:
        started = await call(client, action="deep-research", query="What is a bloom filter?")
        assert started["success"], started
        final = await run_to_end(client, started["data"]["research_id"])
    assert final["status"] == "completed", final
    served = final["usage"]["models_by_phase"]
    assert served["analysis"] == ["anthropic:claude-3-5-haiku-latest"]
    assert served["synthesis"] == ["anthropic:claude-3-5-haiku-latest"]
    assert all(model.startswith("openai:") for model in served["planning"])
