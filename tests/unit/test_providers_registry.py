"""Choosing LLM and search providers from settings, and URL normalisation for dedupe."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.config import DEFAULT_MODELS, load_settings
from foundry_mcp.errors import ProviderNotConfiguredError
from foundry_mcp.providers.registry import ProviderRegistry, parse_provider_spec
from foundry_mcp.research.workflow.agents.pool import normalise_url

# --------------------------------------------------------------------------- normalise_url


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("https://Example.COM/a/b", "https://example.com/a/b"),
        ("HTTPS://example.com/a", "https://example.com/a"),
        ("https://example.com/a/", "https://example.com/a"),
        ("https://example.com/a#section-2", "https://example.com/a"),
        ("https://example.com", "https://example.com/"),
        ("  https://example.com/a  ", "https://example.com/a"),
        ("https://example.com/a?x=1#frag", "https://example.com/a?x=1"),
    ],
)
def test_equivalent_urls_normalise_alike(first: str, second: str) -> None:
    assert normalise_url(first) == normalise_url(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("https://example.com/A", "https://example.com/a"),  # paths are case-sensitive
        ("https://example.com/a?x=1", "https://example.com/a?x=2"),
        ("https://example.com/a", "https://example.org/a"),
        ("https://example.com/a/b", "https://example.com/a"),
    ],
)
def test_different_pages_stay_different(first: str, second: str) -> None:
    assert normalise_url(first) != normalise_url(second)


def test_normalise_url_is_idempotent() -> None:
    for url in ["HTTPS://Ex.com/Path/?q=A#f", "http://ex.com", "https://ex.com/a//"]:
        once = normalise_url(url)
        assert normalise_url(once) == once


# --------------------------------------------------------------------------- parse_provider_spec


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai", ("openai", None)),
        ("openai:gpt-4.1-mini", ("openai", "gpt-4.1-mini")),
        ("  Anthropic : claude-X  ", ("anthropic", "claude-X")),
        ("openai:", ("openai", None)),
        ("ollama:llama3:8b", ("ollama", "llama3:8b")),
    ],
)
def test_parse_provider_spec(spec: str, expected: tuple[str, str | None]) -> None:
    assert parse_provider_spec(spec) == expected


# --------------------------------------------------------------------------- resolve_llm


def _registry(
    tmp_path: Path, env: dict[str, str] | None = None, toml: str = ""
) -> ProviderRegistry:
    if toml:  # the user's own file: every key of it applies
        (tmp_path / ".foundry-mcp.toml").write_text(toml)
    return ProviderRegistry(load_settings(env=env or {}, cwd=tmp_path, home=tmp_path))


KEYS = {"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}


def test_default_provider_is_used_without_provider_id(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {**KEYS, "FOUNDRY_MCP_DEFAULT_PROVIDER": "anthropic:claude-x"})
    assert registry.resolve_llm(None, None) == ("anthropic", "claude-x")


def test_explicit_provider_id_beats_default_provider(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {**KEYS, "FOUNDRY_MCP_DEFAULT_PROVIDER": "anthropic:claude-x"})
    assert registry.resolve_llm("openai:gpt-y", None) == ("openai", "gpt-y")
    assert registry.resolve_llm("openai", None) == ("openai", DEFAULT_MODELS["openai"])


def test_model_beats_the_spec_model(tmp_path: Path) -> None:
    registry = _registry(tmp_path, KEYS)
    assert registry.resolve_llm("openai:gpt-spec", "gpt-arg") == ("openai", "gpt-arg")
    assert registry.resolve_llm(None, "gpt-arg") == ("openai", "gpt-arg")


def test_configured_model_is_used_before_the_builtin_default(tmp_path: Path) -> None:
    registry = _registry(tmp_path, KEYS, '[providers.anthropic]\nmodel = "claude-configured"\n')
    assert registry.resolve_llm("anthropic", None) == ("anthropic", "claude-configured")
    assert registry.resolve_llm("anthropic:claude-spec", None) == ("anthropic", "claude-spec")


@pytest.mark.parametrize("provider_id", ["gemini", "tavily", "nonsense:model"])
def test_unknown_or_non_llm_provider_is_not_configured(tmp_path: Path, provider_id: str) -> None:
    registry = _registry(tmp_path, {**KEYS, "TAVILY_API_KEY": "tv"})
    with pytest.raises(ProviderNotConfiguredError) as caught:
        registry.resolve_llm(provider_id, None)
    assert parse_provider_spec(provider_id)[0] in caught.value.message


@pytest.mark.parametrize(
    ("provider", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_missing_key_names_the_environment_variable(
    tmp_path: Path, provider: str, variable: str
) -> None:
    registry = _registry(tmp_path, {})
    with pytest.raises(ProviderNotConfiguredError) as caught:
        registry.resolve_llm(provider, None)
    assert variable in caught.value.remediation
    assert provider in caught.value.message


def test_default_provider_without_key_is_not_configured(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {"ANTHROPIC_API_KEY": "sk-a"})
    with pytest.raises(ProviderNotConfiguredError) as caught:
        registry.resolve_llm(None, None)
    assert "OPENAI_API_KEY" in caught.value.remediation


def test_openai_base_url_alone_does_not_make_openai_keyless(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {"OPENAI_BASE_URL": "http://localhost:8000/v1"})
    with pytest.raises(ProviderNotConfiguredError):
        registry.resolve_llm("openai", None)


OLLAMA = '[providers.ollama]\ntype = "openai"\nbase_url = "http://localhost:11434/v1"\n'


def test_openai_compatible_server_works_without_a_key(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {}, OLLAMA + 'model = "llama3"\n')
    assert registry.resolve_llm("ollama", None) == ("ollama", "llama3")
    assert registry.resolve_llm("Ollama:qwen2", None) == ("ollama", "qwen2")
    assert registry.resolve_llm("ollama", "mistral") == ("ollama", "mistral")


def test_openai_compatible_server_needs_a_model(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {}, OLLAMA)
    with pytest.raises(ProviderNotConfiguredError) as caught:
        registry.resolve_llm("ollama", None)
    assert "model" in caught.value.message.lower()


def test_openai_compatible_type_without_base_url_needs_a_key(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {}, '[providers.local]\ntype = "openai"\nmodel = "m"\n')
    with pytest.raises(ProviderNotConfiguredError):
        registry.resolve_llm("local", None)


# --------------------------------------------------------------------------- search providers


def test_search_provider_with_key_is_usable(tmp_path: Path) -> None:
    registry = _registry(tmp_path, {"TAVILY_API_KEY": "tv"})
    assert registry.usable_search_providers(["tavily"]) == (["tavily"], [])
    assert registry.usable_search_providers([" Tavily "]) == (["tavily"], [])


def test_unusable_search_providers_are_skipped_with_warnings(tmp_path: Path) -> None:
    toml = '[providers.tavily2]\ntype = "tavily"\n'
    registry = _registry(tmp_path, {"TAVILY_API_KEY": "tv"}, toml)
    usable, warnings = registry.usable_search_providers(["exa", "tavily2", "tavily"])
    assert usable == ["tavily"]
    assert len(warnings) == 2
    assert any("exa" in w for w in warnings)
    assert any("tavily2" in w and "key" in w for w in warnings)


def test_custom_named_tavily_provider_with_key_is_usable(tmp_path: Path) -> None:
    toml = '[providers.work-search]\ntype = "tavily"\napi_key = "tv-work"\n'
    registry = _registry(tmp_path, {}, toml)
    assert registry.usable_search_providers(["work-search", "tavily"])[0] == ["work-search"]


@pytest.mark.parametrize("names", [["tavily"], [], ["exa", "openai"]])
def test_no_usable_search_provider_raises(tmp_path: Path, names: list[str]) -> None:
    registry = _registry(tmp_path, {"OPENAI_API_KEY": "sk-o"})
    with pytest.raises(ProviderNotConfiguredError) as caught:
        registry.usable_search_providers(names)
    assert "TAVILY_API_KEY" in caught.value.remediation
    for name in names:
        assert name in caught.value.message
