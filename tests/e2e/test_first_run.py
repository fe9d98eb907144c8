"""A new user's first run, from the clone: no API key, only Claude Code's ``claude`` on PATH.

The terminal is in a copy of the repository's root files (as a fresh clone has them), which is
where a new user types ``foundry-mcp research``. Nothing there may change the configuration: the
research uses ``claude``, and says that its searches go to public search engines and how to turn
that off. The user's own ``~/.foundry-mcp.toml`` only points the research at a folder of notes.
The keyless web search cannot reach the internet here, so no search is ever sent: the notice,
said until one is (tests/integration/test_keyless_search.py shows it said once after a search
went out), is said by every research of these tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.conftest import call, run_to_end
from tests.fakes.cli_bins import LOG_ENV, read_calls, write_cli_bins

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How does WAL mode work in SQLite?"
NOTE = (
    "# Write-ahead logging in SQLite\n\n"
    "In WAL mode SQLite appends changes to a separate write-ahead log file and readers keep "
    "reading the database file, so readers do not block the writer.\n\n"
    "A checkpoint copies the pages of the WAL back into the database file; by default it runs "
    "when the WAL reaches 1000 pages.\n"
)
# Variables of research_env that would configure a provider or name a configuration file.
NOT_A_NEW_USERS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "TAVILY_API_KEY",
    "TAVILY_BASE_URL",
    "FOUNDRY_MCP_CONFIG",
)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The repository's root files, copied as a clone has them."""
    folder = tmp_path / "foundry-mcp"
    folder.mkdir()
    for path in ROOT.iterdir():
        if path.is_file() and not path.name.startswith("."):
            shutil.copy2(path, folder / path.name)
    return folder


@pytest.fixture
def new_user(research_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """No key, no configuration naming a provider; a fake ``claude`` first on PATH."""
    env = {k: v for k, v in research_env.items() if k not in NOT_A_NEW_USERS}
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "wal.md").write_text(NOTE)
    home = Path(env["HOME"])
    (home / ".foundry-mcp.toml").write_text(
        f'[research.local]\npaths = ["{notes}"]\n\n[research.fetch]\nenabled = false\n\n'
        "[providers.ddgs]\nmax_retries = 0\n"
    )
    bin_dir = write_cli_bins(tmp_path / "bin", programs=("claude",))
    calls = tmp_path / "claude-calls"
    calls.mkdir()
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    env[LOG_ENV] = str(calls)
    return env


def _research(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "foundry_mcp", "research", QUESTION, "--effort", "quick"]
    return subprocess.run(
        [*command, "--json"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_clone_has_no_configuration_of_its_own(clone: Path) -> None:
    assert not (clone / "foundry-mcp.toml").exists()
    assert (clone / "foundry-mcp.example.toml").is_file()


def test_a_research_in_a_fresh_clone_uses_claude_and_says_where_searches_go(
    clone: Path, new_user: dict[str, str]
) -> None:
    first = _research(new_user, clone)
    assert first.returncode == 0, first.stderr
    final = json.loads(first.stdout)
    assert final["status"] == "completed", final["error"]
    assert final["provider"].startswith("claude-cli")
    assert read_calls(Path(new_user[LOG_ENV])), "claude was never run"
    # The keyless web search was chosen: the terminal is told where the questions go, once.
    notice = [line for line in first.stderr.splitlines() if "public search engines" in line]
    assert len(notice) == 1, first.stderr
    assert "DuckDuckGo" in notice[0] and "deep_research_providers" in notice[0]
    assert "TAVILY_API_KEY" in notice[0]

    # No search could reach the engines: nothing was sent, so the next research says it again.
    second = _research(new_user, clone)
    assert second.returncode == 0, second.stderr
    assert "public search engines" in second.stderr


def _doctor(env: dict[str, str], clone: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "foundry_mcp", "doctor"],
        env=env,
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_doctor_in_a_fresh_clone_finds_claude(clone: Path, new_user: dict[str, str]) -> None:
    doctor = _doctor(new_user, clone)
    checks = json.loads(doctor.stdout)
    assert checks["config_files"] == [str(Path(new_user["HOME"]) / ".foundry-mcp.toml")]
    assert checks["llm"].startswith("ok: claude-cli")
    # The keyless search cannot reach its engines here: its summary must not say ok.
    assert checks["search"].startswith("failing: ddgs"), checks["search"]
    assert "public search engines" in checks["keyless_search"]
    assert doctor.returncode == 1


@pytest.mark.anyio
@pytest.mark.stdio
async def test_the_server_an_editor_starts_in_the_clone_uses_claude_and_says_it(
    clone: Path, new_user: dict[str, str]
) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "foundry_mcp"], env=new_user, cwd=str(clone)
    )
    async with Client(params, mode="legacy") as client:
        first = await call(client, action="deep-research", query=QUESTION, effort="quick")
        assert first["success"], first
        assert first["data"]["provider"].startswith("claude-cli")
        warned = [w for w in first["data"]["search"]["warnings"] if "public search" in w]
        assert len(warned) == 1 and "deep_research_providers" in warned[0]
        final = await run_to_end(client, first["data"]["research_id"], timeout=120)
        assert final["status"] == "completed", final
        assert any("public search" in w for w in final["warnings"])

        second = await call(client, action="deep-research", query=QUESTION, effort="quick")
        assert second["success"], second
        # No search reached the engines (none can here): the notice is not used up.
        assert any("public search" in w for w in second["data"]["search"]["warnings"])
        # Its start is what this shows: not run through (each call is a program started).
        cancelled = await call(
            client, action="deep-research-cancel", research_id=second["data"]["research_id"]
        )
        assert cancelled["success"], cancelled


def test_doctor_says_failing_for_a_program_that_is_not_logged_in(
    clone: Path, new_user: dict[str, str]
) -> None:
    doctor = _doctor({**new_user, "FAKE_CLI_MODE": "not_logged_in"}, clone)
    checks = json.loads(doctor.stdout)
    assert checks["llm"].startswith("failing: claude-cli"), checks["llm"]
    assert "not logged in" in checks["llm"]
    # Every provider in use whose check failed is named as failing in the summary.
    for entry in checks["providers"]:
        if entry["in_use"] and entry["status"] != "ok":
            summary = checks["llm"] if entry["role"] == "llm" else checks["search"]
            assert f"failing: {entry['name']}" in summary or f"; {entry['name']}" in summary
            assert entry["name"] not in summary.partition("ok:")[2]
    assert not any(problem.startswith("ddgs: ddgs") for problem in checks["problems"])
    assert "resume the research" not in doctor.stdout
    assert doctor.returncode == 1


@pytest.mark.parametrize(
    ("command", "named"),
    [
        (["status", "deepres-000000000000"], "`foundry-mcp list`"),
        (["report", "not-an-id"], "`foundry-mcp list`"),
    ],
)
def test_terminal_errors_name_terminal_commands(
    clone: Path, new_user: dict[str, str], command: list[str], named: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "foundry_mcp", *command, "--json"],
        env=new_user,
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert named in done.stderr and "action=" not in done.stderr
    assert named in json.loads(done.stdout)["remediation"]
