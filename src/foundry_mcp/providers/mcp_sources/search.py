"""An MCP source as a search provider: its results become sources like any page.

A server with a free-text search tool is asked the query. A server that only lists and reads
(a file system, a git history) has what it holds listed (``listings``: by commit, by path),
ranked against the query here by the words they share, and the best ``max_reads`` read; an
item outside the source's folder is never read (``paths``) and the research is told of it.
The listing and the reads are the research's (``kept``): listed once and each item read once,
whichever of its sub-queries asks. Each result has a stable link: the resource's URI when the
server gives one, else ``mcp://<source>/<item>`` (a path under the folder, a commit's full
hash). Text, structured content and embedded resources become the source's text: data for the
analyst, never instructions. A server that fails, hangs or lists what cannot be read raises
:class:`ProviderError`, so the research skips it as it skips any failing search provider.
"""

from __future__ import annotations

import hashlib
import json
import logging
from functools import partial
from typing import Any
from urllib.parse import quote

import anyio
from mcp.types import CallToolResult, EmbeddedResource, ResourceLink, TextContent

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.mcp_sources.connection import McpSourceConnection, McpSourceError
from foundry_mcp.providers.mcp_sources.kept import SourceMemory
from foundry_mcp.providers.mcp_sources.listings import Entry, Listing, clean, read_listing
from foundry_mcp.providers.mcp_sources.ranking import closest, shared, words
from foundry_mcp.providers.mcp_sources.tools import SourceTools, source_tools
from foundry_mcp.providers.search.base import SearchResult, SourceType
from foundry_mcp.providers.search.bounds import SourceBounds
from foundry_mcp.providers.search.scope import current_scope

log = logging.getLogger(__name__)

SCAN_FACTOR = 4  # items read to rank by their text, per result wanted, when names say little
PARSE_IN_THREAD_CHARS = 200_000  # a longer listing is read off the event loop
REFUSED_NAMED = 5  # refused items a warning names


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
        memory = self._memory()
        if memory.failure is not None:  # lasting: said once more, never tried again
            raise memory.failure
        try:
            tools = await memory.tools.get(self._sorted_tools)
            if tools.search_tool is not None:
                answer = await self._call(tools.search_tool, {tools.query_param: query})
                # A hit shares a word with the query: "no match" texts are not sources.
                wanted = words(query)
                hits = self._results(answer, tools.search_tool)
                return [hit for hit in hits if words(hit.content or "") & wanted][:max_results]
            return await self._list_and_read(memory, tools, query, max_results)
        except McpSourceError as exc:
            # The research's warning quotes a failed search's message alone (an auth failure's
            # fix aside): a lasting failure's fix goes with it. Only a passing failure is
            # retried or feeds the breaker.
            lasting = exc.kind not in ("transient", "auth")
            said = f"{exc.message} {exc.remediation}" if lasting else exc.message
            error = ProviderError(
                said,
                provider=self.name,
                retryable=not exc.permanent,
                kind=exc.kind,
                remediation=exc.remediation,
            )
            if exc.permanent:
                memory.failure = error
            raise error from None

    async def aclose(self) -> None:
        await self.connection.close()

    # ------------------------------------------------------------------ the two ways in

    def _memory(self) -> SourceMemory:
        """This research's memory of the source; outside a research, this search's own."""
        scope = current_scope()
        return SourceMemory() if scope is None else scope.kept(self.name, SourceMemory)

    async def _sorted_tools(self) -> SourceTools:
        if self._tools is None:
            tools = source_tools(
                self.source, self.connection.settings, await self.connection.tools()
            )
            if not tools.usable:
                raise McpSourceError(
                    " ".join(tools.problems),
                    remediation="Run foundry-mcp doctor: it names the fix.",
                    kind="unknown",  # its configuration: asking again gets the same tools
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
        self, memory: SourceMemory, tools: SourceTools, query: str, max_results: int
    ) -> list[SearchResult]:
        """Rank the research's listing of the source against ``query`` and read the best.

        Items whose listing shares words with the query are read first. Names say little of a
        document's content, so while fewer than ``max_reads`` names match, up to
        ``SCAN_FACTOR`` times as many other items are read too and ranked by their text.
        """
        listing = await memory.listing.get(partial(self._listing, tools))
        entries = listing.entries
        wanted = words(query)
        reads = min(max_results, self.connection.settings.max_reads)
        named = [entry for entry in entries if shared(entry.listed, wanted)]
        named.sort(key=lambda entry: -shared(entry.listed, wanted))  # stable: listing order
        chosen = named[:reads]
        if len(chosen) < reads and not any(entry.commit for entry in entries):
            chosen += [e for e in entries if e not in chosen][: reads * SCAN_FACTOR]
        found: list[tuple[int, SearchResult]] = []
        for entry in chosen:
            text = await memory.read(entry.item).get(partial(self._read, tools, entry))
            score = closest(text, wanted) + 2 * shared(entry.listed, wanted)
            if text and score:
                found.append((score, self._read_result(entry, text)))
        found.sort(key=lambda pair: -pair[0])
        return [result for _, result in found[:reads]]

    async def _listing(self, tools: SourceTools) -> Listing:
        """What the list tool names, read (see ``listings``); the research is told what was
        refused or cut."""
        assert tools.list_tool is not None
        answer = await self._call(tools.list_tool, {})
        text = _text(answer)
        if answer.is_error:
            raise McpSourceError(
                f"MCP source {self.source!r} answered {tools.list_tool} with an error: "
                f"{clean(text, 200)}",
                remediation="Check its list tool's fixed arguments (foundry-mcp doctor lists "
                "the tools).",
            )
        read = partial(read_listing, text, answer.structured_content, tools.item_base)
        try:
            listing = (
                await anyio.to_thread.run_sync(read)
                if len(text) > PARSE_IN_THREAD_CHARS
                else read()
            )
        except McpSourceError as exc:
            raise McpSourceError(
                f"MCP source {self.source!r}: {tools.list_tool} could not be read: {exc.message}",
                remediation=exc.remediation,
                kind=exc.kind,
            ) from None
        except Exception as exc:  # a listing nobody foresaw: the source is skipped, not the run
            log.warning("MCP source %s: unreadable listing", self.source, exc_info=True)
            raise McpSourceError(
                f"MCP source {self.source!r}: {tools.list_tool} could not be read "
                f"({type(exc).__name__}).",
                remediation="Name another list_tool in its table (foundry-mcp doctor lists "
                "the tools).",
                kind="unknown",
            ) from None
        self._tell(listing, tools.item_base)
        return listing

    def _tell(self, listing: Listing, root: str | None) -> None:
        """Warn the research (once: the listing is its) of items refused and bounds met."""
        said = []
        if listing.refused:
            where = f"its folder {root}" if root else "itself (absolute paths, or .. climbing out)"
            named = ", ".join(repr(clean(item, 80)) for item in listing.refused[:REFUSED_NAMED])
            more = len(listing.refused) - REFUSED_NAMED
            said.append(
                f"MCP source {self.source!r} listed {len(listing.refused)} item(s) outside "
                f"{where}, never read: {named}" + (f" and {more} more." if more > 0 else ".")
            )
        if listing.cut:
            said.append(
                f"MCP source {self.source!r}: its listing was cut to {', '.join(listing.cut)}; "
                "what lies beyond was not ranked or read."
            )
        scope = current_scope()
        for message in said:
            if scope is None:
                log.warning("%s", message)
            else:
                scope.warn(message)

    async def _read(self, tools: SourceTools, entry: Entry) -> str:
        """The item's text as the read tool gives it ("" when it answers with an error)."""
        assert tools.read_tool is not None
        arguments = {tools.item_param: entry.item} if tools.item_param else {}
        answer = await self._call(tools.read_tool, arguments)
        text = "" if answer.is_error else _text(answer)
        # A commit is cited by its hash: only a read that shows that commit is kept.
        return "" if entry.commit and entry.item not in text[:1_000] else text

    def _read_result(self, entry: Entry, text: str) -> SearchResult:
        return SearchResult(
            title=entry.title,
            url=f"mcp://{self.source}/{quote(entry.name.lstrip('/'), safe='/')}",
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
            title=clean(first) or self.source,
            url=uri,
            snippet=text[:300],
            content=text,
            provider=self.name,
        )


def _text(answer: CallToolResult) -> str:
    parts = [block.text for block in answer.content if isinstance(block, TextContent)]
    return "\n".join(parts).strip()


def _paragraphs(text: str) -> list[str]:
    """A search answer's hits: its lines when each reads as one hit, else the whole text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines if 1 < len(lines) <= 50 and all(len(line) < 2_000 for line in lines) else [text]
