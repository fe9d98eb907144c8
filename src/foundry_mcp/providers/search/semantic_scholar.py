"""Semantic Scholar paper search (the Academic Graph API).

``GET {base}/graph/v1/paper/search?query=...&limit=...&fields=...``. Each paper becomes a
``SearchResult`` whose content is its abstract, its TL;DR and a line with year, venue, authors
and citation count; its URL is the DOI when known, else the arXiv page, else Semantic Scholar's.
Its authors, year, venue, DOI and arXiv id also become its ``Publication`` (for citing it).
An API key (header ``x-api-key``) is optional: without one, requests share a public rate limit.

Source bounds: the days are sent as ``publicationDateOrYear=<after>:<before>`` (inclusive,
either end may be open; the API matches a paper known only by its year on the year), so the date
range is native. The API has no domain filter: the domain rules are checked on each paper's
URL (its DOI, arXiv or Semantic Scholar link), after the search.
"""

from __future__ import annotations

import re
from typing import Any

import httpx2

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import parse_retry_after, status_error
from foundry_mcp.providers.search._http import get_json, new_client
from foundry_mcp.providers.search.base import Publication, SearchResult, SourceType
from foundry_mcp.providers.search.bounds import SourceBounds, apply_bounds

DEFAULT_BASE_URL = "https://api.semanticscholar.org"
FIELDS = "title,abstract,tldr,url,externalIds,year,authors,venue,citationCount"
MAX_LIMIT = 100
MAX_AUTHORS = 6
_KEY_HINT = (
    "Request a free API key from Semantic Scholar and set SEMANTIC_SCHOLAR_API_KEY in the MCP "
    "server's env block, or api_key in [providers.semantic_scholar] of ~/.foundry-mcp.toml"
)


class SemanticScholarSearch:
    """Search papers; one HTTP client per provider, key optional."""

    source_types: tuple[SourceType, ...] = ("academic",)
    native_bounds: frozenset[str] = frozenset({"published_after", "published_before"})

    def __init__(
        self, name: str, api_key: str | None, base_url: str | None, timeout: float
    ) -> None:
        self.name = name
        self._key = api_key
        self._timeout = min(timeout, 120.0)
        headers = {"x-api-key": api_key} if api_key else {}
        self._client = new_client(base_url or DEFAULT_BASE_URL, self._timeout, headers)

    async def search(
        self,
        query: str,
        max_results: int,
        source_type: SourceType | None = None,
        *,
        bounds: SourceBounds | None = None,
    ) -> list[SearchResult]:
        # The API finds nothing for hyphenated terms; it supports no query syntax at all.
        text = re.sub(r"\s+", " ", query.replace("-", " ")).strip()
        if not text:
            return []
        limit = max(1, min(max_results, MAX_LIMIT))
        params: dict[str, Any] = {"query": text, "limit": limit, "fields": FIELDS}
        dates = publication_range(bounds)
        if dates is not None:
            params["publicationDateOrYear"] = dates
        data = await get_json(
            self._client,
            self.name,
            "/graph/v1/paper/search",
            params=params,
            timeout=self._timeout,
            secret=self._key,
            map_error=self._map_error,
        )
        papers = data.get("data") or []
        if not isinstance(papers, list):
            raise ProviderError(
                f"{self.name} answered with a malformed result list.",
                provider=self.name,
                retryable=True,
                kind="transient",
            )
        results = [_result(self.name, p) for p in papers if isinstance(p, dict)]
        found = [r for r in results if r is not None][:max_results]
        return apply_bounds(found, bounds, self.native_bounds)

    def _map_error(
        self, status: int, parsed: Any, headers: httpx2.Headers, detail: str
    ) -> ProviderError | None:
        if status in (401, 403):
            if self._key:
                return ProviderError(
                    f"{self.name} rejected the API key (HTTP {status}).",
                    provider=self.name,
                    status_code=status,
                    kind="auth",
                    remediation=f"{_KEY_HINT}, with a valid key, then resume the research.",
                )
            return ProviderError(
                f"{self.name} refused a request made without an API key (HTTP {status}).",
                provider=self.name,
                status_code=status,
                kind="auth",
                remediation=f"{_KEY_HINT}, then resume the research.",
            )
        if status == 429 and not self._key:
            error = status_error(self.name, status, detail, retry_after=parse_retry_after(headers))
            error.remediation = (
                "Keyless requests share one public rate limit. "
                f"{_KEY_HINT}, or wait a minute, then resume the research."
            )
            return error
        return None

    async def aclose(self) -> None:
        await self._client.aclose()


def publication_range(bounds: SourceBounds | None) -> str | None:
    """``publicationDateOrYear`` for the days of ``bounds`` (``2020-01-01:``, ``:2023-12-31``,
    or both ends), None when no day is bounded."""
    if bounds is None or (bounds.published_after is None and bounds.published_before is None):
        return None
    after, before = bounds.published_after, bounds.published_before
    return f"{after.isoformat() if after else ''}:{before.isoformat() if before else ''}"


def paper_url(paper: dict[str, Any]) -> str | None:
    """The DOI link, else the arXiv page, else the Semantic Scholar page."""
    doi = _external_id(paper, "DOI")
    if doi:
        return f"https://doi.org/{doi}"
    arxiv = _external_id(paper, "ArXiv")
    if arxiv:
        return f"https://arxiv.org/abs/{arxiv}"
    url = paper.get("url")
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return url
    paper_id = paper.get("paperId")
    if isinstance(paper_id, str) and paper_id:
        return f"https://www.semanticscholar.org/paper/{paper_id}"
    return None


def _external_id(paper: dict[str, Any], kind: str) -> str | None:
    ids = paper.get("externalIds")
    value = ids.get(kind) if isinstance(ids, dict) else None
    return (value.strip() or None) if isinstance(value, str) else None


def _clean(text: Any) -> str:
    return re.sub(r"\s+", " ", text).strip() if isinstance(text, str) else ""


def _year(paper: dict[str, Any]) -> int | None:
    year = paper.get("year")
    return year if isinstance(year, int) and not isinstance(year, bool) else None


def _authors(paper: dict[str, Any]) -> list[str]:
    names = [_clean(a.get("name")) for a in paper.get("authors") or [] if isinstance(a, dict)]
    return [name for name in names if name]


def _publication(paper: dict[str, Any]) -> Publication | None:
    publication = Publication(
        authors=_authors(paper),
        year=_year(paper),
        venue=_clean(paper.get("venue")) or None,
        doi=_external_id(paper, "DOI"),
        arxiv_id=_external_id(paper, "ArXiv"),
    )
    return publication if publication.known_fields() else None


def _byline(paper: dict[str, Any]) -> str:
    parts: list[str] = []
    year = _year(paper)
    if year is not None:
        parts.append(str(year))
    venue = _clean(paper.get("venue"))
    if venue:
        parts.append(venue)
    authors = _authors(paper)
    if authors:
        names = ", ".join(authors[:MAX_AUTHORS])
        parts.append(names + (" et al." if len(authors) > MAX_AUTHORS else ""))
    citations = paper.get("citationCount")
    if isinstance(citations, int):
        parts.append(f"{citations} citation{'s' if citations != 1 else ''}")
    return " · ".join(parts)


def _result(provider: str, paper: dict[str, Any]) -> SearchResult | None:
    url = paper_url(paper)
    title = _clean(paper.get("title"))
    if url is None or not title:
        return None
    abstract = _clean(paper.get("abstract"))
    tldr_field = paper.get("tldr")
    tldr = _clean(tldr_field.get("text")) if isinstance(tldr_field, dict) else ""
    byline = _byline(paper)
    content: str | None = None
    if abstract or tldr:
        blocks = [abstract] if abstract else []
        if tldr:
            blocks.append(f"TL;DR: {tldr}")
        if byline:
            blocks.append(byline)
        content = "\n\n".join(blocks)
    snippet = tldr or abstract[:300] or byline
    return SearchResult(
        title=title,
        url=url,
        snippet=snippet,
        content=content,
        provider=provider,
        publication=_publication(paper),
    )
