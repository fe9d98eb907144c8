"""``foundry-mcp doctor`` checks each configured MCP source: started, its tools listed and
sorted into what a research may call; a misconfigured one is named with its fix."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client

from foundry_mcp.config import load_settings
from foundry_mcp.server import create_server
from tests.e2e.conftest import call
from tests.e2e.test_terminal import on_a_terminal, piped
from tests.fakes import FakeHTTPServer
from tests.npm_servers import FILESYSTEM, npm_server

ROOT = Path(__file__).resolve().parents[2]
NOTES = f'command = ["{sys.executable}", "-m", "tests.fakes.notes_mcp_server"]\n'


def _with_sources(research_env: dict[str, str], tables: str) -> dict[str, str]:
    config = Path(research_env["FOUNDRY_MCP_CONFIG"])
    config.write_text(config.read_text() + "\n" + tables)
    return {**research_env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def test_doctor_lists_each_source_and_its_tools(
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
) -> None:
    starts = tmp_path / "starts.log"
    env = _with_sources(
        research_env,
        f'[mcp_sources.notes]\n{NOTES}[mcp_sources.notes.env]\nNOTES_START_LOG = "{starts}"\n',
    )
    done = piped(env, "doctor")
    checks = json.loads(done.stdout)
    assert done.returncode == 0, checks
    # Its search is checked and its tools listed over one connection: started once.
    assert len(starts.read_text().splitlines()) == 1
    (entry,) = checks["mcp_sources"]
    assert entry["status"] == "ok" and entry["search_tool"] == "search_notes"
    assert entry["never_called"] == ["delete_note"]
    code, drawn = on_a_terminal(env, "doctor")
    assert code == 0
    assert "mcp sources" in drawn and "never called: delete_note" in drawn


def test_doctor_names_a_misconfigured_source_with_its_fix(
    research_env: dict[str, str], openai_server: FakeHTTPServer, tavily_server: FakeHTTPServer
) -> None:
    env = _with_sources(
        research_env,
        f'[mcp_sources.notes]\n{NOTES}read_tool = "read_notes"\n\n'
        '[mcp_sources.gone]\ncommand = ["no-such-mcp-server-here"]\n',
    )
    done = piped(env, "doctor")
    checks = json.loads(done.stdout)
    assert done.returncode == 1
    entries = {entry["name"]: entry for entry in checks["mcp_sources"]}
    assert (
        "read_tool names 'read_notes', which the server does not have"
        in (entries["notes"]["problem"])
    )
    assert "'no-such-mcp-server-here' was not found" in entries["gone"]["problem"]
    assert any("MCP source gone" in problem for problem in checks["problems"])
    assert "Traceback" not in done.stderr


def test_doctor_says_which_setting_lets_the_filesystem_server_list(
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
) -> None:
    server = npm_server(*FILESYSTEM)
    docs = tmp_path / "docs"
    docs.mkdir()
    table = f'[mcp_sources.docs]\ncommand = ["{server}", "{docs}"]\n'
    (entry,) = json.loads(piped(_with_sources(research_env, table), "doctor").stdout)["mcp_sources"]
    assert "write_file" in entry["never_called"] and "read_file" not in entry["never_called"]
    assert any(
        note.startswith("directory_tree lists only with [mcp_sources.docs] arguments")
        for note in entry["notes"]
    ), entry
    research_env = {**research_env, "FOUNDRY_MCP_CONFIG": str(tmp_path / "again.toml")}
    Path(research_env["FOUNDRY_MCP_CONFIG"]).write_text(
        f'{table}arguments = {{ path = "{docs}" }}\n'
    )
    (entry,) = json.loads(piped(_with_sources(research_env, ""), "doctor").stdout)["mcp_sources"]
    assert entry["status"] == "ok" and entry["list_tool"] == "directory_tree", entry
    assert entry["read_tool"] == "read_file" and "notes" not in entry


@pytest.mark.anyio
async def test_the_health_action_checks_each_source(
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
) -> None:
    env = _with_sources(
        research_env,
        f'[mcp_sources.notes]\n{NOTES}cwd = "{ROOT}"\n\n'
        '[mcp_sources.gone]\ncommand = ["no-such-mcp-server-here"]\n',
    )
    settings = load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        health = (await call(client, action="health"))["data"]
    entries = {entry["name"]: entry for entry in health["mcp_sources"]}
    assert entries["notes"]["status"] == "ok" and entries["notes"]["search_tool"] == "search_notes"
    assert entries["gone"]["status"] == "error" and "install it" in entries["gone"]["fix"].lower()
    assert health["ok"] is False
    assert any(problem.startswith("MCP source gone:") for problem in health["problems"])
