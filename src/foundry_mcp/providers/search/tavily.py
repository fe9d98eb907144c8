"""Tavily web search, with the raw page text of each result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http_errors import status_error
from foundry_mcp.providers.search.base import SearchResult

if TYPE_CHECKING:
    from tavily import AsyncTavilyClient

MAX_CONTENT_CHARS = 60_000


class TavilySearch:
    """Search through ``tavily-python``; the key is required (no keyless mode)."""

    def __init__(
        self,
        name: str,
        api_key: str,
        base_url: str | None,
        timeout: float,
        search_depth: str = "basic",
    ) -> None:
        from tavily import AsyncTavilyClient

        self.name = name
        self._timeout = min(timeout, 120.0)
        self._search_depth = search_depth
        self._client: AsyncTavilyClient = AsyncTavilyClient(api_key=api_key, api_base_url=base_url)

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        from tavily import errors

        try:
            response: dict[str, Any] = await self._client.search(
                query,
                max_results=max_results,
                include_raw_content=True,
                search_depth=self._search_depth,
                timeout=self._timeout,
            )
        except errors.InvalidAPIKeyError:
            raise status_error(self.name, 401, "invalid API key") from None
        except errors.UsageLimitExceededError:
            raise status_error(self.name, 429, "usage limit exceeded") from None
        except errors.ForbiddenError as exc:
            raise status_error(self.name, 403, str(exc)) from None
        except errors.BadRequestError as exc:
            raise status_error(self.name, 400, str(exc)) from None
        except httpx.HTTPStatusError as exc:
            raise status_error(self.name, exc.response.status_code, exc.response.text) from None
        except (httpx.TransportError, TimeoutError) as exc:
            raise ProviderError(
                f"Cannot reach {self.name}: {type(exc).__name__}.",
                provider=self.name,
                retryable=True,
                kind="transient",
            ) from None
        return [_result(self.name, item) for item in response.get("results", [])[:max_results]]

    async def aclose(self) -> None:
        await self._client.close()


def _result(provider: str, item: dict[str, Any]) -> SearchResult:
    raw = item.get("raw_content") or None
    return SearchResult(
        title=str(item.get("title") or item.get("url") or "Untitled"),
        url=item.get("url"),
        snippet=str(item.get("content") or ""),
        content=raw[:MAX_CONTENT_CHARS] if isinstance(raw, str) else None,
        score=item.get("score"),
        provider=provider,
    )
