"""A whole research with no key at all: Claude Code's program answers on its user's login.

Only a fake ``claude`` is on ``PATH`` (``tests/fakes/cli_bins.py``, which answers with the fake
research brain); no LLM or search key is set and no configuration names a provider. foundry-mcp
must find ``claude``, say so, and complete a cited report (from the user's notes; the keyless
web search cannot reach the internet here) in the terminal and over MCP stdio, every prompt
having gone through stdin.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import call, editor_stdio, run_to_end
from tests.fakes.cli_bins import LOG_ENV, read_calls, write_cli_bins

QUESTION = "How does WAL mode work in SQLite?"
LLM_KEYS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")


@pytest.fixture
def claude_only_env(research_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """``research_env`` without LLM keys, with only the fake ``claude`` first on PATH."""
    bin_dir = write_cli_bins(tmp_path / "bin", programs=("claude",))
    calls = tmp_path / "claude-calls"
    calls.mkdir()
    env = {key: value for key, value in research_env.items() if key not in LLM_KEYS}
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    env[LOG_ENV] = str(calls)
    return env


def _assert_prompts_went_through_stdin(calls_dir: Path) -> None:
    calls = read_calls(calls_dir)
    assert calls, "claude was never run"
    assert {call["program"] for call in calls} == {"claude"}
    for recorded in calls:
        assert recorded["stdin"].strip()
        assert recorded["argv"][-2] == "--system-prompt-file"  # no prompt argument after it
        assert QUESTION not in " ".join(recorded["argv"])


NOTES = {
    "wal.md": (
        "# Write-ahead logging in SQLite\n\n"
        "In WAL mode SQLite appends changes to a separate write-ahead log file and readers "
        "keep reading the database file, so readers do not block the writer.\n\n"
        "A checkpoint copies the pages of the WAL back into the database file; by default it "
        "runs when the WAL reaches 1000 pages.\n"
    ),
    "locking.md": (
        "# SQLite locking\n\n"
        "WAL mode in SQLite allows one writer and many concurrent readers. The WAL index is "
        "kept in a shared-memory file next to the database.\n"
    ),
}


@pytest.fixture
def zero_key_env(claude_only_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """No key at all (no LLM key, no search key), no provider named in any configuration:
    only the fake ``claude`` on PATH and a folder of notes."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)
    config = Path(claude_only_env["FOUNDRY_MCP_CONFIG"])
    # The keyless web search cannot reach the internet here: it fails at once, not after retries.
    config.write_text(
        config.read_text()
        + f'\n[research.local]\npaths = ["{notes}"]\n\n[providers.ddgs]\nmax_retries = 0\n'
    )
    env = {k: v for k, v in claude_only_env.items() if k not in ("TAVILY_API_KEY",)}
    # As when Claude Code itself started foundry-mcp: the nesting marker is inherited.
    return {**env, "CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli"}


def test_zero_keys_in_the_terminal_finds_claude_and_says_so(zero_key_env: dict[str, str]) -> None:
    doctor = subprocess.run(
        [sys.executable, "-m", "foundry_mcp", "doctor"],
        env=zero_key_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    checks = json.loads(doctor.stdout)
    assert "claude-cli" in checks["llm_choice"] and "Claude Code" in checks["llm_choice"]
    assert checks["llm"].startswith("ok: claude-cli")

    done = subprocess.run(
        [sys.executable, "-m", "foundry_mcp", "research", QUESTION, "--effort", "quick", "--json"],
        env=zero_key_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout)
    assert final["status"] == "completed", final["error"]
    assert final["provider"].startswith("claude-cli")
    assert "claude-cli" in final["provider_choice"]
    assert re.search(r"\[\d+\]", final["report"]), "the report cites its sources"
    assert "notes/" in final["report"] or "wal.md" in final["report"]
    _assert_prompts_went_through_stdin(Path(zero_key_env[LOG_ENV]))


@pytest.mark.anyio
@pytest.mark.stdio
async def test_zero_keys_over_mcp_stdio(zero_key_env: dict[str, str]) -> None:
    async with editor_stdio(zero_key_env) as client:
        started = await call(client, action="deep-research", query=QUESTION, effort="quick")
        assert started["success"], started
        assert "claude-cli" in started["data"]["provider_choice"]
        research_id = started["data"]["research_id"]
        final = await run_to_end(client, research_id, timeout=120)
        assert final["status"] == "completed", final
        assert final["provider_choice"] == started["data"]["provider_choice"]
        report = await call(client, action="deep-research-report", research_id=research_id)
        assert re.search(r"\[\d+\]", report["data"]["report"])
