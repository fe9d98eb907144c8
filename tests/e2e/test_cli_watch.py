"""``foundry-mcp watch``: follow a research that another foundry-mcp process runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from tests.e2e.test_cli import _run
from tests.fakes import FakeHTTPServer


def test_watch_follows_a_research_run_by_another_process_to_the_end(
    research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 0.3  # long enough for the watcher to arrive while it runs
    runner = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "foundry_mcp",
            "research",
            "How do B-trees",
            "--max-iterations",
            "1",
        ],
        env={"PATH": os.environ.get("PATH", ""), **research_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert runner.stderr is not None
        first = runner.stderr.readline()
        research_id = re.search(r"research (deepres-[0-9a-f]{12}) started", first).group(1)  # type: ignore[union-attr]
        watched = _run(research_env, "watch", research_id)
        ran_stdout, _ = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 0
    assert watched.returncode == 0, watched.stderr
    assert f"research {research_id} watched" in watched.stderr
    assert "synthesis" in watched.stderr  # it saw the research move, not only its end
    assert watched.stdout.strip() == ran_stdout.strip()  # the same report

    as_json = json.loads(_run(research_env, "watch", research_id, "--json").stdout)
    assert as_json["status"] == "completed"
    assert as_json["report"].strip() == ran_stdout.strip()


def test_watch_of_an_unknown_research_exits_2(research_env: dict[str, str]) -> None:
    result = _run(research_env, "watch", "deepres-000000000000")
    assert result.returncode == 2
    assert "No research with id" in result.stderr
    assert result.stdout == ""
