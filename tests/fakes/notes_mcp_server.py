"""A small MCP server over stdio holding a few notes, for the tests of MCP sources.

Its tools: ``search_notes`` (free text; read-only), ``list_notes`` and ``read_note``
(read-only), ``delete_note`` (writes: never to be called by a research). The environment
chooses how it misbehaves: ``NOTES_HANG=list`` never answers ``tools/list``;
``NOTES_HANG=call`` never answers a tool call; ``NOTES_CRASH_AFTER=N`` exits after N tool
calls, as a crashing server does. ``NOTES_HTTP_PORT=N`` serves it over Streamable HTTP on
127.0.0.1:N at ``/mcp`` instead of stdio; with ``NOTES_TOKEN=T`` too, a request without the
header ``Authorization: Bearer T`` is refused (401).

    python -m tests.fakes.notes_mcp_server
"""

from __future__ import annotations

import os
import time

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


async def _misbehave() -> None:
    global calls
    calls += 1
    if os.environ.get("NOTES_HANG") == "call":
        await anyio.sleep(3600)
    crash_after = os.environ.get("NOTES_CRASH_AFTER")
    if crash_after and calls > int(crash_after):
        os._exit(3)


@server.tool(annotations=READ_ONLY)
async def search_notes(query: str) -> str:
    """Notes whose text holds a word of the query."""
    await _misbehave()
    words = {w.lower() for w in query.split() if len(w) > 3}
    hits = [f"{path}: {text}" for path, text in NOTES.items() if words & set(text.lower().split())]
    return "\n".join(hits) or "no note matches"


@server.tool(annotations=READ_ONLY)
async def list_notes() -> str:
    """Every note's path, one a line."""
    await _misbehave()
    return "\n".join(NOTES)


@server.tool(annotations=READ_ONLY)
async def read_note(path: str) -> str:
    """One note's text."""
    await _misbehave()
    return NOTES.get(path, f"no note {path}")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
async def delete_note(path: str) -> str:
    """Delete a note (a writing tool: a research never calls it)."""
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
    if os.environ.get("NOTES_HANG") == "list":
        time.sleep(3600)  # never even starts answering
    if os.environ.get("NOTES_HTTP_PORT"):
        _over_http(int(os.environ["NOTES_HTTP_PORT"]), os.environ.get("NOTES_TOKEN"))
    else:
        server.run("stdio")
