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
    item_base: str | None = None  # the folder listed items are read relative to, if any
    callable: list[str] = field(default_factory=list)  # read-only, or allowed by the user
    refused: list[str] = field(default_factory=list)  # the others: never called
    problems: list[str] = field(default_factory=list)  # with the fix, one a line
    notes: list[str] = field(default_factory=list)  # advice: tools a setting would bring in

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
            setattr(
                found,
                f"{role}_tool",
                _guess(role, [by_name[n] for n in found.callable], set(settings.arguments)),
            )
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
        found.item_param = _item_param(by_name[found.read_tool], set(settings.arguments))
        # The item replaces a fixed folder (a file system's path): it is read relative to it.
        found.item_base = settings.arguments.get(found.item_param or "")
    if settings.list_tool is None and found.search_tool is None:
        found.notes += _unfixed_listers(table, [by_name[n] for n in found.callable], settings)
    if not found.usable and not found.problems:
        found.problems.append(
            f"{table}: none of its read-only tools searches, nor do a list and a read pair up; "
            "name them with search_tool, or list_tool and read_tool."
        )
    return found


def _guess(role: str, tools: list[Tool], fixed: set[str]) -> str | None:
    """The first tool fit for ``role``; a list tool must need no argument the configuration
    does not fix, and one listing a whole tree (``directory_tree``) is preferred."""
    if role == "search":
        return next((tool.name for tool in tools if _takes_query(tool)), None)
    pattern = LISTS if role == "list" else READS
    fit = [tool for tool in tools if pattern.search(tool.name) and not _takes_query(tool)]
    if role == "list":
        fit = [tool for tool in fit if set(_required(tool)) <= fixed]
        fit.sort(key=lambda tool: "tree" not in tool.name.lower())
    return fit[0].name if fit else None


def _unfixed_listers(table: str, tools: list[Tool], settings: McpSourceSettings) -> list[str]:
    """Advice for list tools passed over because they need an argument nobody fixed (the
    file system's ``directory_tree`` needs the folder's ``path``)."""
    notes = []
    for tool in tools:
        missing = [name for name in _required(tool) if name not in settings.arguments]
        if LISTS.search(tool.name) and missing and not _takes_query(tool):
            wanted = ", ".join(f'{name} = "..."' for name in missing)
            notes.append(f"{tool.name} lists only with {table} arguments = {{ {wanted} }}.")
    return notes


def _required(tool: Tool) -> list[str]:
    return [str(name) for name in (tool.input_schema or {}).get("required") or []]


def _takes_query(tool: Tool) -> bool:
    return _query_param(tool) is not None


def _query_param(tool: Tool) -> str | None:
    properties = (tool.input_schema or {}).get("properties") or {}
    for name, spec in properties.items():
        if name in QUERY_NAMES and (spec or {}).get("type") == "string":
            return str(name)
    return None


def _item_param(tool: Tool, fixed: set[str]) -> str | None:
    """The read tool's parameter for the item: its first required text, else its first text.

    One the configuration fixes (a repository's path beside a commit's hash) is passed over,
    unless it is the only one: then the item takes its place (a file's path under the folder).
    """
    properties = (tool.input_schema or {}).get("properties") or {}
    texts = [name for name, spec in properties.items() if (spec or {}).get("type") == "string"]
    free = [name for name in texts if name not in fixed]
    for choice in (free, texts):
        required = [name for name in _required(tool) if name in choice]
        if required or choice:
            return str((required or choice)[0])
    return None
