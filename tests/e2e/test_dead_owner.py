"""A dead server is known dead at once, and a stopped server leaves nothing running.

Real ``python -m foundry_mcp`` processes over stdio (``tests.rawmcp``) against the fake
providers. The lease of a research lasts 20 s; every check here happens well inside it, so a
resume that succeeds proves the dead owner was recognised without waiting for the lease:

- a server killed while its parent (this test) has not reaped it stays a zombie, which still
  answers ``kill(pid, 0)``;
- a dead owner's pid taken by another process must not keep the research "running";
- SIGTERM, SIGINT and SIGHUP save running research as ``interrupted`` and release its lease
  before the process exits.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from foundry_mcp.research.store.owners import START_TOLERANCE_SECONDS
from tests.fakes import FakeHTTPServer
from tests.rawmcp import RawServer

pytestmark = pytest.mark.stdio

QUERY = "How do heat pumps perform in cold climates?"
LIMITS = {"max_iterations": 1, "max_sub_queries": 2, "max_sources_per_query": 2}
TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted"}


def ok(envelope: dict[str, Any]) -> dict[str, Any]:
    assert envelope["success"], envelope
    return dict(envelope["data"])


def start_running(server: RawServer) -> str:
    """Start a research and wait until it is running (in planning: the LLM is slow)."""
    research_id = str(
        ok(server.call({"action": "deep-research", "query": QUERY, **LIMITS}))["research_id"]
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        data = ok(server.call({"action": "deep-research-status", "research_id": research_id}))
        if data["status"] == "running":
            return research_id
        time.sleep(0.05)
    pytest.fail(f"research {research_id} never started running")


def resume_at_once(server: RawServer, research_id: str, lease_until: float) -> None:
    """The new server sees the research interrupted and resumes it before the dead owner's
    lease (until ``lease_until``, Unix time) has run out: it did not wait for the lease."""
    seen = ok(server.call({"action": "deep-research-status", "research_id": research_id}))
    assert seen["status"] == "interrupted", seen
    resumed = ok(server.call({"action": "deep-research-resume", "research_id": research_id}))
    assert resumed["resumed_from"] == "interrupted", resumed
    assert time.time() < lease_until, "the resume waited for the lease"
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        data = ok(
            server.call(
                {
                    "action": "deep-research-status",
                    "research_id": research_id,
                    "wait": True,
                    "wait_timeout": 2,
                },
                timeout=20,
            )
        )
        if data["status"] in TERMINAL:
            assert data["status"] == "completed", data
            return
    pytest.fail("the resumed research did not finish")


def research_row(research_dir: Path, research_id: str) -> dict[str, Any]:
    with sqlite3.connect(research_dir / "research.db") as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM research WHERE id = ?", (research_id,)).fetchone()
    assert row is not None
    return dict(row)


def test_a_killed_server_not_yet_reaped_is_dead_at_once(
    research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 2.0
    first = RawServer(research_env)
    try:
        research_id = start_running(first)
        first.kill(reap=False)
        assert psutil.Process(first.pid).status() == psutil.STATUS_ZOMBIE
        lease_until = research_row(Path(research_env["FOUNDRY_MCP_RESEARCH_DIR"]), research_id)[
            "lease_until"
        ]
        assert lease_until is not None and lease_until > time.time()  # renewed every 5 s

        openai_server.latency = 0
        with RawServer(research_env) as second:
            resume_at_once(second, research_id, lease_until)
            assert psutil.Process(first.pid).status() == psutil.STATUS_ZOMBIE  # still unreaped
    finally:
        first.reap()


def test_a_dead_owners_pid_reused_by_another_process_does_not_keep_it_running(
    research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    research_dir = Path(research_env["FOUNDRY_MCP_RESEARCH_DIR"])
    openai_server.latency = 2.0
    with RawServer(research_env) as first:
        research_id = start_running(first)
        first.kill()
    owner = research_row(research_dir, research_id)
    assert owner["owner_pid"] == first.pid and owner["owner_started"], owner

    # Another process now has the dead owner's pid: the row names a live pid, with a fresh
    # lease, but that process started at another time than the owner did (later than the
    # tolerance of start times read from the OS: a real pid is reused much later still).
    while time.time() < owner["owner_started"] + START_TOLERANCE_SECONDS + 0.5:
        time.sleep(0.05)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lease_until = time.time() + 600
        with sqlite3.connect(research_dir / "research.db") as db:
            db.execute(
                "UPDATE research SET owner_pid = ?, lease_until = ? WHERE id = ?",
                (stranger.pid, lease_until, research_id),
            )
        openai_server.latency = 0
        with RawServer(research_env) as second:
            resume_at_once(second, research_id, lease_until)
    finally:
        stranger.kill()
        stranger.wait()


def test_a_live_owner_under_its_own_pid_and_start_time_is_left_running(
    research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    """The control for the test above: the same row, with the stranger's true start time."""
    research_dir = Path(research_env["FOUNDRY_MCP_RESEARCH_DIR"])
    openai_server.latency = 2.0
    with RawServer(research_env) as first:
        research_id = start_running(first)
        first.kill()
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with sqlite3.connect(research_dir / "research.db") as db:
            db.execute(
                "UPDATE research SET owner_pid = ?, owner_started = ?, lease_until = ? "
                "WHERE id = ?",
                (
                    stranger.pid,
                    psutil.Process(stranger.pid).create_time(),
                    time.time() + 600,
                    research_id,
                ),
            )
        with RawServer(research_env) as second:
            seen = ok(second.call({"action": "deep-research-status", "research_id": research_id}))
            assert seen["status"] == "running", seen
            refused = second.call({"action": "deep-research-resume", "research_id": research_id})
            assert refused["data"]["error_code"] == "INVALID_STATE", refused
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_saves_running_research_as_interrupted_before_exit(
    signum: int, research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    research_dir = Path(research_env["FOUNDRY_MCP_RESEARCH_DIR"])
    openai_server.latency = 5.0  # the planner's call is in flight when the signal comes
    with RawServer(research_env) as server:
        research_id = start_running(server)
        sent = time.monotonic()
        code = server.stop_with(signum)
        stopped_in = time.monotonic() - sent
    assert code == 128 + signum, server.stderr_text()
    # Not waiting for the planner's answer (5 s): a loaded machine may take a few seconds.
    assert stopped_in < 4.0, f"the server took {stopped_in:.2f} s to stop"
    row = research_row(research_dir, research_id)
    assert row["status"] == "interrupted", row
    assert row["owner_token"] is None and row["lease_until"] is None, row
    assert "Traceback" not in server.stderr_text()
