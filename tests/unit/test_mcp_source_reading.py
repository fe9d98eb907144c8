"""How an MCP source's listings are read: paths confined to the source's folder, a commit log
read by commit (mcp-server-git's own format), a tree walked within bounds, every unreadable
listing a named error; a listing or read asked for at once made once; and a connection that
crashed under several calls replaced once, by the caller that saw it fail."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations

from foundry_mcp.config.mcp_source_settings import McpSourceSettings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.mcp_sources.connection import McpSourceConnection, McpSourceError
from foundry_mcp.providers.mcp_sources.kept import Once
from foundry_mcp.providers.mcp_sources.listings import (
    MAX_DEPTH,
    MAX_ITEMS,
    ListingError,
    clean,
    read_listing,
)
from foundry_mcp.providers.mcp_sources.paths import confine
from foundry_mcp.providers.mcp_sources.search import McpSourceSearch
from foundry_mcp.providers.search.scope import serving

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("item", "read"),
    [
        ("howto/release.md", "/docs/howto/release.md"),
        ("a/../b.md", "/docs/b.md"),
        ("/docs/sub/c.md", "/docs/sub/c.md"),
        ("file:///docs/d.md", "/docs/d.md"),
        ("../../home/me/.ssh/config", None),
        ("/etc/deploy.conf", None),
        ("/docs/../etc/passwd", None),
        ("sub/../../etc/passwd", None),
        ("..\\..\\secret", None),
        ("%2e%2e/%2e%2e/secret", None),
        ("%252e%252e%252fsecret", None),
        ("notes\x00.md", None),
        ("notes%00.md", None),
        ("C:/Windows/win.ini", None),
        ("file:///etc/passwd", None),
        ("/docs", None),
    ],
)
def test_an_item_is_read_only_under_the_folder(item: str, read: str | None) -> None:
    place = confine(item, "/docs")
    assert (place.target if place else None) == read
    if place is not None:
        assert place.name == read.removeprefix("/docs/")  # type: ignore[union-attr]


@pytest.mark.parametrize("item", ["../secret", "/etc/passwd", "%2e%2e/x", "a\\..\\..\\x"])
def test_a_source_without_a_folder_keeps_its_items_inside_it_too(item: str) -> None:
    assert confine(item, None) is None
    assert confine("0123abcd" * 5, None) is not None  # a commit's hash is a name like any


def _git_log(tmp_path: Path) -> tuple[str, list[tuple[str, str]]]:
    """mcp-server-git's own git_log answer over a repository of wrapped commit messages."""
    from git import Repo
    from mcp_server_git.server import git_log

    messages = [
        "Queue the crawl workers\n\nWorkers take jobs from an asyncio.Queue and put results"
        " on a second\nqueue.\n\nCommit: 0123456789abcdef0123456789abcdef01234567\nAs quoted.",
        "Switch the store to WAL mode\n\nCheckpoints every 1000 pages.\n\n\nAuthor: not a header",
    ]
    for number, message in enumerate(messages):
        (tmp_path / f"{number}.txt").write_text(message)
        for args in (["add", "."], ["commit", "-q", "-m", message]):
            subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    repo = Repo(tmp_path)
    newest_first = zip(repo.iter_commits(), reversed(messages), strict=True)
    commits = [(commit.hexsha, message.split("\n")[0]) for commit, message in newest_first]
    return "Commit history:\n" + "\n".join(git_log(repo)), commits


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_commit_log_is_read_by_commit(tmp_path: Path) -> None:
    for args in (["init", "-q"], ["config", "user.email", "d@e.org"], ["config", "user.name", "D"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    text, commits = _git_log(tmp_path)
    listing = read_listing(text, None, None)
    assert [(e.item, e.title) for e in listing.entries] == commits
    assert all(e.commit and e.name == e.item for e in listing.entries)
    assert "asyncio.Queue" in listing.entries[1].listed and not listing.refused


def _tree(depth: int, files: int = 1) -> list[dict[str, Any]]:
    node: list[dict[str, Any]] = [{"name": f"f{n}.md", "type": "file"} for n in range(files)]
    for level in reversed(range(depth)):
        node = [{"name": f"d{level}", "type": "directory", "children": node}]
    return node


def test_a_tree_is_walked_to_its_files_within_bounds() -> None:
    listing = read_listing(json.dumps(_tree(3, files=2)), None, "/docs")
    assert [e.name for e in listing.entries] == ["d0/d1/d2/f0.md", "d0/d1/d2/f1.md"]
    deep = read_listing(json.dumps([*_tree(MAX_DEPTH + 5), "top.md"]), None, "/docs")
    assert [e.name for e in deep.entries] == ["top.md"]
    assert deep.cut == [f"folders deeper than {MAX_DEPTH}"]
    wide = read_listing(json.dumps(_tree(1, files=MAX_ITEMS + 10)), None, "/docs")
    assert len(wide.entries) == MAX_ITEMS and wide.cut


def test_a_listing_too_nested_or_shapeless_is_a_named_error() -> None:
    with pytest.raises(ListingError, match="nested too deeply"):
        read_listing("[" * 100_000 + "]" * 100_000, None, "/docs")
    with pytest.raises(ListingError, match="neither a list of names nor a tree"):
        read_listing(json.dumps([{"size": 3}]), None, "/docs")


def test_lines_are_names_and_those_outside_are_refused() -> None:
    text = "[DIR] sub\n[FILE] a.md\n- b.md\n../../etc/passwd\n/etc/deploy.conf\na.md"
    listing = read_listing(text, None, "/docs")
    assert [e.item for e in listing.entries] == ["/docs/a.md", "/docs/b.md"]
    assert listing.refused == ["../../etc/passwd", "/etc/deploy.conf"]


def test_titles_are_one_clean_line() -> None:
    assert clean("Fix\x1b[31m the\u202e store\r\nnow") == "Fix the store now"


async def test_what_several_ask_for_at_once_is_made_once() -> None:
    once: Once[int] = Once()
    made = 0
    release = anyio.Event()

    async def make() -> int:
        nonlocal made
        made += 1
        await release.wait()
        return 7

    got: list[int] = []

    async def ask() -> None:
        got.append(await once.get(make))

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert (made, got) == (1, [7, 7, 7, 7])


async def test_a_failure_is_shared_with_those_waiting_not_kept() -> None:
    once: Once[int] = Once()
    release = anyio.Event()

    async def fail() -> int:
        await release.wait()
        raise McpSourceError("server gone")

    failures: list[str] = []

    async def ask() -> None:
        try:
            await once.get(fail)
        except McpSourceError as exc:
            failures.append(exc.message)

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert failures == ["server gone"] * 3

    async def succeed() -> int:
        return 8

    assert await once.get(succeed) == 8  # the next asker tries again


class _Stub:
    """A stand-in for the SDK's client: its tools, and calls answered as the test says."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def list_tools(self) -> Any:
        read_only = ToolAnnotations(read_only_hint=True)
        schema = {"type": "object", "properties": {"path": {"type": "string"}}}
        tools = [
            Tool(name="list_tree", input_schema={"type": "object"}, annotations=read_only),
            Tool(name="read_file", input_schema=schema, annotations=read_only),
        ]
        return type("Listed", (), {"tools": tools})()

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        return await self.answer(tool, arguments)


class _StubConnection(McpSourceConnection):
    """A connection whose server is :class:`_Stub`, one per start (``generation``)."""

    def __init__(self, group: Any, answer: Any, **settings: Any) -> None:
        source = McpSourceSettings(command=[sys.executable], **settings)
        super().__init__("stub", source, group)
        self.answer = answer
        self.closed: list[int] = []
        self.started = [anyio.Event(), anyio.Event(), anyio.Event()]

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Any]:
        generation = self.starts
        self.started[min(generation, 2)].set()
        try:
            yield _Stub(lambda tool, arguments: self.answer(generation, tool, arguments))
        finally:
            self.closed.append(generation)


async def test_a_crash_seen_late_does_not_close_the_server_a_peer_started() -> None:
    crash = anyio.Event()

    async def answer(generation: int, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        if generation == 1:
            await crash.wait()
            if arguments["path"] == "late":  # its failure arrives after the restart
                await connection.started[2].wait()
            raise ConnectionError("the server exited")
        return CallToolResult(content=[TextContent(type="text", text=arguments["path"])])

    answers: list[str] = []
    async with anyio.create_task_group() as group:
        connection = _StubConnection(group, answer)

        async def read(path: str) -> None:
            result = await connection.call("read_file", {"path": path})
            answers.append(result.content[0].text)  # type: ignore[union-attr]

        with anyio.fail_after(10):
            async with anyio.create_task_group() as callers:
                for path in ("a", "b", "c", "late"):
                    callers.start_soon(read, path)
                await anyio.wait_all_tasks_blocked()
                crash.set()
        assert connection.starts == 2 and connection.closed == [1]
        await connection.close()
    assert sorted(answers) == ["a", "b", "c", "late"]


async def test_a_listing_is_made_once_per_research_and_an_unreadable_one_is_named() -> None:
    listings = {"list_tree": json.dumps(_tree(2, files=2)), "nested": "[" * 50_000}

    async def answer(generation: int, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        text = listings[tool] if tool == "list_tree" else f"text of {arguments['path']} tree"
        return CallToolResult(content=[TextContent(type="text", text=text)])

    async with anyio.create_task_group() as group:
        connection = _StubConnection(group, answer, arguments={"path": "/docs"})
        source = McpSourceSearch(connection)
        with serving("research-1"):
            async with anyio.create_task_group() as searches:
                for query in ("tree f0", "tree f1", "tree text"):
                    searches.start_soon(source.search, query, 3)
        assert connection.calls == {"list_tree": 1, "read_file": 2}
        with serving("research-2"):
            listings["list_tree"] = listings["nested"]
            with pytest.raises(ProviderError, match="nested too deeply") as failed:
                await source.search("tree", 3)
        assert not failed.value.retryable
        await connection.close()
