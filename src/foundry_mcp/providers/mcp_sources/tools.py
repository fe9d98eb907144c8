"""Which tools of an MCP server a research may call, and what each serves: search, list, read.

Only a tool the server marks read-only (``readOnlyHint``) or the user allows by name is ever
called; the server's other tools are listed as refused. A role the user names in the
configuration wins; otherwise it is found from the tools themselves: a tool taking a free-text
``query`` searches, one whose name says it lists (``list``, ``tree``, ``log``) lists, one whose
name says it reads (``read``, ``show``, ``get``, ``fetch``) reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from foundry_mcp.config.mcp_source_settings import McpSourceSettings

if TYPE_CHECKING:
    from mcp.types import Tool

QUERY_NAMES = ("query", "q", "search", "text", "question")
LISTS = re.compile(r"(^|[_\-.])(list|tree|log|ls)([_\-.]|$)", re.IGNORECASE)
READS = re.compile(r"(^|[_\-.])(read|show|get|fetch|cat|open)([_\-.]|$)", re.IGNORECASE)


@dataclass
class SourceTools:
    """What one server offers a research."""

    search_tool: str | None = None
    list_tool: str | None = None
    read_tool: str | None = None
    query_param: str = "query"  # the search tool's free-text parameter
    item_param: str | None = None  # the read tool's parameter naming what to read
    callable: list[str] = field(default_factory=list)  # read-only, or allowed by the user
    refused: list[str] = field(default_factory=list)  # the others: never called
    problems: list[str] = field(default_factory=list)  # with the fix, one a line

    @property
    def usable(self) -> bool:
        """Whether a research can read anything from it: a search, or a list and a read."""
        has_pair = self.list_tool is not None and self.read_tool is not None
        return self.search_tool is not None or has_pair


def source_tools(name: str, settings: McpSourceSettings, tools: list[Tool]) -> SourceTools:
    """Sort ``tools`` of the source ``name`` into what a research may call, and for what."""
    by_name = {tool.name: tool for tool in tools}
    found = SourceTools()
    for tool in tools:
        read_only = tool.annotations is not None and tool.annotations.read_only_hint is True
        if read_only or tool.name in settings.allowed_tools:
            found.callable.append(tool.name)
        else:
            found.refused.append(tool.name)
    table = f"[mcp_sources.{name}]"
    for allowed in settings.allowed_tools:
        if allowed not in by_name:
            found.problems.append(
                f"{table} allowed_tools names {allowed!r}, which the server does not have "
                f"(it has: {', '.join(by_name) or 'no tools'})."
            )
    for role in ("search", "list", "read"):
        named = getattr(settings, f"{role}_tool")
        if named is None:
            setattr(found, f"{role}_tool", _guess(role, [by_name[n] for n in found.callable]))
        elif named not in by_name:
            found.problems.append(
                f"{table} {role}_tool names {named!r}, which the server does not have "
                f"(it has: {', '.join(by_name) or 'no tools'})."
            )
        elif named not in found.callable:
            found.problems.append(
                f"{table} {role}_tool names {named!r}, which the server does not mark "
                f"read-only: add it to allowed_tools if it only reads."
            )
        else:
            setattr(found, f"{role}_tool", named)
    if found.search_tool is not None:
        found.query_param = _query_param(by_name[found.search_tool]) or found.query_param
    if found.read_tool is not None:
        found.item_param = _first_text_param(by_name[found.read_tool], set(settings.arguments))
    if not found.usable and not found.problems:
        found.problems.append(
            f"{table}: none of its read-only tools searches, nor do a list and a read pair up; "
            "name them with search_tool, or list_tool and read_tool."
        )
    return found


def _guess(role: str, tools: list[Tool]) -> str | None:
    for tool in tools:
        if role == "search" and _takes_query(tool):
            return tool.name
        if role == "list" and LISTS.search(tool.name) and not _takes_query(tool):
            return tool.name
        if role == "read" and READS.search(tool.name) and not _takes_query(tool):
            return tool.name
    return None


def _takes_query(tool: Tool) -> bool:
    return _query_param(tool) is not None


def _query_param(tool: Tool) -> str | None:
    properties = (tool.input_schema or {}).get("properties") or {}
    for name, spec in properties.items():
        if name in QUERY_NAMES and (spec or {}).get("type") == "string":
            return str(name)
    return None


def _first_text_param(tool: Tool, fixed: set[str]) -> str | None:
    """The read tool's parameter for the item: its first required text, else its first text
    (one the configuration fixes, such as a repository's path, excepted)."""
    schema = tool.input_schema or {}
    properties = schema.get("properties") or {}
    texts = [
        name
        for name, spec in properties.items()
        if (spec or {}).get("type") == "string" and name not in fixed
    ]
    required = [name for name in schema.get("required") or [] if name in texts]
    chosen = required or texts
    return str(chosen[0]) if chosen else None
