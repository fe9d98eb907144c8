"""Connections to other MCP servers: started when first needed and kept, started again after a
crash, a timeout on every start and call, and their tools sorted into what a research may call
(only read-only or allowed ones) and for what."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.mcp_sources.checks import check_mcp_sources
from foundry_mcp.providers.mcp_sources.connection import McpSourceError
from foundry_mcp.providers.mcp_sources.search import McpSourceSearch
from foundry_mcp.providers.mcp_sources.sources import McpSources
from foundry_mcp.providers.mcp_sources.tools import source_tools

pytestmark = pytest.mark.anyio

NOTES_SERVER = [sys.executable, "-m", "tests.fakes.notes_mcp_server"]


def settings_with(**sources: dict[str, Any]) -> Settings:
    return Settings.model_validate({"mcp_sources": sources})


def notes(**extra: Any) -> dict[str, Any]:
    return {"command": NOTES_SERVER, "timeout_s": 10, **extra}


async def test_a_source_is_started_once_and_kept_for_every_call() -> None:
    async with McpSources.open(settings_with(notes=notes())) as sources:
        connection = sources.connections["notes"]
        tools = await connection.tools()
        found = source_tools("notes", connection.settings, tools)
        assert found.search_tool == "search_notes"
        assert (found.list_tool, found.read_tool) == ("list_notes", "read_note")
        assert found.refused == ["delete_note"] and not found.problems
        first = await connection.call("search_notes", {"query": "SQLite checkpoints"})
        second = await connection.call("read_note", {"path": "howto/release.md"})
        assert "WAL mode" in first.content[0].text  # type: ignore[union-attr]
        assert "vX.Y.Z" in second.content[0].text  # type: ignore[union-attr]
        assert connection.starts == 1


async def test_a_crashed_server_is_started_again() -> None:
    source = notes(env={"NOTES_CRASH_AFTER": "1"})
    async with McpSources.open(settings_with(notes=source)) as sources:
        connection = sources.connections["notes"]
        await connection.call("list_notes", {})
        again = await connection.call("list_notes", {})  # the server exits; a new one answers
        assert "howto/release.md" in again.content[0].text  # type: ignore[union-attr]
        assert connection.starts == 2


async def test_calls_in_flight_when_the_server_crashes_share_one_restart(tmp_path: Path) -> None:
    # The server holds four calls, then exits with all of them unanswered (once: the next
    # server answers). Each caller retries on the next start; none starts one of its own, nor
    # closes the one a peer started.
    crashing = notes(env={"NOTES_CRASH_WHEN": "4", "NOTES_CRASH_MARK": str(tmp_path / "mark")})
    async with McpSources.open(settings_with(notes=crashing)) as sources:
        connection = sources.connections["notes"]
        answers: dict[int, str] = {}

        async def read(number: int) -> None:
            answer = await connection.call("read_note", {"path": "howto/release.md"})
            answers[number] = answer.content[0].text  # type: ignore[union-attr]

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for number in range(4):
                    group.start_soon(read, number)
    assert (tmp_path / "mark").exists()  # it did crash
    assert connection.starts == 2
    assert len(answers) == 4 and all("tagged vX.Y.Z" in text for text in answers.values())


async def test_a_server_that_hangs_times_out_with_the_fix() -> None:
    hangs = notes(env={"NOTES_HANG": "call"}, timeout_s=0.5)
    async with McpSources.open(settings_with(notes=hangs)) as sources:
        began = time.monotonic()
        with pytest.raises(McpSourceError) as failed:
            await sources.connections["notes"].call("search_notes", {"query": "release"})
        # Far from the default timeout_s (30 s), with room for a loaded machine: ending the
        # hanging server took 5.7 s once on two busy cores.
        assert time.monotonic() - began < 15
    assert "did not answer search_notes within 0.5 s" in failed.value.message
    assert "timeout_s" in failed.value.remediation


async def test_doctor_names_each_source_its_tools_and_problems() -> None:
    settings = settings_with(
        notes=notes(allowed_tools=["delete_notes"]),
        missing={"command": ["no-such-mcp-server-here"]},
        refused={"url": "http://127.0.0.1:9/mcp", "timeout_s": 2},
        silent=notes(env={"NOTES_HANG": "list"}, start_timeout_s=0.5),
    )
    with anyio.fail_after(30):
        entries = {entry["name"]: entry for entry in await check_mcp_sources(settings)}
    assert entries["notes"]["status"] == "error"
    assert (
        "allowed_tools names 'delete_notes', which the server does not have"
        in (entries["notes"]["problem"])
    )
    assert entries["notes"]["tools"] == ["search_notes", "list_notes", "read_note", "delete_note"]
    assert entries["notes"]["never_called"] == ["delete_note"]
    assert "'no-such-mcp-server-here' was not found" in entries["missing"]["problem"]
    assert "full path" in entries["missing"]["fix"]
    assert entries["refused"]["status"] == "error" and "url" in entries["refused"]["fix"]
    assert "did not start within 0.5 s" in entries["silent"]["problem"]


async def test_a_good_source_is_ok() -> None:
    (entry,) = await check_mcp_sources(settings_with(notes=notes()))
    assert entry["status"] == "ok" and entry["search_tool"] == "search_notes"


async def test_a_source_with_a_search_tool_answers_the_query() -> None:
    async with McpSources.open(settings_with(notes=notes())) as sources:
        found = await McpSourceSearch(sources.connections["notes"]).search("SQLite checkpoints", 5)
    (hit,) = found
    assert hit.url and hit.url.startswith("mcp://notes/result/")
    assert "checkpoints run every 1000 pages" in (hit.content or "")
    assert hit.provider == "mcp.notes"


async def test_a_source_that_only_lists_and_reads_is_ranked_here_and_read() -> None:
    source = notes(list_tool="list_notes", read_tool="read_note")
    async with McpSources.open(settings_with(notes=source)) as sources:
        search = McpSourceSearch(sources.connections["notes"])
        tools = await search._sorted_tools()
        tools.search_tool = None  # as a file system or a git history: no free-text search
        found = await search.search("release workflow howto", 3)
    assert [hit.url for hit in found] == ["mcp://notes/howto/release.md"]
    assert "tagged vX.Y.Z" in (found[0].content or "")


async def test_a_failing_source_is_a_provider_error_the_research_skips() -> None:
    hangs = notes(env={"NOTES_HANG": "call"}, timeout_s=0.5)
    async with McpSources.open(settings_with(notes=hangs)) as sources:
        with pytest.raises(ProviderError) as failed:
            await McpSourceSearch(sources.connections["notes"]).search("release", 3)
    assert failed.value.provider == "mcp.notes" and failed.value.retryable
    assert "timeout_s" in failed.value.remediation
