"""The protocol every search adapter implements, and the results it returns."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel


class SearchResult(BaseModel):
    """One hit from a search provider, with page text when the provider supplies it."""

    title: str
    url: str | None = None
    snippet: str = ""
    content: str | None = None
    score: float | None = None
    provider: str = ""


class SearchProvider(Protocol):
    """A search API behind one method."""

    name: str

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        """Search; raise ``ProviderError`` (from ``foundry_mcp.errors``) on failure."""
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...
