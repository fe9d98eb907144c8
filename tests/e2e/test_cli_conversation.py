"""``foundry-mcp research`` talking with the person at the terminal: a vague question is clarified
there, a plan to review is shown and approved or edited there; a question left unanswered leaves
the next line to the next question and nothing to wait for at the end; in a script nothing is
asked, a plan to review stops the command with the commands that approve it."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.test_terminal import ANSI, _env, drained, piped
from tests.fakes import FakeHTTPServer
from tests.support import searched_queries

VAGUE = "What is the best database?"
EDITED = ["sqlite wal checkpoint starvation", "sqlite wal_autocheckpoint pragma"]


def typed_at_a_terminal(
    research_env: dict[str, str], answers: str, *args: str
) -> tuple[int, str, str]:
    """The command with stdin and stderr on a pseudo-terminal where ``answers`` are typed:
    its exit status, its stdout and what it said on the terminal."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "foundry_mcp", *args],
        env=_env(research_env),
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    os.write(leader, answers.encode())  # typed ahead: the terminal keeps it until read
    said = drained(leader, process)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    code = process.wait(timeout=10)
    return code, out, said


def test_the_person_at_the_terminal_clarifies_and_edits_the_plan(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    # The workload (choice 2), the time frame, then the plan: approve (Enter), new searches.
    answers = "2\n2024\n\n" + "; ".join(EDITED) + "\n"
    code, out, said = typed_at_a_terminal(
        research_env, answers, "research", VAGUE, "--review-plan", "--max-iterations", "1"
    )
    assert code == 0, said
    assert "Which workload matters most to you?" in said and "1. transactions (OLTP)" in said
    assert "Research plan for: What is the best database?" in said
    assert "Asked before researching" in out and "analytics (OLAP)" in out and "2024" in out
    assert set(searched_queries(tavily_server)) == set(EDITED)


def read_until(
    leader: int, process: subprocess.Popen[bytes], text: str | None, seconds: float = 60
) -> str:
    """What the process wrote to the pseudo-terminal (colours taken out) until it wrote
    ``text`` (None: until it ended), the terminal left open; AssertionError if that did not
    happen within ``seconds``."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if select.select([leader], [], [], 0.2)[0]:
            try:
                chunks.append(os.read(leader, 65536))
            except OSError:  # it closed the terminal
                break
        elif text is None and process.poll() is not None:
            break
        said = ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")
        if text is not None and text in said:
            return said
    if text is None:  # the terminal closed as the process ends: give it the time left to end
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
    said = ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")
    assert text is None and process.poll() is not None, (
        f"{text!r} not written, or still on:\n{said}"
    )
    return said


def test_a_question_left_unanswered_leaves_the_next_line_to_the_next_question(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    config = Path(research_env["FOUNDRY_MCP_CONFIG"])
    config.write_text(config.read_text() + "\n[research]\nclarify_timeout = 5\n")
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "foundry_mcp", "research", VAGUE, "--review-plan"],
        env=_env(research_env),
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    try:
        # Nobody answers the clarifying questions; the plan's form is shown after them.
        said = read_until(leader, process, "Approve this plan?")
        assert "Which workload matters most to you?" in said and "no answer in time" in said
        os.write(leader, b"cancel\n\n")  # the next lines typed answer the plan's form
        # It ends by itself: nothing left reading the terminal holds it open for an Enter.
        said += read_until(leader, process, None, seconds=30)
        code = process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    assert "research ended cancelled" in said, said
    assert code == 1
    assert searched_queries(tavily_server) == []


def test_a_script_is_asked_nothing_and_a_plan_to_review_waits_for_resume(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    waiting = piped(research_env, "research", VAGUE, "--review-plan", "--max-iterations", "1")
    assert waiting.returncode == 1, waiting.stderr
    assert "waits for its plan's approval; nothing is searched yet" in waiting.stderr
    assert "Which workload" not in waiting.stderr
    assert searched_queries(tavily_server) == []
    found = re.search(r"foundry-mcp resume (deepres-[0-9a-f]{12})\n", waiting.stderr)
    assert found is not None, waiting.stderr
    done = piped(research_env, "resume", found.group(1), "--plan", EDITED[0], "--plan", EDITED[1])
    assert done.returncode == 0, done.stderr
    assert set(searched_queries(tavily_server)) == set(EDITED)
    # Nobody could be asked: the report says what the research assumed.
    assert "the user could not be asked" in done.stdout


def test_a_follow_up_is_asked_from_the_terminal(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    done = piped(
        research_env, "research", "How do heat pumps work in cold climates?", "--clarify", "off"
    )
    assert done.returncode == 0, done.stderr
    found = re.search(r"research (deepres-[0-9a-f]{12}) started", done.stderr)
    assert found is not None
    searched = len(searched_queries(tavily_server))
    asked = piped(
        research_env,
        "ask",
        found.group(1),
        "What share of practitioners consider heat pumps a priority?",
    )
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)  # into a pipe: the JSON document
    assert answer["answerable"] and answer["sources"] and "[1]" in answer["answer"]
    assert len(searched_queries(tavily_server)) == searched  # no new search

    unanswered = piped(
        research_env, "ask", found.group(1), "What does the Martian tax code say about penguins?"
    )
    assert unanswered.returncode == 1
    said = json.loads(unanswered.stdout)
    assert not said["answerable"]
    assert f"foundry-mcp resume {found.group(1)}" in said["next_action"]
    assert re.search(r"--max-iterations \d", said["next_action"])
    assert "action=" not in said["next_action"]  # said for the terminal
