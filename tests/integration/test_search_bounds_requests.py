"""Source bounds reach each search service in its own terms, and what a service lets through
outside them is dropped.

Each adapter runs with its real client (the tavily SDK, httpx, ddgs with primp) against the
loopback fakes the other search tests use; the fakes record the request and answer whatever
they hold, bounds or not, so a result outside the bounds shows the adapter's own check.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from foundry_mcp.providers.search.base import Publication
from foundry_mcp.providers.search.bounds import SourceBounds
from foundry_mcp.providers.search.google import GoogleSearch
from foundry_mcp.providers.search.keyless import KeylessSearch
from foundry_mcp.providers.search.semantic_scholar import SemanticScholarSearch
from foundry_mcp.providers.search.tavily import TavilySearch
from tests.fakes import (
    FakeResponse,
    RecordedRequest,
    fake_google,
    fake_semantic_scholar,
    fake_tavily,
    paper,
)
from tests.fakes.ddgs_server import (
    BING_NEWS_PATH,
    DDG_PATH,
    FakeEngines,
    Hit,
    bing_news_page,
    fake_engines,
    point_ddgs_at,
)

pytestmark = pytest.mark.anyio

TAVILY_KEY = "tvly-bounds-key"


def _today() -> date:
    return datetime.now(UTC).date()


# --------------------------------------------------------------------------- Tavily


async def test_tavily_sends_every_bound_and_drops_an_excluded_domain() -> None:
    hits = [
        {"title": "Docs", "url": "https://docs.python.org/3/asyncio.html"},
        {"title": "Bug", "url": "https://bugs.python.org/issue42"},
        {"title": "Dated", "url": "https://python.org/news", "published_date": "2019-01-02"},
    ]
    bounds = SourceBounds(
        include_domains=["https://www.python.org/"],
        exclude_domains=["bugs.python.org"],
        published_after=date(2024, 1, 1),
        published_before=date(2024, 6, 30),
    )
    with fake_tavily({"asyncio": hits}, api_key=TAVILY_KEY) as server:
        provider = TavilySearch("tavily", TAVILY_KEY, server.base_url, 5.0)
        try:
            results = await provider.search("asyncio", 5, "news", bounds=bounds)
            await provider.search("asyncio", 5)
        finally:
            await provider.aclose()
    bounded, plain = (request.json for request in server.requests_to("/search", "POST"))
    assert bounded["include_domains"] == ["python.org"]
    assert bounded["exclude_domains"] == ["bugs.python.org"]
    assert bounded["start_date"] == "2024-01-01"
    assert bounded["end_date"] == "2024-06-30"
    assert bounded["topic"] == "news"
    assert not {"include_domains", "exclude_domains", "start_date", "end_date"} & set(plain)
    # The excluded domain the fake let through is dropped; the dates are Tavily's to apply.
    assert [r.url for r in results] == [
        "https://docs.python.org/3/asyncio.html",
        "https://python.org/news",
    ]


# --------------------------------------------------------------------------- Google


def _google_items(query: str) -> list[dict[str, Any]]:
    links = [
        "https://docs.python.org/3/library/asyncio.html",
        "https://bugs.python.org/issue1",
        "https://elsewhere.example/asyncio",
        "https://www.python.org/about/",
    ]
    return [{"title": f"{query} {n}", "link": link} for n, link in enumerate(links)]


async def _google_search(bounds: SourceBounds) -> tuple[RecordedRequest, list[str]]:
    with fake_google(_google_items, api_key="g-key", cse_id="cx") as server:
        provider = GoogleSearch("google", "g-key", "cx", server.base_url, 5.0)
        try:
            results = await provider.search("asyncio", 10, bounds=bounds)
        finally:
            await provider.aclose()
    (request,) = server.requests_to("/customsearch/v1", "GET")
    return request, [str(r.url) for r in results]


def _param(request: RecordedRequest, name: str) -> str | None:
    values = request.query.get(name)
    return values[0] if values else None


async def test_google_restricts_to_one_site_excludes_in_the_query_and_restricts_dates() -> None:
    bounds = SourceBounds(
        include_domains=["python.org"],
        exclude_domains=["bugs.python.org"],
        published_after=date(2024, 1, 1),
    )
    request, urls = await _google_search(bounds)
    assert _param(request, "siteSearch") == "python.org"
    assert _param(request, "siteSearchFilter") == "i"
    assert _param(request, "q") == "asyncio -site:bugs.python.org"
    assert _param(request, "sort") == "date:r:20240101:99991231"
    assert urls == [
        "https://docs.python.org/3/library/asyncio.html",
        "https://www.python.org/about/",
    ]


async def test_google_puts_several_sites_in_the_query() -> None:
    bounds = SourceBounds(
        include_domains=["docs.python.org", "elsewhere.example"],
        published_before=date(2023, 12, 31),
    )
    request, urls = await _google_search(bounds)
    assert _param(request, "q") == "asyncio (site:docs.python.org OR site:elsewhere.example)"
    assert _param(request, "siteSearch") is None
    assert _param(request, "sort") == "date:r:19000101:20231231"
    assert urls == [
        "https://docs.python.org/3/library/asyncio.html",
        "https://elsewhere.example/asyncio",
    ]


async def test_google_excludes_a_single_site_with_site_search() -> None:
    request, urls = await _google_search(SourceBounds(exclude_domains=["python.org"]))
    assert _param(request, "siteSearch") == "python.org"
    assert _param(request, "siteSearchFilter") == "e"
    assert _param(request, "q") == "asyncio"
    assert _param(request, "sort") is None
    assert urls == ["https://elsewhere.example/asyncio"]


# --------------------------------------------------------------------------- Semantic Scholar


def _papers() -> list[dict[str, Any]]:
    return [
        paper(1, "q", doi="10.1234/example.1"),  # https://doi.org/...
        paper(2, "q", arxiv="2401.00002"),  # https://arxiv.org/abs/...
        paper(3, "q"),  # https://www.semanticscholar.org/paper/...
    ]


@pytest.mark.parametrize(
    ("after", "before", "sent"),
    [
        (date(2020, 1, 1), date(2023, 12, 31), "2020-01-01:2023-12-31"),
        (date(2020, 1, 1), None, "2020-01-01:"),
        (None, date(2023, 12, 31), ":2023-12-31"),
    ],
)
async def test_semantic_scholar_sends_the_dates_and_filters_domains_itself(
    after: date | None, before: date | None, sent: str
) -> None:
    bounds = SourceBounds(
        exclude_domains=["arxiv.org"], published_after=after, published_before=before
    )
    with fake_semantic_scholar({"q": _papers()}) as server:
        provider = SemanticScholarSearch("semantic_scholar", None, server.base_url, 5.0)
        try:
            results = await provider.search("q", 5, bounds=bounds)
            await provider.search("q", 5)
        finally:
            await provider.aclose()
    bounded, plain = server.requests_to("/graph/v1/paper/search", "GET")
    assert bounded.query["publicationDateOrYear"] == [sent]
    assert "publicationDateOrYear" not in plain.query
    # The arXiv paper is dropped here (no domain filter in the API); the years (2016 to
    # 2018) are the API's to check, so the papers it returned are kept.
    assert [r.url for r in results] == [
        "https://doi.org/10.1234/example.1",
        "https://www.semanticscholar.org/paper/" + f"{3:040x}",
    ]
    assert [r.publication.year for r in results if r.publication] == [2016, 2018]


async def test_semantic_scholar_keeps_only_the_included_domains() -> None:
    with fake_semantic_scholar({"q": _papers()}) as server:
        provider = SemanticScholarSearch("semantic_scholar", None, server.base_url, 5.0)
        try:
            results = await provider.search(
                "q", 5, bounds=SourceBounds(include_domains=["doi.org"])
            )
        finally:
            await provider.aclose()
    (request,) = server.requests_to("/graph/v1/paper/search", "GET")
    assert "publicationDateOrYear" not in request.query
    assert [r.url for r in results] == ["https://doi.org/10.1234/example.1"]


# --------------------------------------------------------------------------- keyless (ddgs)


def _web_hits(query: str) -> list[Hit]:
    return [
        Hit(f"{query} {n}", url, f"About {query}.")
        for n, url in enumerate(
            [
                "https://ok.example/a",
                "https://spam.example/b",
                "https://news.spam.example/c",
                "https://other.example/d",
            ]
        )
    ]


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEngines]:
    with fake_engines(_web_hits) as server:
        point_ddgs_at(server, monkeypatch)
        yield server


def _keyless() -> KeylessSearch:
    return KeylessSearch("ddgs", 10, backends=["duckduckgo"], news_backends=["bing"])


def _form(request: RecordedRequest) -> str:
    return request.body.decode()


async def test_keyless_sends_site_operators_and_a_window_and_drops_excluded_sites(
    engines: FakeEngines,
) -> None:
    bounds = SourceBounds(exclude_domains=["spam.example"], published_after=_today() - timedelta(3))
    results = await _keyless().search("tidal power", 5, bounds=bounds)
    assert engines.queries() == ["tidal power -site:spam.example"]
    (request,) = engines.requests_to(DDG_PATH)
    assert "df=w" in _form(request)  # the smallest window holding the last three days
    # The fake ignores the operator; the excluded site and its subdomain are dropped here.
    # The web hits carry no date, so the window is all that bounds them.
    assert [r.url for r in results] == ["https://ok.example/a", "https://other.example/d"]


async def test_keyless_includes_several_sites_and_asks_no_window_for_old_starts(
    engines: FakeEngines,
) -> None:
    bounds = SourceBounds(
        include_domains=["ok.example", "other.example"], published_after=date(2001, 1, 1)
    )
    results = await _keyless().search("tidal power", 5, bounds=bounds)
    assert engines.queries() == ["tidal power (site:ok.example OR site:other.example)"]
    (request,) = engines.requests_to(DDG_PATH)
    assert "df=" not in _form(request)
    assert [r.url for r in results] == ["https://ok.example/a", "https://other.example/d"]


def _dated_news(request: RecordedRequest) -> FakeResponse:
    """Bing News cards published 2 and 40 days ago."""
    recent = bing_news_page([Hit("Recent", "https://news.example/recent", "r")], "2 days ago")
    old = bing_news_page([Hit("Old", "https://news.example/old", "o")], "40 days ago")
    return FakeResponse(body=recent + old, headers={"content-type": "text/html"})


async def test_keyless_news_dates_are_checked_against_both_ends(engines: FakeEngines) -> None:
    engines.route("GET", BING_NEWS_PATH, _dated_news)
    today = _today()
    adapter = _keyless()

    after = await adapter.search("grid", 5, "news", bounds=SourceBounds(published_after=today))
    within_window = SourceBounds(published_after=today - timedelta(days=10))
    month = await adapter.search("grid", 5, "news", bounds=within_window)
    before = SourceBounds(published_before=today - timedelta(days=20))
    older = await adapter.search("grid", 5, "news", bounds=before)

    day, month_request, none = engines.requests_to(BING_NEWS_PATH)
    assert day.query["qft"] == ['interval="4"']  # ddgs's "d"
    assert month_request.query["qft"] == ['interval="9"']  # ddgs's "m"
    assert "qft" not in none.query  # "before" has no window: checked on the dates only
    # The window reaches further back than the bound: the dates known are checked here.
    assert after == []
    assert [r.url for r in month] == ["https://news.example/recent"]
    assert [r.url for r in older] == ["https://news.example/old"]
    (old,) = older
    assert old.publication is not None
    assert old.publication.published == today - timedelta(days=40)
    assert isinstance(old.publication, Publication)
