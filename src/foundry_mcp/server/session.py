"""What the MCP request context says of a call: the session's research service host, and
whether the caller listens for progress (whether its user can be asked something is
:mod:`foundry_mcp.server.asking`'s)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from foundry_mcp.server.host import ServiceHost


def session_host(ctx: Context[Any, Any]) -> ServiceHost:
    """The host the server's lifespan opened for this session."""
    host = ctx.request_context.lifespan_context
    assert isinstance(host, ServiceHost)
    return host


def wants_progress(ctx: Context[Any, Any]) -> bool:
    """Whether the caller asked for progress notifications on this call.

    Over a transport, a progress token in the request's ``_meta`` says so. An in-process client
    (the SDK's direct dispatcher) hands its progress callback over without a token, so a call
    from one may be listened to.
    """
    request = ctx.request_context
    if (request.meta or {}).get("progress_token") is not None:
        return True
    outbound = getattr(request.session, "_request_outbound", None)  # the SDK has no public way
    return getattr(getattr(outbound, "transport", None), "kind", None) == "direct"
