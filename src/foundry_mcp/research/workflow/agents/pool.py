"""The sources of one research, shared by all its researchers: one id and one read per page.

In hierarchical mode several researchers (one per sub-question) search at the same time and
often find the same pages. Through the pool, a URL keeps the id it got first, in every
researcher (so it has one citation number in the whole report), and its page is downloaded once:
a second researcher asking for it while it is being read waits for that read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import anyio

from foundry_mcp.research.models import ResearchState, Source

if TYPE_CHECKING:
    from foundry_mcp.providers.pages.fetch import FetchResult


def normalise_url(url: str) -> str:
    """A URL reduced to what identifies the page: no fragment, scheme/host lower-cased.

    ``file:`` URLs keep their fragment: it names a passage of a local document.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    path = parts.path.rstrip("/") or "/"
    fragment = parts.fragment if scheme == "file" else ""
    return urlunsplit((scheme, parts.netloc.lower(), path, parts.query, fragment))


@dataclass
class _Read:
    done: anyio.Event = field(default_factory=anyio.Event)
    result: FetchResult | None = None


class SourcePool:
    """Source ids by URL, and page reads in flight or done, for one research run."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._reads: dict[str, _Read] = {}

    def identify(self, source: Source) -> None:
        """Give ``source`` the id its URL already has in the research, or register it."""
        if not source.url:
            return
        key = normalise_url(source.url)
        known = self._ids.setdefault(key, source.id)
        source.id = known

    def remember(self, states: Iterable[ResearchState]) -> None:
        """Learn the ids of sources saved by earlier runs (a resumed research)."""
        for state in states:
            for source in state.sources:
                if source.url:
                    self._ids.setdefault(normalise_url(source.url), source.id)

    async def read(self, url: str, fetch: Callable[[str], Awaitable[FetchResult]]) -> FetchResult:
        """The page at ``url``, read once for the whole research."""
        key = normalise_url(url)
        while True:
            pending = self._reads.get(key)
            if pending is None:
                mine = self._reads[key] = _Read()
                try:
                    mine.result = await fetch(url)
                finally:
                    if mine.result is None:  # cancelled: whoever waits reads it again
                        del self._reads[key]
                    mine.done.set()
                return mine.result
            await pending.done.wait()
            if pending.result is not None:
                return pending.result
