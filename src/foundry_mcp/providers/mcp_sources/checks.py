"""What ``doctor`` and the health action say of each MCP source: it is connected, its tools are
listed and sorted (which search, list and read; which are never called), and each problem is
named with its fix. All sources are checked at once; none can hang the check."""

from __future__ import annotations

from typing import Any

import anyio

from foundry_mcp.config import Settings
from foundry_mcp.errors import FoundryError
from foundry_mcp.providers.mcp_sources.connection import McpSourceConnection
from foundry_mcp.providers.mcp_sources.sources import McpSources
from foundry_mcp.providers.mcp_sources.tools import source_tools


async def check_mcp_sources(
    settings: Settings, sources: McpSources | None = None
) -> list[dict[str, Any]]:
    """One entry per ``[mcp_sources.*]`` table, in name order; over the process's own
    ``sources`` when given (a server started for a search is not started again), else over
    connections opened for the check and closed after it."""
    if not settings.mcp_sources:
        return []
    if sources is not None:
        return await _check_all(sources)
    async with McpSources.open(settings) as opened:
        return await _check_all(opened)


async def _check_all(sources: McpSources) -> list[dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    async with anyio.create_task_group() as group:
        for name, connection in sorted(sources.connections.items()):
            entries[name] = {}
            group.start_soon(_check, connection, entries[name])
    return [entries[name] for name in sorted(entries)]


async def with_mcp_sources(
    report: dict[str, Any], settings: Settings, sources: McpSources | None = None
) -> dict[str, Any]:
    """A health ``report`` with each MCP source's check; one that is broken is a problem."""
    sources_checked = await check_mcp_sources(settings, sources)
    if sources_checked:
        report["mcp_sources"] = sources_checked
        broken = [
            f"MCP source {e['name']}: {e['problem']}" for e in sources_checked if e.get("problem")
        ]
        report["problems"] = [*report["problems"], *broken]
        report["ok"] = report["ok"] and not broken
    return report


async def _check(connection: McpSourceConnection, entry: dict[str, Any]) -> None:
    settings = connection.settings
    entry.update(
        {
            "name": connection.name,
            "transport": settings.transport,
            "status": "ok",
        }
    )
    try:
        tools = await connection.tools()
    except FoundryError as exc:
        entry.update({"status": "error", "problem": exc.message, "fix": exc.remediation})
        return
    found = source_tools(connection.name, settings, tools)
    entry.update(
        {
            "tools": [tool.name for tool in tools],
            "search_tool": found.search_tool,
            "list_tool": found.list_tool,
            "read_tool": found.read_tool,
            "never_called": found.refused,
        }
    )
    if found.notes:
        entry["notes"] = found.notes
    if found.problems:
        entry.update(
            {
                "status": "error",
                "problem": " ".join(found.problems),
                "fix": "Edit the table in your own configuration file (foundry-mcp doctor "
                "names it), then run foundry-mcp doctor again.",
            }
        )
