"""What one research keeps of one MCP source: its listing, the items it read, its lasting
failure. Every sub-query and branch of the research shares it (``search.scope``), so a source
is listed once and each item read once per research; a listing or a read that several of them
ask for at the same moment is made once, the others waiting for it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio

from foundry_mcp.errors import FoundryError, ProviderError
from foundry_mcp.providers.mcp_sources.listings import Listing
from foundry_mcp.providers.mcp_sources.tools import SourceTools

T = TypeVar("T")
MAX_KEPT_READS = 256  # texts kept per source and research; the oldest read first give way


class Once(Generic[T]):
    """A value made once, by its first asker; askers meanwhile wait for it.

    A failure the user can read (:class:`FoundryError`) is shared with those who waited and
    not kept: the next asker tries again. A maker that is cancelled or fails otherwise leaves
    the making to the next one in line.
    """

    def __init__(self) -> None:
        self._made = False
        self._value: T | None = None
        self._making: anyio.Event | None = None
        self._failure: tuple[anyio.Event, FoundryError] | None = None

    @property
    def made(self) -> bool:
        return self._made

    async def get(self, make: Callable[[], Awaitable[T]]) -> T:
        while not self._made:
            making = self._making
            if making is None:
                return await self._make(make)
            await making.wait()
            if self._failure is not None and self._failure[0] is making:
                raise self._failure[1]
        return self._value  # type: ignore[return-value]  # set with _made

    async def _make(self, make: Callable[[], Awaitable[T]]) -> T:
        self._making = making = anyio.Event()
        try:
            value = await make()
        except FoundryError as exc:
            self._failure = (making, exc)
            raise
        else:
            self._value, self._made = value, True
            return value
        finally:
            self._making = None
            making.set()


@dataclass
class SourceMemory:
    """One source's work for one research (or for one search, outside a research)."""

    tools: Once[SourceTools] = field(default_factory=Once)
    listing: Once[Listing] = field(default_factory=Once)
    failure: ProviderError | None = None  # lasting (a missing command): said again, not retried
    _reads: OrderedDict[str, Once[str]] = field(default_factory=OrderedDict)

    def read(self, item: str) -> Once[str]:
        """The read of ``item``, shared by every search of the research."""
        once = self._reads.get(item)
        if once is None:
            once = self._reads[item] = Once()
            if len(self._reads) > MAX_KEPT_READS:
                oldest = next((key for key, kept in self._reads.items() if kept.made), None)
                if oldest is not None:
                    del self._reads[oldest]
        self._reads.move_to_end(item)
        return once
