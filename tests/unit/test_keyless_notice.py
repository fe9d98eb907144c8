"""With no search key, a research says where its questions go, and how to stop it, until a search
has actually been sent to the public engines; then it has been said."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.providers import keyless_notice
from foundry_mcp.providers.keyless_notice import MARKER_FILE, keyless_search_statement, mark_sent
from foundry_mcp.providers.registry import ProviderRegistry


def _settings(tmp_path: Path, toml: str = "", **env: str) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    config = tmp_path / "config.toml"
    config.write_text(toml)
    full = {
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp_path / "research"),
        **env,
    }
    return load_settings(env=full, cwd=tmp_path, home=home)


def _notices(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "public search engines" in w]


def test_the_notice_is_said_until_a_search_was_sent(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    registry = ProviderRegistry(settings)
    assert _notices(registry.search_providers(announce=False)[1]) == []  # looking says nothing
    usable, warnings = registry.search_providers()
    assert usable == ["ddgs"]
    [notice] = _notices(warnings)
    for said in ("DuckDuckGo", "Brave", "Mojeek", "TAVILY_API_KEY", "deep_research_providers"):
        assert said in notice
    # A start that never searched (it failed first, say) used nothing up.
    assert len(_notices(registry.search_providers()[1])) == 1
    assert not (settings.research.research_dir / MARKER_FILE).exists()
    mark_sent(settings, "ddgs")
    assert _notices(registry.search_providers()[1]) == []
    # Another process on the same research directory: the marker remembers.
    assert (settings.research.research_dir / MARKER_FILE).is_file()
    keyless_notice._said_in_process.discard(settings.research.research_dir)
    assert _notices(ProviderRegistry(settings).search_providers()[1]) == []


def test_a_search_the_user_chose_marks_nothing(tmp_path: Path) -> None:
    chosen = _settings(tmp_path, '[research]\ndeep_research_providers = ["ddgs"]\n')
    mark_sent(chosen, "ddgs")
    assert not (chosen.research.research_dir / MARKER_FILE).exists()
    keyless_notice._said_in_process.discard(chosen.research.research_dir)


def test_the_notice_names_the_engines_configured(tmp_path: Path) -> None:
    toml = '[providers.ddgs]\nbackends = ["mojeek"]\nnews_backends = ["bing", "yahoo"]\n'
    statement = keyless_search_statement(_settings(tmp_path, toml), ["ddgs"])
    assert statement is not None and "(Mojeek; news: Bing and Yahoo)" in statement


@pytest.mark.parametrize(
    ("toml", "env"),
    [
        ("", {"TAVILY_API_KEY": "tvly-x"}),  # a keyed provider: ddgs sits out
        ('[research]\ndeep_research_providers = ["ddgs"]\n', {}),  # chosen by the user
        ('[research]\ndeep_research_providers = ["semantic_scholar"]\n', {}),
    ],
)
def test_no_notice_when_the_user_chose(tmp_path: Path, toml: str, env: dict[str, str]) -> None:
    registry = ProviderRegistry(_settings(tmp_path, toml, **env))
    assert _notices(registry.search_providers()[1]) == []


def test_an_unwritable_research_dir_remembers_it_for_the_process(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    settings = _settings(tmp_path, FOUNDRY_MCP_RESEARCH_DIR=str(blocked / "research"))
    assert len(_notices(ProviderRegistry(settings).search_providers()[1])) == 1
    mark_sent(settings, "ddgs")
    assert _notices(ProviderRegistry(settings).search_providers()[1]) == []
    keyless_notice._said_in_process.discard(settings.research.research_dir)


def test_a_keyless_search_an_untrusted_file_asks_for_is_still_announced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "foundry-mcp.toml").write_text('[research]\ndeep_research_providers = ["ddgs"]\n')
    env = {"HOME": str(home), "FOUNDRY_MCP_RESEARCH_DIR": str(tmp_path / "research")}
    settings = load_settings(env=env, cwd=tmp_path, home=home)
    usable, warnings = ProviderRegistry(settings).search_providers()
    assert usable == ["ddgs"]
    assert len(_notices(warnings)) == 1  # the repository chose it, not the user
