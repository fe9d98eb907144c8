"""``[mcp_sources.<name>]``: only the user's own configuration names an MCP server (a program
it runs); an untrusted project file's is ignored with a warning; a table that cannot work is
refused when loaded, naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.config import load_settings
from foundry_mcp.errors import ConfigError
from foundry_mcp.providers.registry import ProviderRegistry

SOURCE = '[mcp_sources.repo-git]\ncommand = "uvx mcp-server-git --repository ."\n'


def _load(tmp_path: Path, user: str = "", project: str = "") -> object:
    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir(exist_ok=True)
    cwd.mkdir(exist_ok=True)
    (home / ".foundry-mcp.toml").write_text(user)
    (cwd / "foundry-mcp.toml").write_text(project)
    return load_settings(env={"HOME": str(home)}, cwd=cwd, home=home)


def test_the_users_own_file_names_a_source(tmp_path: Path) -> None:
    settings = _load(tmp_path, user=SOURCE)
    source = settings.mcp_sources["repo-git"]  # type: ignore[attr-defined]
    assert source.command == ["uvx", "mcp-server-git", "--repository", "."]
    assert source.transport == "stdio"


def test_an_untrusted_project_file_naming_a_server_is_ignored_with_a_warning(
    tmp_path: Path,
) -> None:
    settings = _load(tmp_path, project=SOURCE)
    assert settings.mcp_sources == {}  # type: ignore[attr-defined]
    (warning,) = settings.trust_warnings()  # type: ignore[attr-defined]
    assert "mcp_sources" in warning and "foundry-mcp trust" in warning


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ("[mcp_sources.x]\n", "either command"),
        ('[mcp_sources.x]\ncommand = ["a"]\nurl = "http://127.0.0.1:1/mcp"\n', "not both"),
        ('[mcp_sources.x]\nurl = "file:///etc/passwd"\n', "http:// or https://"),
        ('[mcp_sources.Bad_Name]\ncommand = ["a"]\n', "lower-case"),
        ('[mcp_sources.x]\ncommand = ["a"]\nsearch_tool = "rm -rf"\n', "search_tool"),
    ],
)
def test_a_table_that_cannot_work_is_refused(tmp_path: Path, table: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, user=table)
    assert says in str(refused.value) or says in str(refused.value.remediation)


def test_every_source_searches_unless_the_provider_list_names_some(tmp_path: Path) -> None:
    tables = SOURCE + '\n[mcp_sources.wiki]\ncommand = "wiki-mcp"\n'
    listed = '\n[research]\ndeep_research_providers = ["ddgs", {}]\n'

    def providers(user: str) -> tuple[list[str], list[str]]:
        settings = _load(tmp_path, user=user)
        return ProviderRegistry(settings).search_providers(announce=False)  # type: ignore[arg-type]

    assert providers(tables + listed.format(""))[0] == ["ddgs", "mcp.repo-git", "mcp.wiki"]
    assert providers(tables + listed.format('"mcp.wiki"'))[0] == ["ddgs", "mcp.wiki"]
    usable, warnings = providers(tables + listed.format('"mcp.wiki", "mcp.gone"'))
    assert usable == ["ddgs", "mcp.wiki"]
    assert any("'mcp.gone' names no MCP source" in warning for warning in warnings), warnings
