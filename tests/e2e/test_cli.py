"""The ``foundry-mcp`` command line, run as a user runs it, against the fakes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.fakes import FakeHTTPServer
from tests.support import assert_citations_resolve, served_urls


def _run(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "foundry_mcp", *args],
        env={"PATH": os.environ.get("PATH", ""), **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_research_in_the_terminal_then_status_report_list_delete(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    done = _run(
        research_env, "research", "How do garbage collectors pause?", "--max-iterations", "1"
    )
    assert done.returncode == 0, done.stderr
    # Progress on stderr, the report alone on stdout.
    assert "synthesis" in done.stderr
    research_id = re.search(r"research (deepres-[0-9a-f]{12}) started", done.stderr).group(1)  # type: ignore[union-attr]
    assert done.stdout.lstrip().startswith("# ")
    assert_citations_resolve(done.stdout, served_urls(tavily_server))

    status = json.loads(_run(research_env, "status", research_id).stdout)
    assert status["status"] == "completed"

    report = _run(research_env, "report", research_id)
    assert report.stdout.strip() == done.stdout.strip()

    listed = json.loads(_run(research_env, "list", "--completed-only").stdout)
    assert [item["research_id"] for item in listed["items"]] == [research_id]

    deleted = json.loads(_run(research_env, "delete", research_id).stdout)
    assert deleted == {"research_id": research_id, "deleted": True}
    missing = _run(research_env, "status", research_id)
    assert missing.returncode == 2
    assert "No research with id" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_cli_errors_are_one_line_with_a_fix(research_env: dict[str, str]) -> None:
    env = {k: v for k, v in research_env.items() if k != "OPENAI_API_KEY"}
    result = _run(env, "research", "What is a monad?")
    assert result.returncode == 2
    assert result.stderr.startswith("error: No API key is configured")
    assert "fix: Set OPENAI_API_KEY" in result.stderr
    assert result.stdout == ""

    unknown_kind = _run(research_env, "research", "What is a monad?", "--source-types", "blogs")
    assert unknown_kind.returncode == 2
    assert "'blogs'" in unknown_kind.stderr and "academic" in unknown_kind.stderr

    bad_site = _run(research_env, "research", "What is a monad?", "--prefer", "not a site")
    assert bad_site.returncode == 2
    # The field is named as the terminal knows it: the --prefer option.
    assert "--prefer" in bad_site.stderr and "Traceback" not in bad_site.stderr

    bad_id = _run(research_env, "report", "../../etc/passwd")
    assert bad_id.returncode == 2
    assert "not a valid research id" in bad_id.stderr


def test_doctor_reports_usable_providers(research_env: dict[str, str]) -> None:
    result = _run(research_env, "doctor")
    assert result.returncode == 0, result.stdout
    checks = json.loads(result.stdout)
    assert checks["llm"].startswith("ok: openai:")
    assert checks["search"] == "ok: tavily"
    assert checks["page_extraction"] == "ok: trafilatura"
    assert checks["warnings"] == []
    assert research_env["OPENAI_API_KEY"] not in result.stdout


@pytest.mark.stdio
def test_server_mode_writes_only_protocol_messages_to_stdout(research_env: dict[str, str]) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "research", "arguments": {"action": "deep-research-list"}},
        },
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "foundry_mcp"],
        env={"PATH": os.environ.get("PATH", ""), **research_env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        for message in messages:
            server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        answers = []
        while {a.get("id") for a in answers} < {1, 2, 3}:
            line = server.stdout.readline()
            assert line, "the server closed stdout early"
            answers.append(json.loads(line))  # every line is a JSON-RPC message, nothing else
    finally:
        server.stdin.close()
        server.wait(timeout=20)
        server.stdout.close()
        if server.stderr:
            server.stderr.close()
    assert all(a.get("jsonrpc") == "2.0" for a in answers)
    result = next(a for a in answers if a.get("id") == 3)["result"]
    assert result["structuredContent"]["success"] is True


def test_plain_progress_and_json_outputs(research_env: dict[str, str]) -> None:
    done = _run(
        research_env,
        "research",
        "What is a B-tree?",
        "--max-iterations",
        "1",
        "--max-time",
        "60",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    # stderr is a pipe: plain progress lines, one per change, no terminal control codes.
    lines = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert len(lines) >= 2 and "\x1b" not in done.stderr and "\r" not in done.stderr
    assert all("sub-queries" in line and "cost" in line for line in lines)
    assert len(set(lines)) == len(lines)
    # --json: one document, the final status and the report.
    payload = json.loads(done.stdout)
    research_id = payload["research_id"]
    assert payload["status"] == "completed" and payload["report"].lstrip().startswith("# ")

    documents = {}
    for args in (
        ("status", research_id),
        ("report", research_id),
        ("list",),
        ("events", research_id),
        ("export", research_id),
        ("doctor",),
    ):
        result = _run(research_env, *args, "--json")
        assert result.returncode == 0, (args, result.stderr)
        documents[args[0]] = json.loads(result.stdout)
        assert isinstance(documents[args[0]], dict), args
    events = documents["events"]
    assert events["events"] and events["research_id"] == research_id
    assert documents["export"]["content"].lstrip().startswith("# ")
    deleted = json.loads(_run(research_env, "delete", research_id, "--json").stdout)
    assert deleted == {"research_id": research_id, "deleted": True}


def test_max_time_reaches_the_research(research_env: dict[str, str]) -> None:
    refused = _run(research_env, "research", "What is a B-tree?", "--max-time", "1")
    assert refused.returncode == 2
    assert "max_time_s" in refused.stderr and "Traceback" not in refused.stderr


def test_cli_errors_speak_of_the_shell_environment(research_env: dict[str, str]) -> None:
    env = {k: v for k, v in research_env.items() if k != "TAVILY_API_KEY"}
    env["FOUNDRY_MCP_SEARCH_PROVIDERS"] = "tavily"  # not the web search that needs no key
    result = _run(env, "research", "What is a monad?")
    assert result.returncode == 2
    assert "in your shell environment (export TAVILY_API_KEY=...)" in result.stderr
    assert "env block" not in result.stderr
    doctor = _run(env, "doctor", "--json")
    assert doctor.returncode == 1
    assert "export TAVILY_API_KEY=..." in doctor.stdout and "env block" not in doctor.stdout
