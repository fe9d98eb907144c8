"""Every configured MCP source of one process: one connection each, opened when first needed
and kept until the process closes them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup

from foundry_mcp.config import Settings
from foundry_mcp.providers.mcp_sources.connection import McpSourceConnection


class McpSources:
    """The connections to the ``[mcp_sources.*]`` servers."""

    def __init__(self, settings: Settings, group: TaskGroup) -> None:
        self.settings = settings
        self.connections = {
            name: McpSourceConnection(name, source, group)
            for name, source in settings.mcp_sources.items()
        }

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: Settings) -> AsyncIterator[McpSources]:
        """The sources of ``settings``; every connection is closed on leaving."""
        async with anyio.create_task_group() as group:
            sources = cls(settings, group)
            try:
                yield sources
            finally:
                with anyio.CancelScope(shield=True):
                    await sources.close()

    async def close(self) -> None:
        """Close every connection (their stdio servers are stopped)."""
        for connection in self.connections.values():
            await connection.close()
