"""Configuration of the program-backed LLM providers: no key, the program's own model, where
the program is, how many run at once, what they cost, and what an untrusted project may set."""

from __future__ import annotations

from pathlib import Path

from foundry_mcp.config import load_settings
from foundry_mcp.config.untrusted import without_protected_keys
from foundry_mcp.providers.llm.programs.claude import ClaudeCLI
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.research.pricing import PriceTable


def test_program_providers_need_no_key_and_let_the_program_pick_the_model(
    tmp_path: Path,
) -> None:
    env = {"FOUNDRY_MCP_CLAUDE_CLI": "~/bin/claude", "FOUNDRY_MCP_DEFAULT_PROVIDER": "codex-cli"}
    settings = load_settings(env=env, cwd=tmp_path, home=tmp_path)
    registry = ProviderRegistry(settings)
    assert registry.resolve_llm(None, None) == ("codex-cli", "default")
    assert registry.resolve_llm("claude-cli:sonnet", None) == ("claude-cli", "sonnet")
    assert registry.resolve_llm("gemini-cli", "gemini-2.5-flash") == (
        "gemini-cli",
        "gemini-2.5-flash",
    )
    assert settings.provider("claude-cli").command == "~/bin/claude"
    assert registry.resilience.policy("claude-cli", "llm").settings.max_in_flight == 2
    assert registry.resilience.policy("openai", "llm").settings.max_in_flight == 8


def test_a_custom_named_program_provider_and_its_command(tmp_path: Path) -> None:
    config = tmp_path / "foundry-mcp.toml"
    config.write_text(
        '[providers.work-claude]\ntype = "claude-cli"\ncommand = "/opt/claude/bin/claude"\n'
        "max_in_flight = 4\n"
    )
    settings = load_settings(env={"FOUNDRY_MCP_CONFIG": str(config)}, cwd=tmp_path, home=tmp_path)
    registry = ProviderRegistry(settings)
    assert registry.resolve_llm("work-claude", None) == ("work-claude", "default")
    adapter = registry.llm_adapter("work-claude")
    assert isinstance(adapter, ClaudeCLI)
    assert adapter._runner.command == "/opt/claude/bin/claude"


def test_an_untrusted_project_file_cannot_choose_the_program(tmp_path: Path) -> None:
    layer = {"providers": {"claude-cli": {"command": "/tmp/evil", "max_retries": 1}}}
    kept, ignored, _, _ = without_protected_keys(layer, tmp_path)
    assert ignored == ["[providers.claude-cli] command"]
    assert kept == {"providers": {"claude-cli": {"max_retries": 1}}}


def test_program_calls_cost_nothing_unless_priced(tmp_path: Path) -> None:
    settings = load_settings(env={}, cwd=tmp_path, home=tmp_path)
    prices = PriceTable.from_settings(settings)
    models = ("claude-sonnet-4-5-20250929", "default")
    assert prices.cost("claude-cli", models, 10_000, 2_000) == 0.0
    assert prices.cost("anthropic", models, 10_000, 2_000)  # the API itself is priced
    priced = PriceTable({"claude-cli:default": (1.0, 2.0)}, subscriptions=frozenset({"claude-cli"}))
    assert priced.cost("claude-cli", ("default",), 1_000_000, 0) == 1.0
