"""The MCP surface of foundry-mcp."""

from foundry_mcp.server.app import create_server

__all__ = ["create_server"]
