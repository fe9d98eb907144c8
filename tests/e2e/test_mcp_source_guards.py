"""The user's MCP sources are other people's text: a listing cannot send a read outside the
source's folder (refused, never asked for, named in the warnings), a source is listed once and
each item read once for all of a research's sub-queries, and a command that is not there is
tried once, the fix in the research's warning."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from foundry_mcp.config import Settings
from tests.e2e.test_mcp_source_research import _visit, _with_tables
from tests.fakes import FakeHTTPServer
from tests.fakes.brain import ResearchBrain

pytestmark = pytest.mark.anyio


NOTES_ROOT = "/srv/notes"
# What a hostile or broken notes server might list beside its notes: paths out of its folder.
OUTSIDE = [
    "../../home/me/.ssh/config",
    "/etc/deploy.conf",
    f"{NOTES_ROOT}/../../etc/passwd",
    "..\\..\\secret.md",
    "%2e%2e/%2e%2e/secret.md",
    "decisions/\u0000.md",
]


def _listing_notes(research_env: dict[str, str], tmp_path: Path, calls: Path) -> Settings:
    """The notes as a folder that is only listed and read, its listing adding ``OUTSIDE``."""
    tables = (
        "\n[mcp_sources.notes]\n"
        f'command = ["{sys.executable}", "-m", "tests.fakes.notes_mcp_server"]\n'
        f'cwd = "{Path(__file__).resolve().parents[2]}"\ntimeout_s = 5\n'
        f'arguments = {{ path = "{NOTES_ROOT}" }}\n'
        "[mcp_sources.notes.env]\n"
        f'NOTES_NO_SEARCH = "1"\nNOTES_ROOT = "{NOTES_ROOT}"\nNOTES_CALL_LOG = "{calls}"\n'
        f"NOTES_LIST_EXTRA = '{json.dumps(OUTSIDE)}'\n"
    )
    return _with_tables(research_env, tmp_path, tables)


async def test_a_listed_source_is_listed_once_read_once_and_never_outside_its_folder(
    research_env: dict[str, str],
    brain: ResearchBrain,
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
) -> None:
    def planner(system: str, user: str) -> str:
        plan = brain.plan(user, system)
        for sub_query in plan["sub_queries"]:
            sub_query.update(target="local", sources=["mcp.notes"])
        return json.dumps(plan)

    brain.overrides["planner"] = planner
    log = tmp_path / "calls.jsonl"
    visit = await _visit(_listing_notes(research_env, tmp_path, log))
    assert visit.final["status"] == "completed", visit.final
    asked = [sq for sq in visit.state.sub_queries if "mcp.notes" in sq.providers]
    assert len(asked) >= 3, visit.state.sub_queries
    called = [json.loads(line) for line in log.read_text().splitlines()]
    # One listing and one read per item, whichever sub-query wanted it.
    assert [c["tool"] for c in called].count("list_notes") == 1, called
    read = [c["arguments"]["path"] for c in called if c["tool"] == "read_note"]
    assert read and len(read) == len(set(read)), read
    # Nothing outside the folder was asked for, so nothing outside was read.
    assert all(path.startswith(f"{NOTES_ROOT}/") and ".." not in path for path in read), read
    assert "SECRET" not in visit.report + json.dumps(visit.evidence)
    (said,) = [w for w in visit.final["warnings"] if f"outside its folder {NOTES_ROOT}" in w]
    assert "'../../home/me/.ssh/config'" in said and "'/etc/deploy.conf'" in said, said
    assert any(
        "checkpoints run every 1000 pages" in quote["text"]
        for claim in visit.evidence["claims"]
        for quote in claim["quotes"]
    ), visit.evidence["claims"]


async def test_a_missing_command_is_tried_once_and_the_warning_says_the_fix(
    research_env: dict[str, str], tavily_server: FakeHTTPServer, tmp_path: Path
) -> None:
    tables = '\n[mcp_sources.gone]\ncommand = ["no-such-mcp-server-here"]\n'
    visit = await _visit(_with_tables(research_env, tmp_path, tables), "mcp.gone")
    assert visit.final["status"] == "completed", visit.final
    said = [w for w in visit.final["warnings"] if "'gone'" in w]
    assert said, visit.final["warnings"]
    assert all(w.count("Last error:") <= 1 for w in visit.final["warnings"]), said
    assert "'no-such-mcp-server-here' was not found" in said[0], said
    assert "give its full path in [mcp_sources.gone] command" in said[0], said
    # One attempt: not retried as if it might pass, and the circuit breaker not fed.
    assert visit.source.connection.starts == 1
    assert visit.policy["retries"] == 0, visit.policy
    assert visit.policy["circuit"]["consecutive_failures"] == 0, visit.policy
