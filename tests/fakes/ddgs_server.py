"""A fake of the public search engines that ``ddgs`` scrapes: DuckDuckGo's HTML search and
Bing News, answering pages shaped like the real ones (the parts ddgs's XPath parsers read).

``ddgs`` keeps each engine's address in its engine class (``search_url``): ``point_ddgs_at``
points the two engines used here at the fake for one test. Nothing else of the library is
replaced: the adapter's requests go through ddgs's payload builders, its ``primp`` client and
its parsers.

``rate_limit_next(n)`` makes the next ``n`` searches answer as DuckDuckGo does when an address
asks too often: HTTP 202 and a challenge page instead of results.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import pytest

from .http import FakeHTTPServer, FakeResponse, RecordedRequest
from .providers import slugify

DDG_PATH = "/html/"
BING_NEWS_PATH = "/news/infinitescrollajax"
AD_URL = "https://duckduckgo.com/y.js?ad_domain=example.com&ad_provider=bing"
# What DuckDuckGo's HTML endpoint answers (with HTTP 202) to an address it is throttling.
CHALLENGE_PAGE = (
    "<!DOCTYPE html><html><head><title>DuckDuckGo</title></head><body>"
    "<div class='anomaly-modal__title'>Unfortunately, bots use DuckDuckGo too.</div>"
    "<div class='anomaly-modal__description'>Please complete the following challenge to "
    "confirm this search was made by a human.</div></body></html>"
)


@dataclass(frozen=True)
class Hit:
    """One result of the fake engines."""

    title: str
    url: str
    snippet: str


Corpus = Callable[[str], list[Hit]]


def default_hits(base_url: str, count: int = 6) -> Corpus:
    """Hits for any query, each on a page below ``base_url`` (``/<slug>/<n>``)."""

    def hits(query: str) -> list[Hit]:
        slug = slugify(query)
        return [
            Hit(
                title=f"{query.strip().capitalize()} - page {n}",
                url=f"{base_url}/{slug}/{n}",
                snippet=f"Page {n} on <b>{html.escape(query)}</b>: what it says in brief.",
            )
            for n in range(1, count + 1)
        ]

    return hits


def ddg_results_page(query: str, hits: list[Hit], *, with_ad: bool = True) -> str:
    """A results page shaped like ``html.duckduckgo.com/html/`` (an ad first, as there)."""
    blocks: list[str] = []
    if with_ad:
        blocks.append(_ddg_block("Sponsored: buy it now", AD_URL, "An advertisement.", ad=True))
    blocks += [_ddg_block(hit.title, hit.url, hit.snippet) for hit in hits]
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(query)} at DuckDuckGo</title></head><body>"
        "<div id='links' class='results'>" + "".join(blocks) + "</div></body></html>"
    )


def _ddg_block(title: str, url: str, snippet: str, *, ad: bool = False) -> str:
    href = html.escape(url, quote=True)
    kind = "result--ad" if ad else "web-result"
    return (
        f"<div class='result results_links results_links_deep {kind}'>"
        "<div class='links_main links_deep result__body'>"
        f"<h2 class='result__title'><a rel='nofollow' class='result__a' href='{href}'>"
        f"{html.escape(title)}</a></h2>"
        "<div class='result__extras'><div class='result__extras__url'>"
        f"<a class='result__url' href='{href}'>{html.escape(url)}</a></div></div>"
        f"<a class='result__snippet' href='{href}'>{snippet}</a>"
        "<div class='clear'></div></div></div>"
    )


def bing_news_page(hits: list[Hit], age: str = "2 days ago") -> str:
    """A fragment shaped like Bing News' infinite-scroll answer."""
    cards = [
        f"<div class='news-card newsitem cardcommon' url='{html.escape(hit.url, quote=True)}' "
        f"data-title='{html.escape(hit.title, quote=True)}' data-author='Example Times'>"
        f"<div class='caption'><div class='snippet'>{hit.snippet}</div></div>"
        f"<div class='source'><span aria-label='{age}'>2d</span></div></div>"
        for hit in hits
    ]
    return "<div class='news-list'>" + "".join(cards) + "</div>"


class FakeEngines(FakeHTTPServer):
    """DuckDuckGo HTML search (``POST /html/``) and Bing News (``GET /news/...``)."""

    def __init__(self, corpus: Corpus | None = None) -> None:
        super().__init__()
        self.corpus = corpus
        self._throttled = 0
        self.route("POST", DDG_PATH, self._ddg)
        self.route("GET", BING_NEWS_PATH, self._bing_news)

    def rate_limit_next(self, times: int = 1) -> None:
        """Answer the next ``times`` searches with DuckDuckGo's challenge (HTTP 202)."""
        with self._lock:
            self._throttled += times

    def queries(self, path: str = DDG_PATH) -> list[str]:
        """The queries searched at ``path``, in order."""
        return [_query(request) for request in self.requests_to(path)]

    def _hits(self, query: str) -> list[Hit]:
        corpus = self.corpus or default_hits("https://web.example.net")
        return corpus(query)

    def _take_throttle(self) -> bool:
        with self._lock:
            if self._throttled <= 0:
                return False
            self._throttled -= 1
            return True

    def _ddg(self, request: RecordedRequest) -> FakeResponse:
        if self._take_throttle():
            return _html(CHALLENGE_PAGE, 202)
        query = _query(request)
        return _html(ddg_results_page(query, self._hits(query)))

    def _bing_news(self, request: RecordedRequest) -> FakeResponse:
        if self._take_throttle():
            return _html("", 429)
        return _html(bing_news_page(self._hits(_query(request))))


def fake_engines(corpus: Corpus | None = None) -> FakeEngines:
    """A started ``FakeEngines``."""
    server = FakeEngines(corpus)
    server.start()
    return server


def point_ddgs_at(server: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Send ddgs's DuckDuckGo (text) and Bing (news) engines to ``server`` for one test."""
    from ddgs.engines import ENGINES

    monkeypatch.setattr(ENGINES["text"]["duckduckgo"], "search_url", server.base_url + DDG_PATH)
    monkeypatch.setattr(ENGINES["news"]["bing"], "search_url", server.base_url + BING_NEWS_PATH)
    # A proxy set in the environment must not stand between primp and the fake.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def _query(request: RecordedRequest) -> str:
    """The ``q`` of a request, from its form body (POST) or its query string (GET)."""
    fields: dict[str, list[str]] = dict(request.query)
    if request.method == "POST" and request.body:
        fields.update(parse_qs(request.body.decode("utf-8", "replace")))
    values: Any = fields.get("q") or [""]
    return str(values[0])


def _html(markup: str, status: int = 200) -> FakeResponse:
    return FakeResponse(status, body=markup, headers={"content-type": "text/html; charset=utf-8"})
