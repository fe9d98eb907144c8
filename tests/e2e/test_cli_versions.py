"""A report that lives on the command line: ``foundry-mcp revise`` followed to its end with its
cost by phase, ``foundry-mcp versions`` (and ``--diff A B``), and ``--version N`` on ``report``
and ``export``; errors with their fix, in the terminal's words."""

from __future__ import annotations

import json
import re

from foundry_mcp.config import Settings
from tests.e2e.test_cli import _run
from tests.fakes import FakeHTTPServer
from tests.report_versions import store_versioned_and_stopped

RID = "deepres-0000000000c3"
STOPPED = "deepres-0000000000d4"


def test_revise_in_the_terminal_shows_progress_then_the_version_and_its_cost(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    done = _run(research_env, "research", "How do bloom filters work?", "--max-iterations", "1")
    assert done.returncode == 0, done.stderr
    rid = re.search(r"research (deepres-[0-9a-f]{12}) started", done.stderr).group(1)  # type: ignore[union-attr]

    revised = _run(
        research_env, "revise", rid, "--rewrite", "--form", "brief", "--audience", "a CFO"
    )
    assert revised.returncode == 0, revised.stderr
    assert "version 2: Rewrite: write the report again as a one-page brief for a CFO" in (
        revised.stderr
    )
    assert revised.stdout.lstrip().startswith("# ")
    cost = revised.stderr[revised.stderr.index("version 2 (rewrite (brief, a CFO)) cost:") :]
    assert re.search(r"tokens in \d+ calls, about \$[\d.]+ \(estimated\); 0 searches", cost)
    assert re.search(r"^  synthesis +[\d,]+ \+ [\d,]+ tokens", cost, re.MULTILINE)

    listed = json.loads(_run(research_env, "versions", rid).stdout)
    assert [(v["number"], v["kind"]) for v in listed["versions"]] == [
        (1, "research"),
        (2, "rewrite"),
    ]
    first = _run(research_env, "report", rid, "--version", "1")
    assert (
        first.returncode == 0
        and first.stdout.split("\n---\n")[0] == done.stdout.split("\n---\n")[0]
    )


def test_versions_diff_and_a_version_read_or_exported(
    settings: Settings, research_env: dict[str, str]
) -> None:
    store_versioned_and_stopped(settings, RID, STOPPED)

    listed = json.loads(_run(research_env, "versions", RID).stdout)
    assert [v["changes_summary"] for v in listed["versions"]] == [
        None,
        None,
        "1 new source; 1 new finding",
    ]
    delta = json.loads(_run(research_env, "versions", RID, "--diff", "1", "3").stdout)["delta"]
    assert (delta["version"], delta["compare_to"]) == (3, 1)
    assert delta["added"]["findings"][0]["content"] == "2026 models reach COP 1.8 at -30 C."

    old = _run(research_env, "report", RID, "--version", "1")
    assert old.stdout.startswith("# Heat pumps in cold climates")
    exported = _run(research_env, "export", RID, "--version", "2")
    assert "*Version 2 of 3: a rewrite (brief, for the CFO)" in exported.stdout

    missing = _run(research_env, "versions", RID, "--diff", "1", "9")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "has no version 9 of its report; its versions: 1, 2, 3." in missing.stderr
    assert "`foundry-mcp versions deepres-0000000000c3`" in missing.stderr  # not a tool call

    stopped = _run(research_env, "revise", STOPPED, "--rewrite")
    assert stopped.returncode == 2
    assert "fix: Resume it (`foundry-mcp resume deepres-0000000000d4`)" in stopped.stderr
    searches_for_a_rewrite = _run(research_env, "revise", RID, "--rewrite", "--max-searches", "3")
    assert searches_for_a_rewrite.returncode == 2
    assert "a rewrite makes no search" in searches_for_a_rewrite.stderr
    no_kind = _run(research_env, "revise", RID)
    assert no_kind.returncode == 2 and "one of the arguments --rewrite" in no_kind.stderr
