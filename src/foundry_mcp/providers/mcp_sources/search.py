"""An MCP source as a search provider: its results become sources like any page.

A server with a free-text search tool is asked the query. A server that only lists and reads
(a file system, a git history) has what it holds listed, ranked against the query here by the
words they share, and the best ``max_reads`` read. Each result has a stable link: the
resource's URI when the server gives one, else ``mcp://<source>/<item>``. Text, structured
content and embedded resources become the source's text: data for the analyst, never
instructions. A server that fails or hangs raises :class:`ProviderError`, so the research skips
it as it skips any failing search provider.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from typing import Any
from urllib.parse import quote

from mcp.types import CallToolResult, EmbeddedResource, ResourceLink, TextContent

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.mcp_sources.connection import McpSourceConnection, McpSourceError
from foundry_mcp.providers.mcp_sources.ranking import closest, shared, words
from foundry_mcp.providers.mcp_sources.tools import SourceTools, source_tools
from foundry_mcp.providers.search.base import SearchResult, SourceType
from foundry_mcp.providers.search.bounds import SourceBounds

TITLE_CHARS = 120
MAX_ITEMS_LISTED = 5_000  # a listing longer than this is ranked on its first items only
SCAN_FACTOR = 4  # items read to rank by their text, per result wanted, when names say little


class McpSourceSearch:
    """Searches one MCP source; see the module."""

    source_types: tuple[SourceType, ...] = ("local",)  # the user's own knowledge

    def __init__(self, connection: McpSourceConnection) -> None:
        self.connection = connection
        self.source = connection.name
        self.name = f"mcp.{connection.name}"
        self._tools: SourceTools | None = None

    async def search(
        self,
        query: str,
        max_results: int,
        source_type: SourceType | None = None,
        *,
        bounds: SourceBounds | None = None,
    ) -> list[SearchResult]:
        # ``bounds`` is ignored: the user's own sources are never domain- or date-filtered.
        try:
            tools = await self._sorted_tools()
            if tools.search_tool is not None:
                answer = await self._call(tools.search_tool, {tools.query_param: query})
                # A hit shares a word with the query: "no match" texts are not sources.
                wanted = words(query)
                hits = self._results(answer, tools.search_tool)
                return [hit for hit in hits if words(hit.content or "") & wanted][:max_results]
            return await self._list_and_read(tools, query, max_results)
        except McpSourceError as exc:
            raise ProviderError(
                exc.message,
                provider=self.name,
                retryable=True,
                kind="transient",
                remediation=exc.remediation,
            ) from None

    async def aclose(self) -> None:
        await self.connection.close()

    # ------------------------------------------------------------------ the two ways in

    async def _sorted_tools(self) -> SourceTools:
        if self._tools is None:
            tools = source_tools(
                self.source, self.connection.settings, await self.connection.tools()
            )
            if not tools.usable:
                raise McpSourceError(
                    " ".join(tools.problems),
                    remediation="Run foundry-mcp doctor: it names the fix.",
                )
            self._tools = tools
        return self._tools

    async def _call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call ``tool`` with ``arguments`` and the source's fixed arguments it takes."""
        fixed = self.connection.settings.arguments
        if fixed:
            taken = next(
                (
                    t.input_schema.get("properties") or {}
                    for t in await self.connection.tools()
                    if t.name == tool
                ),
                {},
            )
            arguments = {**{k: v for k, v in fixed.items() if k in taken}, **arguments}
        return await self.connection.call(tool, arguments)

    async def _list_and_read(
        self, tools: SourceTools, query: str, max_results: int
    ) -> list[SearchResult]:
        """List what the source holds, rank it against ``query`` and read the best.

        Items whose names share words with the query are read first. Names say little of a
        document's content, so while fewer than ``max_reads`` names match, up to
        ``SCAN_FACTOR`` times as many other items are read too and ranked by their text.
        """
        assert tools.list_tool is not None and tools.read_tool is not None
        listing = await self._call(tools.list_tool, {})
        entries = _entries(listing)[:MAX_ITEMS_LISTED]
        wanted = words(query)
        reads = min(max_results, self.connection.settings.max_reads)
        named = [entry for entry in entries if shared(entry[1], wanted)]
        named.sort(key=lambda entry: -shared(entry[1], wanted))  # stable: listing order
        chosen = named[:reads]
        if len(chosen) < reads and all(item == listed for item, listed in entries):
            chosen += [e for e in entries if e not in chosen][: reads * SCAN_FACTOR]
        found: list[tuple[int, SearchResult]] = []
        for item, listed in chosen:
            text = await self._read(tools, item, listed)
            score = closest(text, wanted) + 2 * shared(listed, wanted)
            if text and score:
                found.append((score, self._read_result(tools, item, listed, text)))
        found.sort(key=lambda pair: -pair[0])
        return [result for _, result in found[:reads]]

    async def _read(self, tools: SourceTools, item: str, listed: str) -> str:
        """The item's text as the read tool gives it, after what the listing said of it."""
        assert tools.read_tool is not None
        target = item
        if tools.item_base and not _absolute(item):
            target = posixpath.join(tools.item_base, item)
        arguments = {tools.item_param: target} if tools.item_param else {}
        answer = await self._call(tools.read_tool, arguments)
        read = "" if answer.is_error else _text(answer)
        return read if listed == item else "\n\n".join(part for part in (listed, read) if part)

    def _read_result(self, tools: SourceTools, item: str, listed: str, text: str) -> SearchResult:
        base = tools.item_base or ""
        if base and item.startswith(base.rstrip("/") + "/"):
            item = item[len(base.rstrip("/")) + 1 :]  # the link names the item under the folder
        return SearchResult(
            # A block's last line (a commit's message), else the item's name.
            title=listed.splitlines()[-1][:TITLE_CHARS],
            url=f"mcp://{self.source}/{quote(item.lstrip('/'), safe='/')}",
            snippet=text[:300],
            content=text,
            provider=self.name,
        )

    def _results(self, answer: CallToolResult, tool: str) -> list[SearchResult]:
        """One result per resource or text block of a search tool's answer."""
        if answer.is_error:
            raise McpSourceError(
                f"MCP source {self.source!r} answered {tool} with an error: {_text(answer)[:200]}",
                remediation="Check the query the tool expects (foundry-mcp doctor lists it).",
            )
        results = []
        for block in answer.content:
            if isinstance(block, EmbeddedResource):
                resource = block.resource
                text = getattr(resource, "text", None)
                if text:
                    results.append(self._result(str(resource.uri), text))
            elif isinstance(block, ResourceLink):
                results.append(self._result(str(block.uri), block.description or block.name))
            elif isinstance(block, TextContent) and block.text.strip():
                for text in _paragraphs(block.text):
                    results.append(self._result(None, text))
        if not results and answer.structured_content:
            text = json.dumps(answer.structured_content, ensure_ascii=False, indent=1)
            results.append(self._result(None, text))
        return results

    def _result(self, uri: str | None, text: str) -> SearchResult:
        first = text.strip().splitlines()[0] if text.strip() else self.source
        if uri is None:  # stable: the same text is the same link
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            uri = f"mcp://{self.source}/result/{digest}"
        return SearchResult(
            title=first[:TITLE_CHARS],
            url=uri,
            snippet=text[:300],
            content=text,
            provider=self.name,
        )


def _text(answer: CallToolResult) -> str:
    parts = [block.text for block in answer.content if isinstance(block, TextContent)]
    return "\n".join(parts).strip()


def _entries(listing: CallToolResult) -> list[tuple[str, str]]:
    """What a list tool named, as ``(item, what the listing says of it)``: its structured
    items; the files of a JSON tree (``directory_tree``: paths under the listed folder); its
    blocks when it answers in blocks (a commit log: the item is the block's first value, its
    hash); else its lines, folders (``[DIR]``) left out and markers stripped."""
    structured = listing.structured_content or {}
    for value in structured.values():
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return [(item, item) for item in value if item.strip()]
    text = _text(listing)
    tree = _tree_files(text)
    if tree is not None:
        return [(path, path) for path in tree]
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip().count("\n") >= 1]
    if len(blocks) >= 2:
        return [(_key(block), block) for block in blocks]
    lines = [
        re.sub(r"^(\[FILE\]\s*|[-*]\s+)", "", line.strip())
        for line in text.splitlines()
        if not line.strip().startswith("[DIR]")
    ]
    return [(line, line) for line in dict.fromkeys(line for line in lines if line)]


def _tree_files(text: str) -> list[str] | None:
    """The file paths of a JSON listing (names, or a tree of ``name``/``children``), or None
    when ``text`` is not one."""
    if not text.startswith(("[", "{")):
        return None
    try:
        tree = json.loads(text)
    except ValueError:
        return None
    files: list[str] = []

    def walk(node: object, prefix: str) -> None:
        if isinstance(node, list):
            for child in node:
                walk(child, prefix)
        elif isinstance(node, str) and node.strip():
            files.append(prefix + node)
        elif isinstance(node, dict) and isinstance(node.get("name"), str):
            path = prefix + node["name"]
            children = node.get("children")
            if isinstance(children, list) or node.get("type") == "directory":
                walk(children or [], path + "/")
            else:
                files.append(path)

    walk(tree, "")
    return files if files else None


def _absolute(item: str) -> bool:
    return item.startswith("/") or "://" in item


def _key(block: str) -> str:
    """A block's item: the value of its first ``Name: value`` line, else its first line."""
    for line in block.splitlines():
        name, colon, value = line.partition(":")
        if colon and value.strip() and " " not in name.strip():
            return value.strip().strip("'\"")
    return block.splitlines()[0].strip()


def _paragraphs(text: str) -> list[str]:
    """A search answer's hits: its lines when each reads as one hit, else the whole text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines if 1 < len(lines) <= 50 and all(len(line) < 2_000 for line in lines) else [text]
