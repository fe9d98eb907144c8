"""Every failure of the tavily-python SDK becomes a ProviderError of the right kind.

The real SDK talks to the loopback fake through the ``httpx2`` client the adapter gives it: a
slow answer raises a raw ``httpx2.ReadTimeout`` (the SDK turns only its own httpx's timeouts
into its ``TimeoutError``), error statuses make it raise its own classes
(``InvalidAPIKeyError``, ``UsageLimitExceededError``, ``ForbiddenError``, ``BadRequestError``)
or a raw ``httpx2.HTTPStatusError``, a closed port a raw ``httpx2.ConnectError``. Through the
resilience policy, the transient ones are retried like their HTTP twins.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
import tavily

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.keep_alive import KEEP_ALIVE_SECONDS
from foundry_mcp.providers.resilience import PolicySettings, ProviderPolicy, ResilientSearch
from foundry_mcp.providers.search.tavily import TavilySearch
from tests.fakes import FakeHTTPServer, FakeResponse, fake_tavily
from tests.support import later_pool_clock

pytestmark = pytest.mark.anyio

KEY = "tvly-test-secret-0123456789"


@pytest.fixture
def server() -> Iterator[FakeHTTPServer]:
    with fake_tavily(api_key=KEY) as fake:
        yield fake


def _adapter(base_url: str, timeout: float = 5.0, key: str = KEY) -> TavilySearch:
    return TavilySearch("tavily", key, base_url, timeout)


async def _error(adapter: Any) -> ProviderError:
    try:
        with pytest.raises(ProviderError) as caught:
            await adapter.search("heat pumps", 3)
    finally:
        await adapter.aclose()
    for text in (caught.value.message, caught.value.remediation):
        assert KEY not in text
    return caught.value


def _policy(retries: int = 1) -> ProviderPolicy:
    return ProviderPolicy(
        "tavily",
        PolicySettings(timeout=0.4, max_retries=retries, backoff_base=0.01, backoff_cap=0.02),
    )


async def test_the_sdk_timeout_is_a_transient_timeout(
    server: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    raised: list[Exception] = []
    original = TavilySearch._error

    def spy(self: TavilySearch, exc: Exception) -> ProviderError:
        raised.append(exc)
        return original(self, exc)

    monkeypatch.setattr(TavilySearch, "_error", spy)
    server.latency = 3.0
    began = time.perf_counter()
    error = await _error(_adapter(server.base_url, timeout=0.3))
    assert time.perf_counter() - began < 1.5
    assert [type(exc) for exc in raised] == [httpx2.ReadTimeout]  # raw, from the client we gave
    assert (error.kind, error.retryable) == ("transient", True)
    assert "0.3 s" in error.message


async def test_the_sdk_timeout_is_retried_by_the_policy(server: FakeHTTPServer) -> None:
    answers = iter([3.0, 0.0])
    server.delay = lambda request, response: next(answers, 0.0)
    search = ResilientSearch(_adapter(server.base_url, timeout=0.4), _policy(retries=1))
    try:
        results = await search.search("heat pumps", 3)
    finally:
        await search.aclose()
    assert len(results) == 3
    assert len(server.requests_to("/search")) == 2
    assert search.policy.retries == 1


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (401, "auth", False),  # InvalidAPIKeyError
        (403, "auth", False),  # ForbiddenError
        (400, "bad_request", False),  # BadRequestError
        (429, "rate_limit", True),  # UsageLimitExceededError
        (500, "transient", True),  # raw httpx2.HTTPStatusError
        (503, "transient", True),
    ],
)
async def test_error_statuses_map_to_their_kinds(
    server: FakeHTTPServer, status: int, kind: str, retryable: bool
) -> None:
    server.fail_next(status)
    error = await _error(_adapter(server.base_url))
    assert (error.kind, error.retryable) == (kind, retryable)


async def test_a_used_up_plan_limit_is_reported_as_such(server: FakeHTTPServer) -> None:
    message = "This request exceeds your plan's set usage limit. Please upgrade your plan."
    server.fail_next(432, json={"detail": {"error": message}})
    error = await _error(_adapter(server.base_url))
    assert error.kind == "auth" and "usage limit" in error.message


async def test_a_wrong_key_is_not_retried(server: FakeHTTPServer) -> None:
    search = ResilientSearch(_adapter(server.base_url, key="tvly-wrong-0123456789"), _policy(3))
    error = await _error(search)
    assert error.kind == "auth"
    assert len(server.requests_to("/search")) == 1


async def test_a_503_is_retried_by_the_policy(server: FakeHTTPServer) -> None:
    server.fail_next(503)
    search = ResilientSearch(_adapter(server.base_url), _policy(retries=1))
    try:
        assert await search.search("heat pumps", 2)
    finally:
        await search.aclose()
    assert len(server.requests_to("/search")) == 2


async def test_a_refused_connection_is_transient_without_the_url() -> None:
    with fake_tavily() as gone:
        base = gone.base_url
    error = await _error(_adapter(base))  # nothing listens on that port any more
    assert (error.kind, error.retryable) == ("transient", True)
    assert base not in error.message and "ConnectError" in error.message


@pytest.mark.parametrize(
    "body", ["<html>502 Bad Gateway</html>", "[1, 2, 3]", '{"results": "none"}']
)
async def test_an_unreadable_answer_is_transient(server: FakeHTTPServer, body: str) -> None:
    server.route(
        "POST", "/search", lambda _: FakeResponse(body=body, headers={"content-type": "x"})
    )
    error = await _error(_adapter(server.base_url))
    assert (error.kind, error.retryable) == ("transient", True)
    assert "could not be read" in error.message


async def test_no_key_fails_before_any_request(server: FakeHTTPServer) -> None:
    error = await _error(_adapter(server.base_url, key=""))  # the SDK would go keyless
    assert error.kind == "auth"
    assert server.requests_to("/search") == []


async def test_a_keyless_limit_carries_its_retry_after() -> None:
    adapter = _adapter("http://127.0.0.1:9")
    limit = tavily.errors.TavilyKeylessLimitError("slow down", retry_after_seconds=12)
    error = adapter._error(limit)
    await adapter.aclose()
    assert (error.kind, error.retry_after) == ("rate_limit", 12)


async def test_an_unknown_exception_is_not_disguised() -> None:
    adapter = _adapter("http://127.0.0.1:9")
    with pytest.raises(KeyError):
        adapter._error(KeyError("a bug"))
    await adapter.aclose()


async def test_searches_go_through_the_proxy_the_sdk_would_use(
    server: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client the adapter gives the SDK honours the SDK's own proxy variables: a search
    for an API no one could reach directly arrives at the proxy (the fake), for that host."""
    monkeypatch.setenv("TAVILY_HTTP_PROXY", server.base_url)
    adapter = _adapter("http://api.tavily.invalid")
    try:
        assert len(await adapter.search("heat pumps", 3)) == 3
    finally:
        await adapter.aclose()
    (request,) = server.requests_to("/search")
    assert request.headers.get("host") == "api.tavily.invalid"


async def test_the_next_round_of_searches_finds_its_connection_still_open(
    server: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A research searches in rounds seconds apart: ten seconds after a search, the next one
    goes over the same connection (httpx's default keeps one five); past the keep-alive, over
    a new one. The pool's clock is moved instead of waiting."""
    later = later_pool_clock(monkeypatch)
    adapter = _adapter(server.base_url)
    try:
        await adapter.search("first round", 3)
        later[0] = 10.0
        await adapter.search("next round", 3)
        later[0] = 10.0 + KEEP_ALIVE_SECONDS + 1
        await adapter.search("much later", 3)
    finally:
        await adapter.aclose()
    first, following, last = (request.client_port for request in server.requests_to("/search"))
    assert following == first
    assert last != first
