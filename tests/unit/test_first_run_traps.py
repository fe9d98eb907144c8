"""The traps of a first run, each closed: an example configuration that changes nothing, an
error that names the file which set the default provider, a doctor summary that agrees with its
checks, proofread messages, and terminal errors that name terminal commands."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.cli.doctor import summary_line
from foundry_mcp.cli.wording import ACTION_COMMANDS, for_the_terminal, in_cli_terms
from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import ProviderNotConfiguredError
from foundry_mcp.providers.detection import choose_llm
from foundry_mcp.providers.health import for_a_check, problem_line
from foundry_mcp.providers.registry import ProviderRegistry

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "foundry-mcp.example.toml"
# Actions the terminal has no command for: their hints stay in the tool's words.
NO_COMMAND = {"deep-research-evidence"}


def _settings(tmp_path: Path, home_toml: str = "", **env: str) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if home_toml:
        (home / ".foundry-mcp.toml").write_text(home_toml)
    return load_settings(env={"HOME": str(home), **env}, cwd=tmp_path, home=home)


def _claude_only(program: str) -> str | None:
    return "/opt/bin/claude" if program == "claude" else None


def _no_server(_: int) -> str | None:
    return None


# --------------------------------------------------------------------------- the example file


def test_the_clone_has_an_example_and_no_configuration_of_its_own() -> None:
    assert EXAMPLE.is_file()
    assert not (ROOT / "foundry-mcp.toml").exists(), "a server started in the clone would read it"
    assert "never reads this file" in EXAMPLE.read_text()


@pytest.mark.parametrize("where", ["home", "project"])
def test_a_copy_of_the_example_leaves_the_keyless_choice_on(tmp_path: Path, where: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    target = home / ".foundry-mcp.toml" if where == "home" else tmp_path / "foundry-mcp.toml"
    shutil.copy(EXAMPLE, target)
    env = {"HOME": str(home)} if where == "home" else {"FOUNDRY_MCP_CONFIG": str(target)}
    settings = load_settings(env=env, cwd=tmp_path, home=home)
    choice = choose_llm(settings, which=_claude_only, probe=_no_server)
    assert (choice.provider, choice.detected) == ("claude-cli", True)


# --------------------------------------------------------------- where default_provider was set


def test_the_missing_key_error_names_the_file_that_set_the_default(tmp_path: Path) -> None:
    settings = _settings(tmp_path, '[research]\ndefault_provider = "openai"\n')
    home_file = str(tmp_path / "home" / ".foundry-mcp.toml")
    choice = choose_llm(settings, which=_claude_only, probe=_no_server)
    assert choice.provider == "openai" and home_file in choice.reason
    with pytest.raises(ProviderNotConfiguredError) as caught:
        ProviderRegistry(settings).resolve_llm(None, None)
    assert f"[research] default_provider in {home_file}" in caught.value.message
    assert f"It is set in {home_file}: remove it there" in caught.value.remediation
    # Named explicitly by the caller, the default's origin is beside the point.
    with pytest.raises(ProviderNotConfiguredError) as named:
        ProviderRegistry(settings).resolve_llm("anthropic", None)
    assert "default_provider in" not in named.value.message


def test_the_error_names_the_environment_variable_that_set_the_default(tmp_path: Path) -> None:
    settings = _settings(tmp_path, FOUNDRY_MCP_DEFAULT_PROVIDER="gemini")
    with pytest.raises(ProviderNotConfiguredError) as caught:
        ProviderRegistry(settings).resolve_llm(None, None)
    assert "environment variable FOUNDRY_MCP_DEFAULT_PROVIDER" in caught.value.message


def test_a_phase_provider_error_names_where_it_was_set(tmp_path: Path) -> None:
    toml = '[research]\ndeep_research_planning_provider = "anthropic"\n'
    settings = _settings(tmp_path, toml, OPENAI_API_KEY="sk-x")
    with pytest.raises(ProviderNotConfiguredError) as caught:
        ProviderRegistry(settings).resolve_routes()
    assert "(set in " in caught.value.message and ".foundry-mcp.toml" in caught.value.message


# ------------------------------------------------------------------------------ proofreading


def test_a_google_provider_without_key_and_engine_is_said_in_plain_words(tmp_path: Path) -> None:
    problem = ProviderRegistry(_settings(tmp_path)).search_problem("google")
    assert problem is not None
    assert "needs an API key and a search engine id" in problem and "no an" not in problem


def test_a_health_problem_names_its_provider_once() -> None:
    entry = {"name": "ddgs", "problem": "ddgs: cannot reach the mojeek search engine.", "fix": "x"}
    assert problem_line(entry) == "ddgs: cannot reach the mojeek search engine. Fix: x"
    other = {"name": "openai", "problem": "No API key.", "fix": "Set it."}
    assert problem_line(other) == "openai: No API key. Fix: Set it."
    said = {"name": "openai", "problem": "openai rejected the API key.", "fix": "Set it."}
    assert problem_line(said) == "openai: rejected the API key. Fix: Set it."


@pytest.mark.parametrize(
    ("fix", "expected"),
    [
        ("Check your network; then resume the research.", "Check your network."),
        ("Check the key, then resume the research by its id.", "Check the key."),
        ("Usually a passing fault; resume the research.", "Usually a passing fault."),
        ("Make room, then resume the research: set x.", "Make room: set x."),
    ],
)
def test_a_checks_fix_asks_for_no_resume(fix: str, expected: str) -> None:
    assert for_a_check(fix) == expected


# ----------------------------------------------------------------------- doctor's summary


def _entry(name: str, status: str, problem: str | None = None) -> dict[str, Any]:
    return {"name": name, "status": status, "problem": problem}


def test_the_summary_is_ok_only_when_every_provider_answered() -> None:
    entries = {
        "ddgs": _entry("ddgs", "error", "ddgs: cannot reach the mojeek search engine."),
        "local": _entry("local", "ok"),
        "claude-cli": _entry("claude-cli", "error", "Claude Code is not logged in."),
    }
    assert summary_line(["local"], entries) == "ok: local"
    line = summary_line(["ddgs", "local"], entries)
    assert line == "failing: ddgs (cannot reach the mojeek search engine); ok: local"
    assert summary_line(["claude-cli:default"], entries).startswith("failing: claude-cli:default")


# -------------------------------------------------------------- terminal errors, terminal words


def test_every_action_a_message_names_has_a_command_or_is_known() -> None:
    named = set()
    for path in (ROOT / "src" / "foundry_mcp").rglob("*.py"):
        named |= set(re.findall(r"action=['\"]([a-z-]+)['\"]", path.read_text()))
    tool_actions = {name for name in named if name.startswith("deep-research") or name == "health"}
    assert tool_actions - set(ACTION_COMMANDS) <= NO_COMMAND


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Use action='deep-research-list' to see known ids.", "Run `foundry-mcp list` to see"),
        ("Check the id with action='deep-research-list'.", "with `foundry-mcp list`"),
        (
            "Wait: action='deep-research-status', research_id='deepres-0123456789ab', wait=true.",
            "`foundry-mcp watch deepres-0123456789ab`",
        ),
        ("Resume it with action='deep-research-resume'.", "`foundry-mcp resume deepres-aa"),
        ("call action='deep-research-status' with wait=true, then", "run `foundry-mcp watch"),
        ("use provider_id='openai:<model>', or", "use --provider openai:<model>, or"),
        ("resume with max_iterations above 3", "resume with --max-iterations above 3"),
        ("with action='health' (or `foundry-mcp doctor`), then", "with `foundry-mcp doctor`, then"),
        ("as returned by deep-research: 'deepres-'", "as printed by `foundry-mcp research`"),
    ],
)
def test_tool_words_become_commands(text: str, said: str) -> None:
    translated = in_cli_terms(text, "deepres-aaaaaaaaaaaa")
    assert said in translated
    assert "action=" not in translated


def test_settings_keys_are_left_as_they_are() -> None:
    text = "raise [research] max_time_s, or sub_question_max_iterations; set mode = 'simple'"
    assert in_cli_terms(text) == text


def test_the_env_block_becomes_the_shell() -> None:
    said = for_the_terminal("Set OPENAI_API_KEY in the MCP server's env block.")
    assert "export OPENAI_API_KEY=..." in said and "env block" not in said
