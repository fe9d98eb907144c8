"""Google Programmable Search (the Custom Search JSON API).

``GET {base}/customsearch/v1?key=...&cx=...&q=...&num=...``; each ``items[]`` entry becomes a
``SearchResult`` with the title, the link and Google's snippet (no page text: the gatherer
fetches the page). Needs an API key and a search engine id (``cx``).

Source bounds, all applied by Google itself (native):

- one included domain: ``siteSearch=<domain>&siteSearchFilter=i``; several: ``(site:a OR
  site:b)`` added to ``q``;
- one excluded domain and none included: ``siteSearch=<domain>&siteSearchFilter=e``; otherwise
  a `` -site:<domain>`` term in ``q`` per excluded domain;
- the days: ``sort=date:r:YYYYMMDD:YYYYMMDD``, the documented "restrict to range" form of the
  sort operator on Google's estimate of a page's date (an open end gets a far bound).

Google reads at most 32 words of ``q``: with many domains the last ``site:`` terms may be
ignored, so the domain rules are checked again on the results (as for every adapter).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import httpx2

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import parse_retry_after
from foundry_mcp.providers.search._http import get_json, install_log_redaction, new_client
from foundry_mcp.providers.search.base import SearchResult, SourceType
from foundry_mcp.providers.search.bounds import (
    BOUND_NAMES,
    SourceBounds,
    apply_bounds,
    site_terms,
)

DEFAULT_BASE_URL = "https://www.googleapis.com"
MAX_NUM = 10  # the API answers at most 10 results per request
# The bounds of a date range left open: Google compares the dates as numbers.
_EARLIEST = date(1900, 1, 1)
_LATEST = date(9999, 12, 31)
_QUOTA_REASONS = {
    "dailylimitexceeded",
    "ratelimitexceeded",
    "userratelimitexceeded",
    "quotaexceeded",
    "resource_exhausted",
}
_KEY_REASONS = {"keyinvalid", "api_key_invalid", "keyexpired", "api_key_expired"}
_KEY_REMEDIATION = (
    "Set GOOGLE_API_KEY (a key with the Custom Search API enabled) and GOOGLE_CSE_ID (your "
    "Programmable Search Engine id) in the MCP server's env block, or api_key and cse_id in "
    "[providers.google] of ~/.foundry-mcp.toml, then resume the research."
)


class GoogleSearch:
    """Search through the Custom Search JSON API; one HTTP client per provider."""

    source_types: tuple[SourceType, ...] = ("web",)
    native_bounds: frozenset[str] = BOUND_NAMES  # see the module

    def __init__(
        self,
        name: str,
        api_key: str,
        cse_id: str,
        base_url: str | None,
        timeout: float,
    ) -> None:
        install_log_redaction()
        self.name = name
        self._key = api_key
        self._cse_id = cse_id
        self._timeout = min(timeout, 120.0)
        self._client = new_client(base_url or DEFAULT_BASE_URL, self._timeout)

    async def search(
        self,
        query: str,
        max_results: int,
        source_type: SourceType | None = None,
        *,
        bounds: SourceBounds | None = None,
    ) -> list[SearchResult]:
        num = max(1, min(max_results, MAX_NUM))
        params: dict[str, Any] = {"key": self._key, "cx": self._cse_id, "q": query, "num": num}
        if bounds is not None:
            params.update(bound_params(query, bounds))
        data = await get_json(
            self._client,
            self.name,
            "/customsearch/v1",
            params=params,
            timeout=self._timeout,
            secret=self._key,
            map_error=self._map_error,
        )
        items = data.get("items") or []
        if not isinstance(items, list):
            raise ProviderError(
                f"{self.name} answered with a malformed result list.",
                provider=self.name,
                retryable=True,
                kind="transient",
            )
        results = [_result(self.name, item) for item in items if isinstance(item, dict)]
        found = [r for r in results if r.url][:max_results]
        return apply_bounds(found, bounds, self.native_bounds)

    def _map_error(
        self, status: int, parsed: Any, headers: httpx2.Headers, detail: str
    ) -> ProviderError | None:
        reasons = _reasons(parsed)
        if reasons & _QUOTA_REASONS or (status == 403 and "quota" in detail.lower()):
            retry_after = parse_retry_after(headers)
            daily = "dailylimitexceeded" in reasons or "per day" in detail.lower()
            return ProviderError(
                f"{self.name} refused the search: quota exceeded (HTTP {status}).",
                provider=self.name,
                status_code=status,
                retryable=not daily,
                kind="rate_limit",
                retry_after=retry_after,
                remediation=(
                    "The Custom Search API allows 100 free queries a day and a per-minute rate; "
                    "wait, or raise the quota in the Google Cloud console, then resume the "
                    "research."
                ),
            )
        key_problem = status == 400 and "api key" in detail.lower()
        if status in (401, 403) or reasons & _KEY_REASONS or key_problem:
            return ProviderError(
                f"{self.name} rejected the API key or search engine id (HTTP {status}): "
                f"{detail[:200]}",
                provider=self.name,
                status_code=status,
                kind="auth",
                remediation=_KEY_REMEDIATION,
            )
        return None

    async def aclose(self) -> None:
        await self._client.aclose()


def bound_params(query: str, bounds: SourceBounds) -> dict[str, str]:
    """The request parameters that carry ``bounds`` (``q`` with its ``site:`` terms)."""
    params: dict[str, str] = {}
    included, excluded = list(bounds.include_domains), list(bounds.exclude_domains)
    # Google's own site filter takes one domain: an inclusion, else a lone exclusion.
    if len(included) == 1:
        params.update(siteSearch=included.pop(), siteSearchFilter="i")
    elif len(excluded) == 1 and not included:
        params.update(siteSearch=excluded.pop(), siteSearchFilter="e")
    terms = site_terms(included, excluded)
    if terms:
        params["q"] = " ".join([query.strip(), *terms])
    after, before = bounds.published_after, bounds.published_before
    if after is not None or before is not None:
        low, high = (after or _EARLIEST), (before or _LATEST)
        params["sort"] = f"date:r:{low:%Y%m%d}:{high:%Y%m%d}"
    return params


def _reasons(parsed: Any) -> set[str]:
    """The ``reason``/``status`` codes of a Google error body, lower-cased."""
    found: set[str] = set()
    if not isinstance(parsed, dict) or not isinstance(parsed.get("error"), dict):
        return found
    error = parsed["error"]
    if isinstance(error.get("status"), str):
        found.add(error["status"].lower())
    for key in ("errors", "details"):
        for entry in error.get(key) or []:
            if isinstance(entry, dict) and isinstance(entry.get("reason"), str):
                found.add(entry["reason"].lower())
    return found


def _clean(text: Any) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def _result(provider: str, item: dict[str, Any]) -> SearchResult:
    link = item.get("link")
    return SearchResult(
        title=_clean(item.get("title")) or str(link or "Untitled"),
        url=str(link) if isinstance(link, str) and link else None,
        snippet=_clean(item.get("snippet")),
        content=None,
        provider=provider,
    )
