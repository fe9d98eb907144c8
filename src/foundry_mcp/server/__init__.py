"""The MCP surface of foundry-mcp: ``create_server`` (:mod:`foundry_mcp.server.app`).

The package imports nothing itself: ``create_server`` brings in the MCP SDK (the better part of
a second) when it is first asked for, so the modules here that need no MCP (the arguments
model, the published schemas, the shapes of the results) stay light when imported alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foundry_mcp.server.app import create_server

__all__ = ["create_server"]


def __getattr__(name: str) -> Any:
    if name == "create_server":
        from foundry_mcp.server.app import create_server

        return create_server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
