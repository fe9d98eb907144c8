"""A small MCP server over stdio holding a few notes, for the tests of MCP sources.

Its tools: ``search_notes`` (free text; read-only), ``list_notes`` and ``read_note``
(read-only), ``delete_note`` (writes: never to be called by a research). The environment
chooses how it misbehaves: ``NOTES_HANG=list`` never answers ``tools/list``;
``NOTES_HANG=call`` never answers a tool call; ``NOTES_CRASH_AFTER=N`` exits after N tool
calls, as a crashing server does; ``NOTES_CRASH_WHEN=N`` with ``NOTES_CRASH_MARK=<file>``
holds calls until N are in flight, then exits, once (the mark file says it did: the next
server answers). ``NOTES_HTTP_PORT=N`` serves it over Streamable HTTP on 127.0.0.1:N at
``/mcp`` instead of stdio; with ``NOTES_TOKEN=T`` too, a request without the header
``Authorization: Bearer T`` is refused (401).

Over stdio it answers the MCP messages itself (``initialize``, ``tools/list``, ``tools/call``,
``notifications/cancelled``) exactly as the SDK's ``MCPServer`` serving the same
tools answers them (``tests/unit/test_notes_fake.py`` holds it to that): importing the SDK is
over a second of CPU, and the suite starts this server a few dozen times. Over Streamable HTTP
it is the SDK's ``MCPServer`` (:func:`sdk_server`).

``NOTES_CALL_LOG=<file>`` appends each tool call (``{"tool", "arguments"}``) as a JSON line.
``NOTES_NO_SEARCH=1`` leaves ``search_notes`` out (the server only lists and reads).
``NOTES_ROOT=<folder>`` serves the notes as files of that folder (listed relative to it, read
by their full path); ``NOTES_LIST_EXTRA`` (a JSON list) adds items to the listing, such as
paths outside the folder, whose read answers ``SECRET`` text.

    python -m tests.fakes.notes_mcp_server
"""

from __future__ import annotations

import asyncio
import json
import os
import posixpath
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

NOTES = {
    "decisions/2024-05-storage.md": "We chose SQLite in WAL mode for the single-user store; "
    "checkpoints run every 1000 pages.",
    "decisions/2025-01-team.md": "The team server stores research in PostgreSQL 16.",
    "howto/release.md": "Releases are tagged vX.Y.Z and built by the release workflow.",
}
calls = 0


ROOT = os.environ.get("NOTES_ROOT", "").rstrip("/")
CRASH_MARK = Path(os.environ["NOTES_CRASH_MARK"]) if "NOTES_CRASH_MARK" in os.environ else None
in_flight = 0


async def _misbehave(tool: str, **arguments: str) -> None:
    global calls, in_flight
    calls += 1
    if os.environ.get("NOTES_CALL_LOG"):  # one short line: blocking is harmless in a fake
        with Path(os.environ["NOTES_CALL_LOG"]).open("a") as log:  # noqa: ASYNC230
            log.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")
    if os.environ.get("NOTES_HANG") == "call":
        await asyncio.sleep(3600)
    crash_after = os.environ.get("NOTES_CRASH_AFTER")
    if crash_after and calls > int(crash_after):
        os._exit(3)
    if CRASH_MARK is not None and not CRASH_MARK.exists():
        in_flight += 1
        if in_flight < int(os.environ.get("NOTES_CRASH_WHEN", "1")):
            await asyncio.Event().wait()  # the server exits with this call unanswered
        CRASH_MARK.touch()
        os._exit(3)


async def search_notes(query: str) -> str:
    """Notes whose text holds a word of the query."""
    await _misbehave("search_notes", query=query)
    words = {w.lower() for w in query.split() if len(w) > 3}
    hits = [f"{path}: {text}" for path, text in NOTES.items() if words & set(text.lower().split())]
    return "\n".join(hits) or "no note matches"


async def list_notes() -> str:
    """Every note's path, one a line."""
    await _misbehave("list_notes")
    return "\n".join([*NOTES, *json.loads(os.environ.get("NOTES_LIST_EXTRA", "[]"))])


async def read_note(path: str) -> str:
    """One note's text."""
    await _misbehave("read_note", path=path)
    if ROOT and not posixpath.normpath(path.replace("\\", "/")).startswith(ROOT + "/"):
        return f"SECRET text of {path}, outside the notes"
    return NOTES.get(path.removeprefix(ROOT + "/") if ROOT else path, f"no note {path}")


async def delete_note(path: str) -> str:
    """Delete a note (a writing tool: a research never calls it)."""
    await _misbehave("delete_note", path=path)
    NOTES.pop(path, None)
    return f"deleted {path}"


READ_ONLY = {"readOnlyHint": True}
WRITES = {"destructiveHint": True, "readOnlyHint": False}
# The tools served, with their annotations and their arguments (all strings, all required).
TOOLS: dict[str, tuple[Callable[..., Awaitable[str]], dict[str, bool], tuple[str, ...]]] = {
    **(
        {}
        if os.environ.get("NOTES_NO_SEARCH")
        else {"search_notes": (search_notes, READ_ONLY, ("query",))}
    ),
    "list_notes": (list_notes, READ_ONLY, ()),
    "read_note": (read_note, READ_ONLY, ("path",)),
    "delete_note": (delete_note, WRITES, ("path",)),
}
SERVER_INFO = {"name": "notes", "version": ""}
CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def tool_list() -> list[dict[str, Any]]:
    """``tools/list``'s tools, as the SDK's ``MCPServer`` describes these functions."""
    return [
        {
            "annotations": hints,
            "description": function.__doc__,
            "inputSchema": {
                "properties": {
                    name: {"title": name.title(), "type": "string"} for name in arguments
                },
                **({"required": list(arguments)} if arguments else {}),
                "type": "object",
                "title": f"{tool}Arguments",
            },
            "name": tool,
            "outputSchema": {
                "properties": {"result": {"title": "Result", "type": "string"}},
                "required": ["result"],
                "type": "object",
                "title": f"{tool}Output",
            },
        }
        for tool, (function, hints, arguments) in TOOLS.items()
    ]


async def call_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``tools/call``'s result for a known tool called with its string arguments."""
    function, _, wanted = TOOLS[name]
    text = await function(**{key: str(arguments[key]) for key in wanted})
    return {
        "content": [{"text": text, "type": "text"}],
        "isError": False,
        "structuredContent": {"result": text},
    }


class StdioNotes:
    """The notes served over stdio: one JSON-RPC message a line, each call in a task of its
    own (calls overlap, and a ``notifications/cancelled`` cancels its call unanswered)."""

    def __init__(self) -> None:
        self.calls: dict[Any, asyncio.Task[None]] = {}

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.buffer.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        sys.stdout.buffer.flush()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        lines = asyncio.StreamReader(limit=2**24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(lines), sys.stdin)
        while line := await lines.readline():
            message = json.loads(line)
            method, params = message.get("method"), message.get("params") or {}
            if "id" not in message:
                if method == "notifications/cancelled":
                    call = self.calls.pop(params.get("requestId"), None)
                    if call is not None:
                        call.cancel()
                continue
            self.calls[message["id"]] = asyncio.create_task(
                self.answer(message["id"], method, params)
            )

    async def answer(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        try:
            if method == "initialize":
                asked = params.get("protocolVersion")
                version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
                result = {
                    "capabilities": CAPABILITIES,
                    "protocolVersion": version,
                    "serverInfo": SERVER_INFO,
                }
            elif method == "tools/list":
                result = {"tools": tool_list()}
            elif method == "tools/call" and params.get("name") in TOOLS:
                result = await call_tool(params["name"], params.get("arguments") or {})
            else:
                self.send(
                    {
                        "id": request_id,
                        "error": {"code": -32601, "message": f"not served: {method}"},
                    }
                )
                return
            self.send({"id": request_id, "result": result})
        finally:
            self.calls.pop(request_id, None)


def sdk_server() -> MCPServer:
    """The same tools served by the SDK's ``MCPServer``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("notes")
    for function, hints, _ in TOOLS.values():
        sdk_hints = ToolAnnotations(
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints.get("destructiveHint"),
        )
        server.tool(annotations=sdk_hints)(function)
    return server


def _over_http(port: int, token: str | None) -> None:
    import uvicorn
    from starlette.types import ASGIApp, Receive, Scope, Send

    app = sdk_server().streamable_http_app()

    def guarded(inner: ASGIApp) -> ASGIApp:
        async def guard(scope: Scope, receive: Receive, send: Send) -> None:
            sent = dict(scope.get("headers") or []).get(b"authorization", b"").decode()
            if scope["type"] == "http" and token and sent != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
            await inner(scope, receive, send)

        return guard

    uvicorn.run(guarded(app), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if os.environ.get("NOTES_START_LOG"):  # one line a start: who starts it how often
        with Path(os.environ["NOTES_START_LOG"]).open("a") as starts:
            starts.write(f"{os.getpid()}\n")
    if os.environ.get("NOTES_HANG") == "list":
        time.sleep(3600)  # never even starts answering
    if os.environ.get("NOTES_HTTP_PORT"):
        _over_http(int(os.environ["NOTES_HTTP_PORT"]), os.environ.get("NOTES_TOKEN"))
    else:
        asyncio.run(StdioNotes().serve())
