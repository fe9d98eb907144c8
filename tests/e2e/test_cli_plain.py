"""What a page says reaches the terminal as plain text: a page whose title and one sentence hold
escape sequences (clear the screen, hidden text, an OSC 8 link, an 8-bit CSI) and bidi
overrides is researched through the real command line, and no view, report file or export
carries them. The research table keeps whole ids on a narrow terminal, and a standard research
whose pages were read in part says the reading budget chose, not the window."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeHTTPServer, fake_tavily
from tests.fakes.providers import default_results
from tests.support import read_terminal

QUESTION = "How do garbage collectors pause?"
HOSTILE = (
    "\x1b[2J\x1b[8mhidden\x1b[0m \x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\ "
    "\x9b2J \u202etxet desrever\u202c \u2066isolated\u2069"
)
VIEWS = ("report", "evidence", "status")  # the views of one research drawn on a terminal
SAID = "hidden click"  # the visible words of HOSTILE stay, in their order, as text
# What of HOSTILE must never reach a terminal or a file, in any form.
PAGE_SEQUENCES = ("\x1b[2J", "\x1b[8m", "\x1b]", "]8;;", "evil.example")
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Our own styling on a terminal: colours (never 8, hidden), and the live line's cursor moves.
OWN_SEQUENCE = re.compile(r"\x1b\[(?:(?:[0-79]|[0-9]{2,3})(?:;[0-9]+)*)?m|\x1b\[\??[0-9]*[A-HKhl]")


def hostile_results(query: str) -> list[dict[str, Any]]:
    """The usual results, the first a page whose title and first sentence hold HOSTILE."""
    results = default_results(query)
    first = results[0]
    first["title"] = f"Collector pauses {HOSTILE} explained"
    first["raw_content"] = (
        f"Garbage collectors pause every thread for {HOSTILE} marking roots in 5 ms.\n\n"
        + first["raw_content"]
    )
    return results


@pytest.fixture
def tavily_server() -> Iterator[FakeHTTPServer]:
    with fake_tavily(hostile_results) as server:
        yield server


def _env(research_env: dict[str, str], columns: int = 120) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "COLUMNS": str(columns), **research_env}


def piped(
    research_env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "foundry_mcp", *args],
        env=_env(research_env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def on_a_terminal(research_env: dict[str, str], *args: str, columns: int = 120) -> str:
    """What the command wrote with stdout and stderr on one pseudo-terminal, raw."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "foundry_mcp", *args],
        env=_env(research_env, columns),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    written = read_terminal(leader, process)
    assert process.wait(timeout=10) == 0
    return written.decode("utf-8", "replace")


def assert_plain(text: str, *, own_styling: bool = False) -> None:
    """Nothing of the page's sequences in ``text``; with ``own_styling``, the only escape
    sequences left are the colours and cursor moves the command draws with."""
    for sequence in PAGE_SEQUENCES:
        assert sequence not in text
    left = OWN_SEQUENCE.sub("", text) if own_styling else text
    assert not CONTROLS.search(left.replace("\r", "")), repr(CONTROLS.findall(left))


def started(done: subprocess.CompletedProcess[str] | str) -> str:
    said = done if isinstance(done, str) else done.stderr
    found = re.search(r"research (deepres-[0-9a-f]{12}) started", said)
    assert found is not None, said
    return found.group(1)


def test_a_hostile_page_reaches_every_terminal_view_as_plain_text(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    drawn = on_a_terminal(research_env, "research", QUESTION, "--max-iterations", "1")
    research_id = started(drawn)
    assert_plain(drawn, own_styling=True)
    assert SAID in drawn  # the page's words are shown, only its sequences are gone

    shown = {command: on_a_terminal(research_env, command, research_id) for command in VIEWS}
    for view in shown.values():
        assert_plain(view, own_styling=True)
    assert SAID in shown["report"]
    assert "hidden" in shown["evidence"]
    listed = on_a_terminal(research_env, "list")
    assert_plain(listed, own_styling=True)
    assert research_id in listed

    # Into pipes (JSON for scripts, the report as Markdown): no escape sequence at all, not even
    # escaped as \u001b in JSON, which a script that prints the string would send on.
    for args in (
        ["report", research_id],
        ["report", research_id, "--json"],
        ["evidence", research_id],
        ["status", research_id],
        ["events", research_id],
        ["list"],
    ):
        done = piped(research_env, *args)
        assert done.returncode == 0, done.stderr
        assert_plain(done.stdout)
        assert_plain(done.stderr)
        assert "\\u001b" not in done.stdout and "\\u009b" not in done.stdout


def test_the_report_file_and_every_export_are_plain_text(
    research_env: dict[str, str], tavily_server: FakeHTTPServer, tmp_path: Path
) -> None:
    done = piped(research_env, "research", QUESTION, "--max-iterations", "1")
    assert done.returncode == 0, done.stderr
    research_id = started(done)
    assert_plain(done.stdout)
    assert_plain(done.stderr)
    saved = re.search(r"report saved to (\S+\.md)", done.stderr)
    assert saved is not None, done.stderr
    report = Path(saved.group(1)).read_text(encoding="utf-8")
    assert_plain(report)
    assert SAID in report and "# " in report  # Markdown stays Markdown

    for fmt in ("markdown", "json", "bibtex", "ris"):
        out = tmp_path / f"export.{fmt}"
        exported = piped(
            research_env, "export", research_id, "--format", fmt, "--out", out.name, cwd=tmp_path
        )
        assert exported.returncode == 0, exported.stderr
        text = out.read_text(encoding="utf-8")
        assert_plain(text)
        assert "\\u001b" not in text and "\\u009b" not in text and "\\u202e" not in text
        assert "Collector pauses" in text
    titles = [s["title"] for s in json.loads((tmp_path / "export.json").read_text())["sources"]]
    assert any(title.startswith(f"Collector pauses {SAID}") for title in titles)


def test_the_research_table_keeps_whole_ids_status_and_age_at_80_columns(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    long_question = (
        "How do garbage collectors pause application threads in the JVM, Go and .NET, and "
        "what do the low-latency collectors change about those pauses?"
    )
    done = piped(research_env, "research", long_question, "--max-iterations", "1")
    research_id = started(done)
    for columns in (80, 120, 160):
        drawn = re.sub(
            r"\x1b\[[0-9;?]*[A-Za-z]", "", on_a_terminal(research_env, "list", columns=columns)
        )
        header, row = drawn.replace("\r\n", "\n").splitlines()[:2]
        assert header.split()[:4] == ["id", "status", "age", "question"]
        assert row.split()[:4] == [research_id, "completed", "just", "now"]
        assert len(row.rstrip()) <= columns and row.rstrip().endswith("…")


@pytest.fixture
def long_pages() -> Iterator[FakeHTTPServer]:
    """Pages far longer than an 8,000-token reading budget reads of them (about 9,400 tokens each)."""

    def results(query: str) -> list[dict[str, Any]]:
        found = default_results(query)
        for n, result in enumerate(found):
            result["raw_content"] = "\n\n".join(
                f"Section {k} of page {n}: collectors pause threads at safepoints for {k} ms "
                f"while region {k} is marked and compacted; flag {k} tunes that pause."
                for k in range(200)
            )
        return found

    with fake_tavily(results) as server:
        yield server


def test_a_standard_research_read_in_part_says_the_reading_budget_chose(
    research_env: dict[str, str], long_pages: FakeHTTPServer
) -> None:
    env = {**research_env, "TAVILY_BASE_URL": long_pages.base_url}
    done = piped(env, "research", QUESTION, "--max-iterations", "1", "--reading-budget", "8000")
    assert done.returncode == 0, done.stderr
    status = json.loads(piped(env, "status", started(done)).stdout)
    assert status["fidelity"]["score"] < 0.5
    fidelity = [w for w in status["warnings"] if w.startswith("Content fidelity is")]
    assert len(fidelity) == 1  # the research as it is now, not each analysis call's figure
    for warning in (fidelity[0], status["fidelity"]["warning"]):
        assert "the reading budget read the most relevant part of" in warning
        assert "--reading-budget" in warning and "--effort deep" in warning
        assert "context window" not in warning and "deep_research_max_sources" not in warning
