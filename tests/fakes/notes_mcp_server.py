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

``NOTES_CALL_LOG=<file>`` appends each tool call (``{"tool", "arguments"}``) as a JSON line.
``NOTES_NO_SEARCH=1`` leaves ``search_notes`` out (the server only lists and reads).
``NOTES_ROOT=<folder>`` serves the notes as files of that folder (listed relative to it, read
by their full path); ``NOTES_LIST_EXTRA`` (a JSON list) adds items to the listing, such as
paths outside the folder, whose read answers ``SECRET`` text.

    python -m tests.fakes.notes_mcp_server
"""

from __future__ import annotations

import json
import os
import posixpath
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

NOTES = {
    "decisions/2024-05-storage.md": "We chose SQLite in WAL mode for the single-user store; "
    "checkpoints run every 1000 pages.",
    "decisions/2025-01-team.md": "The team server stores research in PostgreSQL 16.",
    "howto/release.md": "Releases are tagged vX.Y.Z and built by the release workflow.",
}
READ_ONLY = ToolAnnotations(read_only_hint=True)
server = MCPServer("notes")
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
        await anyio.sleep(3600)
    crash_after = os.environ.get("NOTES_CRASH_AFTER")
    if crash_after and calls > int(crash_after):
        os._exit(3)
    if CRASH_MARK is not None and not CRASH_MARK.exists():
        in_flight += 1
        if in_flight < int(os.environ.get("NOTES_CRASH_WHEN", "1")):
            await anyio.sleep_forever()  # the server exits with this call unanswered
        CRASH_MARK.touch()
        os._exit(3)


async def search_notes(query: str) -> str:
    """Notes whose text holds a word of the query."""
    await _misbehave("search_notes", query=query)
    words = {w.lower() for w in query.split() if len(w) > 3}
    hits = [f"{path}: {text}" for path, text in NOTES.items() if words & set(text.lower().split())]
    return "\n".join(hits) or "no note matches"


if not os.environ.get("NOTES_NO_SEARCH"):
    server.tool(annotations=READ_ONLY)(search_notes)


@server.tool(annotations=READ_ONLY)
async def list_notes() -> str:
    """Every note's path, one a line."""
    await _misbehave("list_notes")
    return "\n".join([*NOTES, *json.loads(os.environ.get("NOTES_LIST_EXTRA", "[]"))])


@server.tool(annotations=READ_ONLY)
async def read_note(path: str) -> str:
    """One note's text."""
    await _misbehave("read_note", path=path)
    if ROOT and not posixpath.normpath(path.replace("\\", "/")).startswith(ROOT + "/"):
        return f"SECRET text of {path}, outside the notes"
    return NOTES.get(path.removeprefix(ROOT + "/") if ROOT else path, f"no note {path}")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
async def delete_note(path: str) -> str:
    """Delete a note (a writing tool: a research never calls it)."""
    await _misbehave("delete_note", path=path)
    NOTES.pop(path, None)
    return f"deleted {path}"


def _over_http(port: int, token: str | None) -> None:
    import uvicorn
    from starlette.types import ASGIApp, Receive, Scope, Send

    app = server.streamable_http_app()

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
        server.run("stdio")
