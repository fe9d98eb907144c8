"""The session's research service host, as the MCP request context carries it."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from foundry_mcp.server.host import ServiceHost


def session_host(ctx: Context[Any, Any]) -> ServiceHost:
    """The host the server's lifespan opened for this session."""
    host = ctx.request_context.lifespan_context
    assert isinstance(host, ServiceHost)
    return host
