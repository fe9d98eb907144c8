"""An untrusted project file's values that only narrow where they are used: the search services,
a model's window, a runtime's overhead. What narrows applies; what would not is ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.context.limits import model_limits
from foundry_mcp.context.runtime import ContextServices
from foundry_mcp.errors import ConfigError
from foundry_mcp.providers.registry import ProviderRegistry

KEYS = {
    "TAVILY_API_KEY": "tvly-user",
    "GOOGLE_API_KEY": "g-user",
    "GOOGLE_CSE_ID": "cx",
    "OPENAI_API_KEY": "sk-user",
}


def _load(tmp_path: Path, project: str, **env: str) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (tmp_path / "foundry-mcp.toml").write_text(project)
    return load_settings(env={"HOME": str(home), **env}, cwd=tmp_path, home=home)


def test_a_list_that_leaves_a_service_out_applies(tmp_path: Path) -> None:
    settings = _load(tmp_path, '[research]\ndeep_research_providers = ["google"]\n', **KEYS)
    assert settings.untrusted is None  # nothing was ignored: the list waits to be judged
    assert settings.narrowing.deep_research_providers == ["google"]
    assert ProviderRegistry(settings).search_providers(announce=False) == (["google"], [])


def test_a_list_of_other_services_is_ignored_with_a_warning(tmp_path: Path) -> None:
    settings = _load(tmp_path, '[research]\ndeep_research_providers = ["ddgs"]\n', **KEYS)
    usable, [warning] = ProviderRegistry(settings).search_providers(announce=False)
    assert usable == ["tavily", "google"]
    assert "[research] deep_research_providers" in warning and '["ddgs"]' in warning
    assert "they go to tavily, google" in warning and "foundry-mcp trust" in warning


def test_a_list_that_leaves_a_kind_asked_for_unserved_is_ignored(tmp_path: Path) -> None:
    project = '[research]\ndeep_research_providers = ["tavily"]\n'
    settings = _load(tmp_path, project, **KEYS, SEMANTIC_SCHOLAR_API_KEY="s2")
    registry = ProviderRegistry(settings)
    assert registry.search_providers(announce=False)[0] == ["tavily"]
    usable, [warning] = registry.search_providers(["web", "academic"], announce=False)
    assert usable == ["tavily", "google", "semantic_scholar"]
    assert "leaves no provider for the academic sources" in warning
    usable, [warning] = registry.search_providers(["academic"], announce=False)
    assert usable == ["semantic_scholar"] and "names none of the services" in warning


def test_a_trusted_list_chooses_as_before(tmp_path: Path) -> None:
    config = tmp_path / "mine.toml"
    config.write_text('[research]\ndeep_research_providers = ["ddgs"]\n')
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "FOUNDRY_MCP_CONFIG": str(config), **KEYS}
    settings = load_settings(env=env, cwd=tmp_path, home=home)
    assert ProviderRegistry(settings).search_providers(announce=False) == (["ddgs"], [])


def test_a_window_applies_only_where_it_is_smaller(tmp_path: Path) -> None:
    project = '[research.model_context_overrides]\n"gpt-4.1-mini" = 16000\n"gpt-4o" = 2000000\n'
    settings = _load(tmp_path, project, **KEYS)
    context = ContextServices(settings)
    small, _ = context.token_options("openai", "gpt-4.1-mini")
    large, _ = context.token_options("openai", "gpt-4o")
    assert small.context_window == 16_000
    assert large.context_window == model_limits("gpt-4o").context_window == 128_000
    assert small.model_window_ceilings == {"gpt-4.1-mini": 16_000, "gpt-4o": 2_000_000}


def test_a_runtime_overhead_applies_only_above_the_providers_own(tmp_path: Path) -> None:
    settings = _load(tmp_path, "[research]\nruntime_overhead = 3000\n", **KEYS)
    context = ContextServices(settings)
    assert context.token_options("openai", "gpt-4.1-mini")[0].runtime_overhead == 3000
    assert context.token_options("claude-cli", "default")[0].runtime_overhead == 6000


def test_a_bad_value_set_aside_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, "[research]\nruntime_overhead = -5\n")
    assert str(tmp_path / "foundry-mcp.toml") in caught.value.message
    assert "[research] runtime_overhead" in caught.value.message
