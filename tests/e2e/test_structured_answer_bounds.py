"""A caller's output_schema can neither crash a research's start nor stall the server, over a
real MCP session and on the command line: a schema nested 150 deep is refused naming the limit
and where; a pattern RE2 cannot run (a backreference) is refused naming its pointer; a pattern
that makes Python's re backtrack for seconds is run by RE2, and the server answers another
research's status calls at once meanwhile."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from foundry_mcp.server import create_server
from tests.e2e.conftest import call, run_to_end
from tests.e2e.test_structured_answer_research import (
    QUESTION,
    SCHEMA,
    _pages,
    _rows,
    _settings,
)
from tests.e2e.test_terminal import piped
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.fakes.providers import fake_tavily

pytestmark = pytest.mark.anyio


CATASTROPHIC = r"^((((\w+)+)+)+)+\d$"  # Python's re: seconds for 11 letters, minutes for 13


@pytest.fixture
def library_pages() -> Iterator[FakeHTTPServer]:
    with fake_tavily(_pages) as server:
        yield server


def _items_deep(levels: int) -> dict[str, Any]:
    """An object holding arrays within arrays, ``levels`` deep (one JSON level each)."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return {"type": "object", "properties": {"rows": schema}}


def _assert_too_deep(refused: dict[str, Any]) -> None:
    assert not refused["success"] and refused["data"]["error_code"] == "VALIDATION_ERROR", refused
    assert refused["data"]["field"] == "output_schema"
    assert "more than 32 levels deep" in refused["error"], refused
    assert refused["data"]["details"]["pointer"].startswith("/properties/rows/items/items/")
    assert "at most 6 schemas" in refused["data"]["remediation"]


async def test_a_schema_nested_150_deep_is_refused_over_mcp_naming_the_limit(
    research_env: dict[str, str], library_pages: FakeHTTPServer, tmp_path: Path
) -> None:
    settings = _settings(research_env, tmp_path, library_pages)
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        _assert_too_deep(
            await call(
                client, action="deep-research", query=QUESTION, output_schema=_items_deep(150)
            )
        )
        # Nor does JSON nested too deeply for Python's reader break an argument read as JSON.
        refused = await call(
            client, action="deep-research", query=QUESTION, preferred_sources="[" * 100_000
        )
        assert refused["data"]["error_code"] == "VALIDATION_ERROR", refused
        listed = await call(client, action="deep-research-list")
    assert listed["data"]["items"] == [] and not library_pages.requests


@pytest.mark.stdio
async def test_a_schema_nested_150_deep_is_refused_over_stdio(
    research_env: dict[str, str], library_pages: FakeHTTPServer
) -> None:
    base = {key: os.environ[key] for key in ("PATH", "LANG") if key in os.environ}
    env = {**base, **research_env, "TAVILY_BASE_URL": library_pages.base_url}
    params = StdioServerParameters(command=sys.executable, args=["-m", "foundry_mcp"], env=env)
    async with Client(params, mode="legacy") as client:
        with anyio.fail_after(30):
            _assert_too_deep(
                await call(
                    client, action="deep-research", query=QUESTION, output_schema=_items_deep(150)
                )
            )


def test_the_command_line_refuses_a_deeply_nested_schema_file_without_a_traceback(
    research_env: dict[str, str], library_pages: FakeHTTPServer, tmp_path: Path
) -> None:
    env = {**research_env, "TAVILY_BASE_URL": library_pages.base_url}
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(_items_deep(150)))
    refused = piped(env, "research", QUESTION, "--schema", str(deep))
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("error: output_schema nests JSON more than 32 levels deep")
    assert (
        "/properties/rows/items/items/" in refused.stderr and "at most 6 schemas" in refused.stderr
    )
    assert "Traceback" not in refused.stderr and "RecursionError" not in refused.stderr
    # Deeper than Python's JSON reader goes: refused as the file's problem, the same way.
    deeper = tmp_path / "deeper.json"
    deeper.write_text("[" * 100_000 + "]" * 100_000)
    refused = piped(env, "research", QUESTION, "--schema", str(deeper), "--json")
    assert refused.returncode == 2, refused.stderr
    assert "nests too deeply to be read" in refused.stderr and "Traceback" not in refused.stderr
    assert json.loads(refused.stdout)["details"]["field"] == "output_schema"
    assert not library_pages.requests


async def test_a_pattern_re2_cannot_run_is_refused_at_start_naming_its_pointer(
    research_env: dict[str, str], library_pages: FakeHTTPServer, tmp_path: Path
) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": r"(a)\1"}}}
    settings = _settings(research_env, tmp_path, library_pages)
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        refused = await call(client, action="deep-research", query=QUESTION, output_schema=schema)
    assert refused["data"]["error_code"] == "VALIDATION_ERROR", refused
    assert "/properties/a/pattern" in refused["error"] and "RE2" in refused["error"]
    assert refused["data"]["details"]["pointer"] == "/properties/a/pattern"
    assert "no backreferences" in refused["data"]["remediation"]


async def test_a_catastrophic_pattern_neither_stalls_the_server_nor_the_research(
    research_env: dict[str, str],
    brain: ResearchBrain,
    library_pages: FakeHTTPServer,
    tmp_path: Path,
) -> None:
    row = SCHEMA["properties"]["libraries"]["items"]
    codename = {"type": "string", "pattern": CATASTROPHIC}
    schema = {
        **SCHEMA,
        "properties": {
            "libraries": {**SCHEMA["properties"]["libraries"], "items": {
                **row, "properties": {**row["properties"], "codename": codename},
            }}
        },
    }  # fmt: skip

    def backtracking(system: str, user: str) -> str:
        written = brain.structure(user)
        for each in written["answer"]["libraries"]:
            each["codename"] = "a" * 11  # no digit at its end: re tries every way to split it
        return json.dumps(written)

    brain.overrides["structurer"] = backtracking
    settings = _settings(research_env, tmp_path, library_pages)
    waits: list[float] = []
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        other = await call(
            client, action="deep-research", query="What is HTTP/2?", max_iterations=1
        )
        other_id = other["data"]["research_id"]
        done = anyio.Event()

        async def poll_the_other() -> None:
            # Each wait counts from when the call was due: a loop held while the caller slept
            # is measured as well as one held during the call.
            while not done.is_set():
                due = time.monotonic() + 0.02
                await anyio.sleep(0.02)
                status = await call(client, action="deep-research-status", research_id=other_id)
                assert status["success"], status
                waits.append(time.monotonic() - due)

        async with anyio.create_task_group() as group:
            group.start_soon(poll_the_other)
            started = await call(
                client, action="deep-research", query=QUESTION, mode="simple", max_iterations=1,
                clarify="off", output_schema=schema,
            )  # fmt: skip
            assert started["success"], started
            final = await run_to_end(client, started["data"]["research_id"])
            done.set()
        report = await call(client, action="deep-research-report", research_id=final["research_id"])
    assert final["status"] == "completed", final
    answer = report["data"]["answer"]
    assert answer["valid"] and _rows(answer)["httpx"][1]["licence"] == "BSD-3-Clause", answer
    # The pattern was run (by RE2): the model was asked to correct the codenames it broke.
    repairs = [user for agent, _, user in brain.history if agent == "structurer"][1:]
    assert repairs and "does not match" in repairs[0] and "/codename" in repairs[0]
    assert len(waits) >= 3, waits
    # Python's re held the loop 14 s and more here; a loaded machine answers within a second.
    assert max(waits) < 1.0, sorted(waits)[-5:]
