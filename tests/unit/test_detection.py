"""Choosing the LLM from what the machine has when the configuration does not say."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.providers.detection import (
    apply_choice,
    choose_llm,
    probe_local_server,
    zero_key_hint,
)
from tests.fakes import FakeHTTPServer
from tests.fakes.http import FakeResponse


def _settings(tmp_path: Path, **env: str) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return load_settings(env={"HOME": str(home), **env}, cwd=tmp_path, home=home)


def _which(*found: str) -> object:
    return lambda program: f"/opt/bin/{program}" if program in found else None


def _nothing_listens(_: int) -> str | None:
    return None


def test_configuration_wins_over_everything(tmp_path: Path) -> None:
    settings = _settings(tmp_path, FOUNDRY_MCP_DEFAULT_PROVIDER="gemini", OPENAI_API_KEY="sk-x")
    choice = choose_llm(settings, which=_which("claude"), probe=_nothing_listens)  # type: ignore[arg-type]
    assert (choice.provider, choice.detected) == ("gemini", False)
    assert apply_choice(settings, choice) is settings


@pytest.mark.parametrize(
    ("env", "found", "expected"),
    [
        ({"OPENAI_API_KEY": "sk-x"}, ("claude",), "openai"),
        ({"ANTHROPIC_API_KEY": "sk-ant"}, ("claude",), "anthropic"),
        ({}, ("claude", "codex"), "claude-cli"),
        ({}, ("codex", "gemini"), "codex-cli"),
        ({}, ("gemini",), "gemini-cli"),
    ],
)
def test_keys_first_then_an_assistant_program(
    tmp_path: Path, env: dict[str, str], found: tuple[str, ...], expected: str
) -> None:
    settings = _settings(tmp_path, **env)
    choice = choose_llm(settings, which=_which(*found), probe=_nothing_listens)  # type: ignore[arg-type]
    assert choice.provider == expected
    applied = apply_choice(settings, choice)
    assert applied.research.default_provider == expected
    if expected.endswith("-cli"):
        assert choice.detected and "/opt/bin/" in choice.reason
        assert "default_provider" in choice.statement


def test_a_local_server_when_nothing_else(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    choice = choose_llm(
        settings, which=_which(), probe=lambda port: "llama3.2" if port == 1234 else None
    )
    assert (choice.provider, choice.model) == ("lmstudio", "llama3.2")
    applied = apply_choice(settings, choice)
    declared = applied.providers["lmstudio"]
    assert declared.type == "openai" and declared.base_url == "http://127.0.0.1:1234/v1"
    assert applied.research.default_provider == "lmstudio"


def test_nothing_found_keeps_the_default_and_says_what_would_work(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    choice = choose_llm(settings, which=_which(), probe=_nothing_listens)
    assert (choice.provider, choice.detected) == ("openai", False)
    assert "Claude Code (`claude`)" in zero_key_hint() and "Ollama" in zero_key_hint()


def test_the_probe_reads_the_first_listed_model() -> None:
    with FakeHTTPServer() as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        listed = {"object": "list", "data": [{"id": "qwen3"}]}
        server.route("GET", "/v1/models", lambda _: FakeResponse(json=listed))
        assert probe_local_server(port) == "qwen3"
        server.route("GET", "/v1/models", lambda _: FakeResponse(json={"data": []}))
        assert probe_local_server(port) is None
    assert probe_local_server(port) is None  # nothing listens any more
