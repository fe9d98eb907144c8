"""Web and news search without an API key ("web (no key)"), through the ``ddgs`` library.

``ddgs`` scrapes public search engines (DuckDuckGo's HTML page, Brave, Mojeek, Bing News, ...)
with a browser-like HTTP client (``primp``); it keeps each engine's address, request and page
parser up to date. Its ``DDGS`` front door answers a refused request (HTTP 202, 403 or 429) as
"no results", so this adapter drives the engines itself, one backend after the other, and
reads each answer's status: a rate limit becomes ``ProviderError(kind="rate_limit")`` for the
resilience policy, which backs off, retries and then falls through to the next provider.

A hit carries its title, its URL and the engine's snippet, never the page text: the gatherer
has the page fetcher read it. A news hit also carries the day it was published.

Source bounds: the domain rules become ``site:`` / ``-site:`` operators in the query text. The
engines know no date range, only a window back from today (ddgs's ``timelimit``: a day, a
week, a month, a year): a ``published_after`` within a year asks for the smallest window that
holds it. A window is coarser than the bound, so the dates are checked again on the hits that
carry one (news); "before" is only checked on them. The domain rules are checked again too.

``ddgs`` is synchronous: a search runs in a worker thread, bounded by the provider's timeout.
It is imported when the adapter is built (in a worker thread, see ``registry``), never when
this module is. ``primp`` honours ``HTTPS_PROXY`` / ``ALL_PROXY`` / ``NO_PROXY``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import anyio

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import malformed_error, timeout_error
from foundry_mcp.providers.search.base import SearchResult, SourceType, published_on
from foundry_mcp.providers.search.bounds import SourceBounds, apply_bounds, site_terms

if TYPE_CHECKING:
    from ddgs.base import BaseSearchEngine

log = logging.getLogger(__name__)

Safesearch = Literal["on", "moderate", "off"]
Timelimit = Literal["d", "w", "m", "y"]

# ddgs's windows back from today, each with the days it surely covers whole (a month taken as
# its shortest, a window ending now as starting on the day after its first).
_WINDOWS: tuple[tuple[Timelimit, int], ...] = (("d", 0), ("w", 6), ("m", 27), ("y", 364))

# The engines asked, in order, until enough hits are found (ddgs's backend names).
DEFAULT_BACKENDS: dict[SourceType, tuple[str, ...]] = {
    "web": ("duckduckgo", "brave", "mojeek"),
    "news": ("duckduckgo", "bing", "yahoo"),
}
_CATEGORIES: dict[SourceType, str] = {"web": "text", "news": "news"}  # ddgs's names
DEFAULT_REGION = "us-en"
# How public search engines say "too many requests from this address": DuckDuckGo answers 202
# with a challenge page, others 403 or 429.
RATE_LIMIT_STATUSES = frozenset({202, 403, 429})
MAX_TIMEOUT_SECONDS = 120.0  # as for every search provider
_RATE_LIMIT_REMEDIATION = (
    "Keyless web search scrapes public search engines, which limit how often one address may "
    "ask. Wait a few minutes, lower [providers.{name}] requests_per_minute, or configure a "
    "search provider with a key (TAVILY_API_KEY, or GOOGLE_API_KEY and GOOGLE_CSE_ID); then "
    "resume the research."
)


class _EngineFailure(Exception):
    """One backend gave no usable answer; ``error`` is what it says about the provider."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(error.message)
        self.error = error


class KeylessSearch:
    """Search the web (or news) through ddgs's engines; no key, one engine after the other."""

    source_types: tuple[SourceType, ...] = ("web", "news")
    # At most: the domains, as query operators, when the bounds name some (see ``_native``).
    native_bounds: frozenset[str] = frozenset({"include_domains", "exclude_domains"})

    def __init__(
        self,
        name: str,
        timeout: float,
        *,
        region: str | None = None,
        safesearch: Safesearch | None = None,
        backends: Sequence[str] | None = None,
        news_backends: Sequence[str] | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> None:
        """``on_sent`` is called (in a worker thread) each time an engine answered a search:
        the question has left this machine."""
        from ddgs.engines import ENGINES  # ~0.1 s: imports every engine module and primp

        self.name = name
        self._on_sent = on_sent
        self._timeout = min(timeout, MAX_TIMEOUT_SECONDS)
        self._region = (region or DEFAULT_REGION).strip().lower()
        self._safesearch: Safesearch = safesearch or "moderate"
        chosen = {"web": backends, "news": news_backends}
        self._backends: dict[SourceType, list[str]] = {}
        self._classes: dict[str, type[BaseSearchEngine[Any]]] = {}
        for kind, category in _CATEGORIES.items():
            available = ENGINES.get(category, {})
            wanted = [b.strip().lower() for b in chosen[kind] or DEFAULT_BACKENDS[kind]]
            unknown = [b for b in wanted if b not in available]
            if unknown:
                log.warning(
                    "%s: no %s backend named %s in ddgs (available: %s); left out",
                    name,
                    kind,
                    ", ".join(unknown),
                    ", ".join(sorted(available)),
                )
            self._backends[kind] = [b for b in wanted if b in available]
            for backend in self._backends[kind]:
                self._classes[f"{kind}:{backend}"] = available[backend]
        # Idle engine instances (each holds a primp client with its cookies and connections),
        # taken by one search at a time: some engines keep per-query state on the instance.
        self._idle: dict[str, list[BaseSearchEngine[Any]]] = {key: [] for key in self._classes}
        self._idle_lock = threading.Lock()
        for key in self._classes:  # one of each now, while we are in a worker thread
            self._idle[key].append(self._new_engine(key))

    async def search(
        self,
        query: str,
        max_results: int,
        source_type: SourceType | None = None,
        *,
        bounds: SourceBounds | None = None,
    ) -> list[SearchResult]:
        kind: SourceType = "news" if source_type == "news" else "web"
        text = " ".join(query.split())
        if not text:
            return []
        asked = _Asked(
            query=bounded_query(text, bounds),
            timelimit=timelimit_for(bounds.published_after if bounds else None),
            bounds=bounds,
            native=self._native(bounds),
        )
        if not self._backends[kind]:
            raise ProviderError(
                f"{self.name} has no usable {kind} search backend.",
                provider=self.name,
                kind="bad_request",
                remediation=(
                    f"Name backends ddgs knows in [providers.{self.name}] "
                    f"{'news_backends' if kind == 'news' else 'backends'} (the server log lists "
                    "them), or remove the key to use the defaults."
                ),
            )
        stop = threading.Event()  # tells an abandoned worker thread not to ask another engine
        try:
            with anyio.fail_after(self._timeout):
                return await anyio.to_thread.run_sync(
                    self._search_sync,
                    kind,
                    asked,
                    max(1, max_results),
                    stop,
                    abandon_on_cancel=True,
                )
        except TimeoutError:
            raise timeout_error(self.name, self._timeout) from None
        finally:
            stop.set()

    def _native(self, bounds: SourceBounds | None) -> frozenset[str]:
        """The bounds this search sends to the engines: the domain rules it names."""
        return self.native_bounds & bounds.given if bounds is not None else frozenset()

    def _search_sync(
        self, kind: SourceType, asked: _Asked, max_results: int, stop: threading.Event
    ) -> list[SearchResult]:
        """Ask the backends in order until ``max_results`` distinct hits within the bounds
        are found.

        An engine that answered, even with nothing, makes the search a success; when none did,
        the failure is raised (a rate limit first, when one engine said so).
        """
        results: list[SearchResult] = []
        seen: set[str] = set()
        failures: list[ProviderError] = []
        answered = False
        for backend in self._backends[kind]:
            if stop.is_set() or len(results) >= max_results:
                break
            try:
                found = self._ask(f"{kind}:{backend}", kind, asked.query, asked.timelimit)
            except _EngineFailure as failure:
                log.info("%s: backend %s failed: %s", self.name, backend, failure.error.message)
                failures.append(failure.error)
                continue
            answered = True
            for result in apply_bounds(found, asked.bounds, asked.native):
                if result.url not in seen:
                    seen.add(str(result.url))
                    results.append(result)
        if answered or not failures:
            return results[:max_results]
        limited = [f for f in failures if f.kind == "rate_limit"]
        raise (limited or failures)[-1]

    def _ask(
        self, key: str, kind: SourceType, query: str, timelimit: Timelimit | None
    ) -> list[SearchResult]:
        """One request to one engine, its answer read by the engine's own parser."""
        from ddgs.exceptions import DDGSException, TimeoutException

        with self._engine(key) as engine:
            try:
                payload = engine.build_payload(
                    query=query,
                    region=self._region,
                    safesearch=self._safesearch,
                    timelimit=timelimit,
                    page=1,
                )
                body = "params" if engine.search_method == "GET" else "data"
                response = engine.http_client.request(
                    engine.search_method, engine.search_url, **{body: payload}
                )
            except TimeoutException:
                raise _EngineFailure(timeout_error(self.name, self._timeout)) from None
            except DDGSException as exc:  # refused, reset, DNS; or a token page it could not read
                raise _EngineFailure(self._unreachable(key, exc)) from None
            if self._on_sent is not None:
                self._on_sent()
            status = response.status_code
            if status != 200:
                raise _EngineFailure(self._status_error(key, status))
            try:
                hits = engine.post_extract_results(engine.extract_results(response.text))
            except Exception as exc:  # the page is not what this version of ddgs expects
                raise _EngineFailure(malformed_error(self.name, type(exc).__name__)) from None
        return [r for r in (_result(self.name, kind, hit) for hit in hits) if r is not None]

    def _unreachable(self, key: str, exc: Exception) -> ProviderError:
        cause = exc.__cause__ or exc
        return ProviderError(
            f"{self.name}: cannot reach the {key.partition(':')[2]} search engine "
            f"({type(cause).__name__}).",
            provider=self.name,
            retryable=True,
            kind="transient",
            remediation=(
                "Check your network, and HTTPS_PROXY / ALL_PROXY if you reach the web through a "
                "proxy; then resume the research."
            ),
        )

    def _status_error(self, key: str, status: int) -> ProviderError:
        backend = key.partition(":")[2]
        if status in RATE_LIMIT_STATUSES:
            return ProviderError(
                f"{self.name}: the {backend} search engine is rate-limiting requests from this "
                f"machine (HTTP {status}).",
                provider=self.name,
                status_code=status,
                retryable=True,
                kind="rate_limit",
                remediation=_RATE_LIMIT_REMEDIATION.format(name=self.name),
            )
        if status >= 500 or status in (408, 409):
            return ProviderError(
                f"{self.name}: the {backend} search engine answered HTTP {status}.",
                provider=self.name,
                status_code=status,
                retryable=True,
                kind="transient",
                remediation="Usually a passing fault of the search engine; resume the research.",
            )
        return ProviderError(
            f"{self.name}: the {backend} search engine refused the request (HTTP {status}).",
            provider=self.name,
            status_code=status,
            kind="bad_request",
            remediation=(
                "The engine may have changed its page: upgrade ddgs (pip install -U ddgs), or "
                f"name other backends in [providers.{self.name}]."
            ),
        )

    @contextmanager
    def _engine(self, key: str) -> Iterator[BaseSearchEngine[Any]]:
        """An engine instance no other search is using, put back afterwards."""
        with self._idle_lock:
            engine = self._idle[key].pop() if self._idle[key] else None
        if engine is None:
            engine = self._new_engine(key)
        try:
            yield engine
        finally:
            with self._idle_lock:
                self._idle[key].append(engine)

    def _new_engine(self, key: str) -> BaseSearchEngine[Any]:
        # ddgs types the timeout as whole seconds; primp takes any number.
        return self._classes[key](timeout=self._timeout)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        with self._idle_lock:
            self._idle = {key: [] for key in self._classes}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Asked:
    """What one search asks every engine, and the bounds its hits are kept within."""

    query: str
    timelimit: Timelimit | None
    bounds: SourceBounds | None
    native: frozenset[str]


def bounded_query(text: str, bounds: SourceBounds | None) -> str:
    """``text`` with the domain rules of ``bounds`` as ``site:`` / ``-site:`` operators."""
    if bounds is None:
        return text
    return " ".join([text, *site_terms(bounds.include_domains, bounds.exclude_domains)])


def timelimit_for(after: date | None, today: date | None = None) -> Timelimit | None:
    """The smallest ddgs window back from ``today`` (UTC) that holds every day from ``after``
    on; None when there is no ``after`` or it is more than a year back."""
    if after is None:
        return None
    today = today or datetime.now(UTC).date()
    for window, days in _WINDOWS:
        if after >= today - timedelta(days=days):
            return window
    return None


def _result(provider: str, kind: SourceType, hit: Any) -> SearchResult | None:
    """A ddgs ``TextResult`` (title, href, body) or ``NewsResult`` (title, url, body, date)."""
    url = str(getattr(hit, "href", "") or getattr(hit, "url", "") or "").strip()
    if not url.startswith(("http://", "https://")):
        return None
    title = " ".join(str(getattr(hit, "title", "") or "").split())
    return SearchResult(
        title=title or url,
        url=url,
        snippet=" ".join(str(getattr(hit, "body", "") or "").split()),
        content=None,
        provider=provider,
        publication=published_on(getattr(hit, "date", None)) if kind == "news" else None,
    )
