"""The command line as a person meets it: on a terminal (a pseudo-terminal here) documents are
drawn for reading, into a pipe they are JSON; the report is left in a file whose path is
printed; a reader that leaves early ends the command quietly; the stdio server started by hand
says what it is."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from foundry_mcp.cli.main import WAITING_FOR_A_CLIENT
from foundry_mcp.cli.pipes import CLOSED_PIPE_EXIT
from tests.fakes import FakeHTTPServer
from tests.support import read_terminal
from tests.unit.test_terminal_words import TOOL_SPEAK

QUESTION = "How do garbage collectors pause?"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _env(research_env: dict[str, str]) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "COLUMNS": "120", **research_env}


def piped(research_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The command with stdout and stderr into pipes, as a script runs it."""
    return subprocess.run(
        [sys.executable, "-m", "foundry_mcp", *args],
        env=_env(research_env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def on_a_terminal(research_env: dict[str, str], *args: str) -> tuple[int, str]:
    """The command with stdout on a pseudo-terminal: its exit status and what it drew (colours
    taken out, line ends as written)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "foundry_mcp", *args],
        env=_env(research_env),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.DEVNULL,
    )
    os.close(follower)
    text = drained(leader, process)
    code = process.wait(timeout=10)
    return code, text


def drained(leader: int, process: subprocess.Popen[bytes], seconds: float = 60) -> str:
    """What the process wrote to the pseudo-terminal until it closed it or ended (colours
    taken out, line ends as written); the terminal is closed after."""
    text = read_terminal(leader, process, seconds).decode("utf-8", "replace")
    text = text.replace("\r\n", "\n")
    return ANSI.sub("", text)


class Finished(NamedTuple):
    """A research run from the terminal to its end, in the store of ``env``."""

    env: dict[str, str]
    research_id: str
    done: subprocess.CompletedProcess[str]  # what the research command printed


def run_research(research_env: dict[str, str]) -> Finished:
    """Run a research from the terminal to its end."""
    done = piped(research_env, "research", QUESTION, "--max-iterations", "1")
    assert done.returncode == 0, done.stderr
    research_id = re.search(r"research (deepres-[0-9a-f]{12}) started", done.stderr)
    assert research_id is not None
    return Finished(research_env, research_id.group(1), done)


@pytest.fixture
def finished(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """A research of this test's own store, run from the terminal to its end: its id and what
    the command printed."""
    _, research_id, done = run_research(research_env)
    return research_id, done


@pytest.fixture(scope="module")
def read_only(module_research_env: dict[str, str]) -> Finished:
    """One research for the tests of this module that only read it (none changes its store)."""
    return run_research(module_research_env)


def test_a_research_leaves_its_report_in_a_file_and_says_where(read_only: Finished) -> None:
    research_env, research_id, done = read_only
    saved = re.search(r"report saved to (\S+\.md)", done.stderr)
    assert saved is not None, done.stderr
    path = Path(saved.group(1))
    # The documented default place: the reports folder beside the research store.
    assert path.parent == Path(research_env["FOUNDRY_MCP_RESEARCH_DIR"]) / "reports"
    assert path.name.endswith(f"-how-do-garbage-collectors-pause-{research_id}.md")
    assert path.read_text(encoding="utf-8").strip() == done.stdout.strip()
    # And what to run next, in the terminal's words.
    assert f"less {path}" in done.stderr
    assert f"foundry-mcp export {research_id} --format json" in done.stderr
    # Nothing is left to research (no open gap), so no further round is offered.
    assert "resume" not in done.stderr


def test_output_chooses_the_file_and_never_replaces_one_unasked(
    research_env: dict[str, str], tavily_server: FakeHTTPServer, tmp_path: Path
) -> None:
    existing = tmp_path / "notes.md"
    existing.write_text("my own notes\n")
    refused = piped(research_env, "research", QUESTION, "--output", str(existing))
    assert refused.returncode == 2
    assert f"--output {existing} exists" in refused.stderr
    assert "--overwrite" in refused.stderr and "Traceback" not in refused.stderr
    assert existing.read_text() == "my own notes\n"
    # Refused before anything was spent: no research was started.
    assert json.loads(piped(research_env, "list").stdout)["items"] == []

    missing_folder = piped(research_env, "research", QUESTION, "--output", "nowhere/r.md")
    assert missing_folder.returncode == 2 and "does not exist" in missing_folder.stderr

    chosen = tmp_path / "gc.md"
    done = piped(
        research_env, "research", QUESTION, "--max-iterations", "1", "--output", str(chosen)
    )
    assert done.returncode == 0, done.stderr
    assert f"report saved to {chosen}\n" in done.stderr
    assert chosen.read_text(encoding="utf-8").strip() == done.stdout.strip()

    replaced = piped(
        research_env,
        "research",
        QUESTION,
        "--max-iterations",
        "1",
        "--output",
        str(existing),
        "--overwrite",
        "--json",
    )
    assert replaced.returncode == 0, replaced.stderr
    document = json.loads(replaced.stdout)
    assert document["report_file"] == str(existing)
    assert existing.read_text(encoding="utf-8") == document["report"]


def test_list_status_and_doctor_are_drawn_on_a_terminal_and_json_in_a_pipe(
    research_env: dict[str, str], finished: tuple[str, subprocess.CompletedProcess[str]]
) -> None:
    research_id, _ = finished

    code, table = on_a_terminal(research_env, "list")
    assert code == 0
    header, row = table.splitlines()[:2]
    assert header.split() == ["id", "status", "age", "question"]
    assert row.split()[:4] == [research_id, "completed", "just", "now"]
    assert QUESTION in row
    listed = json.loads(piped(research_env, "list").stdout)  # a pipe: JSON, as scripts expect
    assert [item["research_id"] for item in listed["items"]] == [research_id]
    code, as_json = on_a_terminal(research_env, "list", "--json")
    assert json.loads(as_json) == listed

    # Found by the words of its question, in any case; a word it lacks finds nothing.
    assert research_id in on_a_terminal(research_env, "list", "--query", "GARBAGE pause")[1]
    assert on_a_terminal(research_env, "list", "--query", "zebra")[1].strip() == (
        "No research matches."
    )
    by_words = json.loads(piped(research_env, "list", "--query", "collectors GC").stdout)
    assert by_words["items"] == []

    code, block = on_a_terminal(research_env, "status", research_id)
    assert code == 0
    assert block.splitlines()[0].split()[:2] == [research_id, "completed"]
    labels = [line.split()[0] for line in block.splitlines()[1:] if line.strip()]
    assert {"question", "progress", "tokens", "next"} <= set(labels)
    assert f"`foundry-mcp report {research_id}`" in block
    assert not TOOL_SPEAK.search(block)
    status = json.loads(piped(research_env, "status", research_id).stdout)
    assert status["status"] == "completed"
    assert status["next_action"] == f"Read the report: `foundry-mcp report {research_id}`."

    code, checks = on_a_terminal(research_env, "doctor")
    assert code == 0
    assert re.search(r"^✓ llm\s+ok: openai:", checks, re.M)
    assert re.search(r"^✓ search\s+ok: tavily", checks, re.M)
    assert "All set: a research can start." in checks
    assert not TOOL_SPEAK.search(checks)
    assert research_env["OPENAI_API_KEY"] not in checks
    assert json.loads(piped(research_env, "doctor").stdout)["search"] == "ok: tavily"

    code, evidence = on_a_terminal(research_env, "evidence", research_id)
    assert code == 0 and re.search(r"^(supported|partial|unsupported|unverified)  ", evidence, re.M)

    code, trusted = on_a_terminal(research_env, "trust", "--list")
    assert (code, trusted.strip().splitlines()[0]) == (
        0,
        "No file is trusted. Trust one with: foundry-mcp trust ./foundry-mcp.toml",
    )
    assert json.loads(piped(research_env, "trust", "--list").stdout) == {}

    code, deleted = on_a_terminal(research_env, "delete", research_id)
    assert (code, deleted.strip()) == (0, f"{research_id} deleted, with its sources and events.")


@pytest.mark.parametrize(
    "command",
    [["doctor"], ["list"], ["events", "{id}"], ["status", "{id}"], ["report", "{id}"]],
)
def test_a_reader_that_leaves_early_ends_the_command_quietly(
    read_only: Finished, command: list[str]
) -> None:
    research_env, research_id, _ = read_only
    reader, writer = os.pipe()
    os.close(reader)  # like `| head -2` that has already exited: every write meets a closed pipe
    process = subprocess.run(
        [sys.executable, "-m", "foundry_mcp", *(a.format(id=research_id) for a in command)],
        env=_env(research_env),
        stdin=subprocess.DEVNULL,
        stdout=writer,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    os.close(writer)
    assert process.returncode == CLOSED_PIPE_EXIT
    assert "Traceback" not in process.stderr
    assert "BrokenPipe" not in process.stderr and "Exception ignored" not in process.stderr


def test_head_reads_two_lines_of_the_events_and_nothing_complains(read_only: Finished) -> None:
    research_env, research_id, _ = read_only
    shell = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m foundry_mcp events {research_id} | head -2'],
        env=_env(research_env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shell.returncode == 0
    assert len(shell.stdout.splitlines()) == 2
    assert shell.stderr == ""


@pytest.mark.stdio
def test_the_stdio_server_started_by_hand_says_it_waits_for_a_client(
    research_env: dict[str, str],
) -> None:
    leader, follower = pty.openpty()
    server = subprocess.Popen(
        [sys.executable, "-m", "foundry_mcp"],
        env=_env(research_env),
        stdin=follower,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    try:
        assert server.stderr is not None
        said = b""
        deadline = time.monotonic() + 30
        while b"Press Ctrl-C to stop." not in said and time.monotonic() < deadline:
            ready, _, _ = select.select([server.stderr], [], [], 0.5)
            if ready:
                said += os.read(server.stderr.fileno(), 4096)
        assert WAITING_FOR_A_CLIENT.encode() in said
        assert b"claude mcp add foundry-mcp -- foundry-mcp" in said
    finally:
        server.terminate()
        server.wait(timeout=10)
        os.close(leader)
    assert said.count(b"MCP server") == 1

    # Started by a client (stdin a pipe), it says nothing of the kind.
    quiet = subprocess.run(
        [sys.executable, "-m", "foundry_mcp"],
        env=_env(research_env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
    )
    assert b"waits for an MCP client" not in quiet.stderr
