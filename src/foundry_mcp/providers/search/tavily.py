"""Tavily web and news search, with the raw page text of each result.

A search for news sources uses Tavily's ``news`` topic (recent articles from news outlets);
any other search its general web topic. The day a news result was published (its
``published_date``) becomes its ``Publication``.

Source bounds are all sent in the request: ``include_domains`` / ``exclude_domains`` lists and
``start_date`` / ``end_date`` days (``YYYY-MM-DD``, both inclusive).

The SDK sends through a client we give it (:func:`_connections`), an ``httpx2`` one like the LLM
SDKs', not the ``httpx`` client it would build: a search's answer holds the raw text of every
page it found (a megabyte or more), and with many searches in flight the older pool, which looks
at every connection for every waiting request whenever a request comes or goes, cost the server
several times the CPU of reading those answers.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import httpx2

from foundry_mcp.config import FetchSettings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import (
    connection_error,
    malformed_error,
    parse_retry_after,
    status_error,
    timeout_error,
)
from foundry_mcp.providers.http.keep_alive import kept_alive
from foundry_mcp.providers.search.base import SearchResult, SourceType, published_on
from foundry_mcp.providers.search.bounds import BOUND_NAMES, SourceBounds, apply_bounds

if TYPE_CHECKING:
    from tavily import AsyncTavilyClient

# The page text kept per result: ``[research.fetch] max_page_chars``, passed by the registry.
DEFAULT_MAX_PAGE_CHARS: int = FetchSettings.model_fields["max_page_chars"].default
MAX_TIMEOUT_SECONDS = 120.0  # the SDK caps every search at 120 s
MAX_CONNECTIONS = 100  # as many as ``max_in_flight`` allows


class TavilySearch:
    """Search through ``tavily-python``; the key is required (no keyless mode).

    Every failure becomes a ``ProviderError``: the SDK's own exceptions, the raw ``httpx2``
    errors it lets through from our client (timeouts, 5xx statuses, refused or broken
    connections) and answers that are not the JSON object it promises.
    """

    source_types: tuple[SourceType, ...] = ("web", "news")
    native_bounds: frozenset[str] = BOUND_NAMES  # domains and days are request fields

    def __init__(
        self,
        name: str,
        api_key: str,
        base_url: str | None,
        timeout: float,
        search_depth: str = "basic",
        max_page_chars: int = DEFAULT_MAX_PAGE_CHARS,
    ) -> None:
        from tavily import AsyncTavilyClient

        self.name = name
        self._key = api_key
        self._timeout = min(timeout, MAX_TIMEOUT_SECONDS)
        self._search_depth = search_depth
        self._max_page_chars = max_page_chars
        self._http = _connections()
        self._client: AsyncTavilyClient = AsyncTavilyClient(
            api_key=api_key, api_base_url=base_url, client=self._http
        )

    async def search(
        self,
        query: str,
        max_results: int,
        source_type: SourceType | None = None,
        *,
        bounds: SourceBounds | None = None,
    ) -> list[SearchResult]:
        if not self._key:  # without a key the SDK would silently go keyless
            raise ProviderError(
                f"{self.name} has no API key.",
                provider=self.name,
                kind="auth",
                remediation=f"Set TAVILY_API_KEY or [providers.{self.name}] api_key.",
            )
        # The news topic only when news is asked for: a web search stays the SDK's default.
        topic: dict[str, Any] = {"topic": "news"} if source_type == "news" else {}
        try:
            response: Any = await self._client.search(
                query,
                max_results=max_results,
                include_raw_content=True,
                search_depth=self._search_depth,
                timeout=self._timeout,
                **topic,
                **_bound_fields(bounds),
            )
            results = response.get("results") or []
        except Exception as exc:
            raise self._error(exc) from None
        if not isinstance(results, list):
            raise malformed_error(self.name, "the results are not a list")
        found = [
            _result(self.name, item, self._max_page_chars)
            for item in results[:max_results]
            if isinstance(item, dict)
        ]
        return apply_bounds(found, bounds, self.native_bounds)

    def _error(self, exc: Exception) -> ProviderError:
        """The ProviderError for anything the SDK raised; an unknown exception is re-raised."""
        from tavily import errors

        # The SDK turns only its own httpx's timeouts into its TimeoutError: ours come raw.
        if isinstance(exc, httpx2.TimeoutException | TimeoutError):
            return timeout_error(self.name, self._timeout)
        if isinstance(exc, errors.InvalidAPIKeyError | errors.MissingAPIKeyError):
            return status_error(self.name, 401, str(exc), secret=self._key)
        if isinstance(exc, errors.UsageLimitExceededError):
            error = status_error(self.name, 429, str(exc), secret=self._key)
            error.retry_after = getattr(exc, "retry_after_seconds", None)
            return error
        if isinstance(exc, errors.ForbiddenError):
            # HTTP 403, or 432/433 when the plan's or the pay-as-you-go limit is used up.
            if "limit" not in str(exc).lower():
                return status_error(self.name, 403, str(exc), secret=self._key)
            return ProviderError(
                f"{self.name} refused the search: the usage limit of the account is reached.",
                provider=self.name,
                kind="auth",
                remediation=(
                    f"Raise the plan or pay-as-you-go limit of your {self.name} account, or list "
                    "another search provider; then resume the research."
                ),
            )
        if isinstance(exc, errors.BadRequestError):
            return status_error(self.name, 400, str(exc), secret=self._key)
        if isinstance(exc, httpx2.HTTPStatusError):
            response = exc.response
            return status_error(
                self.name,
                response.status_code,
                response.text,
                retry_after=parse_retry_after(response.headers),
                secret=self._key,
            )
        # Refused, reset, protocol and decoding errors.
        if isinstance(exc, httpx2.HTTPError):
            return connection_error(self.name, exc)
        # A 200 whose body is not JSON (ValueError) or not an object (AttributeError on .get).
        if isinstance(exc, ValueError | AttributeError):
            return malformed_error(self.name, type(exc).__name__)
        raise exc

    async def aclose(self) -> None:
        await self._http.aclose()  # the SDK leaves a client it was given open


def _connections() -> httpx2.AsyncClient:
    """The HTTP client the SDK sends through, with its proxies (``TAVILY_HTTP_PROXY`` and
    ``TAVILY_HTTPS_PROXY``, as the SDK would use them; otherwise the environment's), and
    keep-alive for as many connections as the provider may have requests in flight, kept
    :data:`~foundry_mcp.providers.http.keep_alive.KEEP_ALIVE_SECONDS` (the next round of
    searches finds them open)."""
    proxies = {
        "http://": os.environ.get("TAVILY_HTTP_PROXY"),
        "https://": os.environ.get("TAVILY_HTTPS_PROXY"),
    }
    mounts = {
        scheme: httpx2.AsyncHTTPTransport(proxy=proxy) for scheme, proxy in proxies.items() if proxy
    }
    return httpx2.AsyncClient(
        mounts=mounts or None,
        limits=kept_alive(
            httpx2.Limits(
                max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS
            )
        ),
    )


def _bound_fields(bounds: SourceBounds | None) -> dict[str, Any]:
    """The ``/search`` fields that carry ``bounds`` (none for an absent bound)."""
    if bounds is None:
        return {}
    fields: dict[str, Any] = {}
    if bounds.include_domains:
        fields["include_domains"] = list(bounds.include_domains)
    if bounds.exclude_domains:
        fields["exclude_domains"] = list(bounds.exclude_domains)
    if bounds.published_after is not None:
        fields["start_date"] = bounds.published_after.isoformat()
    if bounds.published_before is not None:
        fields["end_date"] = bounds.published_before.isoformat()
    return fields


def _result(provider: str, item: dict[str, Any], max_page_chars: int) -> SearchResult:
    raw = item.get("raw_content") or None
    return SearchResult(
        title=str(item.get("title") or item.get("url") or "Untitled"),
        url=item.get("url"),
        snippet=str(item.get("content") or ""),
        content=raw[:max_page_chars] if isinstance(raw, str) else None,
        score=item.get("score"),
        provider=provider,
        publication=published_on(item.get("published_date")),
    )
