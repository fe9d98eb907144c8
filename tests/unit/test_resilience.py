"""The resilience policy (backoff, retry rules, rate limit, breaker, hedging) and error mapping.

Time is injected: a fake clock whose ``sleep`` advances it, so the tests are exact and instant.
The hedging tests use short real delays: they are about tasks racing each other.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from foundry_mcp.config import ProviderSettings, load_settings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import (
    is_context_overflow,
    parse_retry_after,
    scrub_secrets,
    status_error,
)
from foundry_mcp.providers.resilience import (
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_REQUESTS_PER_MINUTE,
    CircuitBreaker,
    PolicySettings,
    ProviderPolicy,
    RateLimiter,
    ResilienceRegistry,
    ResilientLLM,
    ResilientSearch,
    backoff_delay,
    is_local_url,
    resilient_search,
)
from foundry_mcp.providers.search.base import SearchResult

pytestmark = pytest.mark.anyio


class FakeClock:
    """Monotonic time that only moves when someone sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(0.0, seconds)
        await anyio.lowlevel.checkpoint()  # let others run, as a real sleep would


def _error(
    kind: str, retry_after: float | None = None, retryable: bool | None = None
) -> ProviderError:
    if retryable is None:
        retryable = kind in ("rate_limit", "transient")
    return ProviderError(
        f"{kind} failure", provider="p", kind=kind, retry_after=retry_after, retryable=retryable
    )


class Script:
    """An operation that fails with the given errors, then succeeds."""

    def __init__(self, *errors: ProviderError) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def _policy(clock: FakeClock, **settings: Any) -> ProviderPolicy:
    values: dict[str, Any] = {"max_retries": 3, "backoff_base": 0.5, "backoff_cap": 20.0}
    values.update(settings)
    return ProviderPolicy(
        "p", PolicySettings(**values), clock=clock, sleep=clock.sleep, rand=lambda: 0.5
    )


# --------------------------------------------------------------------------- retries


async def test_backoff_honours_retry_after() -> None:
    clock = FakeClock()
    script = Script(_error("rate_limit", retry_after=7.0))
    assert await _policy(clock).call(script) == "ok"
    assert script.calls == 2
    (slept,) = clock.sleeps
    assert 7.0 <= slept <= 7.7  # the delay asked for, plus at most 10% jitter


async def test_transient_failures_back_off_exponentially_with_jitter() -> None:
    clock = FakeClock()
    script = Script(*[_error("transient")] * 3)
    assert await _policy(clock).call(script) == "ok"
    # equal jitter with rand() = 0.5: three quarters of 0.5, 1 and 2 s
    assert clock.sleeps == pytest.approx([0.375, 0.75, 1.5])


def test_backoff_is_capped_and_stays_within_its_jitter_band() -> None:
    for attempt in range(12):
        ceiling = min(20.0, 0.5 * 2**attempt)
        low = backoff_delay(attempt, None, rand=lambda: 0.0)
        high = backoff_delay(attempt, None, rand=lambda: 0.999999)
        assert low == pytest.approx(ceiling / 2)
        assert ceiling / 2 <= high <= ceiling
    assert backoff_delay(30, None, rand=lambda: 1.0) == pytest.approx(20.0)


@pytest.mark.parametrize("kind", ["auth", "bad_request", "context_overflow", "not_found", "budget"])
async def test_no_retry_for_failures_a_retry_cannot_fix(kind: str) -> None:
    clock = FakeClock()
    script = Script(_error(kind))
    with pytest.raises(ProviderError) as caught:
        await _policy(clock).call(script)
    assert caught.value.kind == kind
    assert script.calls == 1 and clock.sleeps == []


async def test_a_rate_limit_marked_not_retryable_is_not_retried() -> None:
    clock = FakeClock()  # e.g. a daily quota: waiting minutes will not help
    script = Script(_error("rate_limit", retryable=False))
    with pytest.raises(ProviderError):
        await _policy(clock).call(script)
    assert script.calls == 1 and clock.sleeps == []


async def test_retries_stop_after_max_retries() -> None:
    clock = FakeClock()
    script = Script(*[_error("transient")] * 10)
    with pytest.raises(ProviderError):
        await _policy(clock, max_retries=2, breaker_failures=100).call(script)
    assert script.calls == 3


async def test_a_very_long_retry_after_is_not_waited_out() -> None:
    clock = FakeClock()
    script = Script(_error("rate_limit", retry_after=3600.0))
    with pytest.raises(ProviderError) as caught:
        await _policy(clock).call(script)
    assert caught.value.kind == "rate_limit"
    assert script.calls == 1 and clock.sleeps == []


async def test_the_per_call_timeout_is_a_transient_failure() -> None:
    policy = ProviderPolicy("slow", PolicySettings(timeout=0.05, max_retries=0))

    async def hang() -> str:
        await anyio.sleep(10)
        return "never"

    with anyio.fail_after(2), pytest.raises(ProviderError) as caught:
        await policy.call(hang)
    assert caught.value.kind == "transient"
    assert "0.05 s" in caught.value.message


async def test_retries_are_reported_to_the_observer() -> None:
    from foundry_mcp.providers.resilience import retry_observer

    seen: list[tuple[str, int, str, float]] = []
    clock = FakeClock()
    token = retry_observer.set(lambda p, n, e, d: seen.append((p, n, e.kind, d)))
    try:
        await _policy(clock).call(Script(_error("rate_limit", retry_after=2.0)))
    finally:
        retry_observer.reset(token)
    assert [(p, n, k) for p, n, k, _ in seen] == [("p", 1, "rate_limit")]


# --------------------------------------------------------------------------- rate limit


def _max_in_window(times: list[float], window: float = 1.0) -> int:
    """The most events in any half-open window [t, t + window) (floating-point noise aside)."""
    times = sorted(times)
    best = 0
    for i, start in enumerate(times):
        best = max(best, sum(1 for t in times[i:] if t < start + window - 1e-9))
    return best


@pytest.mark.parametrize("rate", [1, 5, 20])
async def test_rate_limiter_never_exceeds_r_per_second(rate: int) -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate * 60, clock, clock.sleep)
    grants: list[float] = []

    async def one() -> None:
        await limiter.acquire()
        grants.append(clock())

    async with anyio.create_task_group() as group:
        for _ in range(rate * 4 + 3):
            group.start_soon(one)
    assert _max_in_window(grants) <= rate
    # and it is not slower than it must be: evenly spaced at 1/R
    assert max(grants) - min(grants) == pytest.approx((len(grants) - 1) / rate)


async def test_rate_limiter_counts_from_the_actual_grant_time() -> None:
    clock = FakeClock()
    limiter = RateLimiter(60, clock, clock.sleep)
    await limiter.acquire()
    clock.now += 5.0  # idle for a while: no burst is saved up
    await limiter.acquire()
    await limiter.acquire()
    assert clock.sleeps == [pytest.approx(1.0)]


async def test_policy_rate_limit_applies_to_every_attempt() -> None:
    clock = FakeClock()
    policy = _policy(clock, requests_per_minute=30)  # one call every 2 s
    starts: list[float] = []

    async def op() -> str:
        starts.append(clock())
        return "ok"

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(policy.call, op)
    assert sorted(starts) == pytest.approx([1000.0, 1002.0, 1004.0, 1006.0, 1008.0])


async def test_max_in_flight_caps_concurrency() -> None:
    policy = ProviderPolicy("p", PolicySettings(max_in_flight=3))
    running = peak = 0

    async def op() -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.01)
        running -= 1
        return "ok"

    async with anyio.create_task_group() as group:
        for _ in range(12):
            group.start_soon(policy.call, op)
    assert peak == 3


# --------------------------------------------------------------------------- circuit breaker


async def _call(policy: ProviderPolicy, op: Callable[[], Awaitable[str]]) -> str:
    try:
        return await policy.call(op)
    except ProviderError as exc:
        return exc.kind


async def test_circuit_opens_after_consecutive_failures_and_rejects_at_once() -> None:
    clock = FakeClock()
    policy = _policy(clock, max_retries=0, breaker_failures=3, breaker_reset_seconds=30)
    failing = Script(*[_error("transient")] * 10)
    assert [await _call(policy, failing) for _ in range(3)] == ["transient"] * 3
    assert policy.breaker.state == "open"
    calls_before = failing.calls
    assert await _call(policy, failing) == "circuit_open"
    assert failing.calls == calls_before  # rejected without calling the provider
    with pytest.raises(ProviderError) as caught:
        await policy.call(failing)
    assert caught.value.retry_after == pytest.approx(30.0)
    assert "failure" in caught.value.message  # the last real error is named


async def test_circuit_half_opens_with_a_single_probe_then_closes() -> None:
    clock = FakeClock()
    policy = _policy(clock, max_retries=0, breaker_failures=2, breaker_reset_seconds=10)
    for _ in range(2):
        await _call(policy, Script(_error("rate_limit")))
    assert policy.breaker.state == "open"
    clock.now += 10.0

    probe_started = anyio.Event()
    release = anyio.Event()
    results: list[str] = []

    async def slow_probe() -> str:
        probe_started.set()
        await release.wait()
        return "ok"

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: _collect(results, _call(policy, slow_probe)))
        await probe_started.wait()
        assert policy.breaker.state == "half_open"
        # While the probe is out, everyone else is turned away.
        assert await _call(policy, Script()) == "circuit_open"
        release.set()
    assert results == ["ok"]
    assert policy.breaker.state == "closed"
    assert await _call(policy, Script()) == "ok"


async def test_a_failed_probe_opens_the_circuit_again() -> None:
    clock = FakeClock()
    policy = _policy(clock, max_retries=0, breaker_failures=1, breaker_reset_seconds=5)
    await _call(policy, Script(_error("transient")))
    clock.now += 5.0
    assert await _call(policy, Script(_error("transient"))) == "transient"
    assert policy.breaker.state == "open"
    assert await _call(policy, Script()) == "circuit_open"
    clock.now += 5.0
    assert await _call(policy, Script()) == "ok"
    assert policy.breaker.state == "closed"


async def test_answers_that_are_not_outages_reset_the_failure_count() -> None:
    clock = FakeClock()
    policy = _policy(clock, max_retries=0, breaker_failures=3)
    for kind in ["transient", "transient", "bad_request", "transient", "transient"]:
        await _call(policy, Script(_error(kind)))
    assert policy.breaker.state == "closed"
    assert policy.breaker.consecutive_failures == 2


async def test_a_cancelled_probe_frees_the_probe_slot() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("p", 1, 5, clock)
    breaker.failed(False, _error("transient"))
    clock.now += 5
    assert breaker.begin() is True
    breaker.abandoned(True)
    assert breaker.begin() is True  # the next caller may probe


# --------------------------------------------------------------------------- settings and wiring


def test_policy_defaults_by_role_and_for_local_servers() -> None:
    remote = ProviderSettings()
    llm = PolicySettings.for_provider(remote, "llm")
    search = PolicySettings.for_provider(remote, "search")
    assert llm.requests_per_minute == DEFAULT_REQUESTS_PER_MINUTE["llm"] == 120
    assert search.requests_per_minute == DEFAULT_REQUESTS_PER_MINUTE["search"] == 60
    assert llm.max_in_flight == DEFAULT_MAX_IN_FLIGHT == 8
    assert (llm.max_retries, llm.breaker_failures, llm.breaker_reset_seconds) == (2, 5, 30.0)
    local = ProviderSettings(base_url="http://localhost:11434/v1")
    assert PolicySettings.for_provider(local, "llm").requests_per_minute is None
    configured = ProviderSettings(
        base_url="http://127.0.0.1:8000",
        requests_per_minute=30,
        max_in_flight=2,
        max_retries=5,
        timeout=9,
        circuit_breaker_failures=7,
        circuit_breaker_reset_seconds=11,
    )
    own = PolicySettings.for_provider(configured, "search")
    assert (own.requests_per_minute, own.max_in_flight, own.max_retries, own.timeout) == (
        30,
        2,
        5,
        9,
    )
    assert (own.breaker_failures, own.breaker_reset_seconds) == (7, 11)


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:9000", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://[::1]:8080", True),
        ("https://api.openai.com/v1", False),
        ("https://8.8.8.8", False),
        (None, False),
    ],
)
def test_is_local_url(url: str | None, local: bool) -> None:
    assert is_local_url(url) is local


class _Search:
    name = "tavily"

    def __init__(self) -> None:
        self.calls = 0
        self.extra = "passed through"

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        self.calls += 1
        if self.calls == 1:
            raise _error("transient")
        return [SearchResult(title=query, url="https://example.org")]

    async def aclose(self) -> None:
        pass


async def test_resilient_search_retries_and_is_idempotent(tmp_path: Path) -> None:
    settings = load_settings(env={}, cwd=tmp_path, home=tmp_path)
    policies = ResilienceRegistry(settings, sleep=lambda _: anyio.lowlevel.checkpoint())
    raw = _Search()
    wrapped = resilient_search(raw, policies)
    assert isinstance(wrapped, ResilientSearch)
    assert resilient_search(wrapped, policies) is wrapped
    assert policies.wrap_search(raw).policy is policies.policy("tavily", "search")  # one per name
    (result,) = await wrapped.search("q", 1)
    assert result.title == "q" and raw.calls == 2
    assert wrapped.extra == "passed through"  # other attributes of the adapter
    assert policies.snapshot()["tavily"]["circuit"]["state"] == "closed"


async def test_resilient_llm_wraps_once(tmp_path: Path) -> None:
    from foundry_mcp.providers.registry import ProviderRegistry

    settings = load_settings(env={"OPENAI_API_KEY": "sk-x"}, cwd=tmp_path, home=tmp_path)
    registry = ProviderRegistry(settings)
    llm = registry.llm("openai")
    assert isinstance(llm, ResilientLLM)
    assert registry.resilience.wrap_llm(llm) is llm
    assert registry.llm("openai").policy is llm.policy
    assert llm.policy.settings.requests_per_minute == 120
    await registry.aclose()


async def _collect(into: list[str], awaitable: Awaitable[str]) -> None:
    into.append(await awaitable)


# --------------------------------------------------------------------------- error mapping


@pytest.mark.parametrize(
    ("status", "detail", "kind", "retryable"),
    [
        (401, "bad key", "auth", False),
        (403, "forbidden", "auth", False),
        (402, "no credit", "auth", False),
        (429, "slow down", "rate_limit", True),
        (500, "oops", "transient", True),
        (503, "overloaded", "transient", True),
        (529, "overloaded", "transient", True),
        (408, "timeout", "transient", True),
        (400, "temperature must be <= 2", "bad_request", False),
        (422, "unprocessable", "bad_request", False),
        (404, "model not found", "not_found", False),
        (413, "request too large", "context_overflow", False),
        (400, "This model's maximum context length is 8192 tokens", "context_overflow", False),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", "context_overflow", False),
        (400, "input token count exceeds the maximum number of tokens", "context_overflow", False),
    ],
)
def test_status_error_kinds(status: int, detail: str, kind: str, retryable: bool) -> None:
    error = status_error("acme", status, detail)
    assert error.kind == kind
    assert error.retryable is retryable
    assert error.status_code == status
    assert error.remediation and error.details["kind"] == kind


def test_overflow_is_recognised_by_code_too() -> None:
    assert status_error("o", 400, "too big", code="context_length_exceeded").kind == (
        "context_overflow"
    )
    assert not is_context_overflow("max_tokens is too large: 50000")


def test_rate_limit_carries_retry_after() -> None:
    error = status_error("acme", 429, "x", retry_after=12.0)
    assert error.retry_after == 12.0 and "12 s" in error.message


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # in the past
        ({"retry-after": "soon"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str] | None, seconds: float | None) -> None:
    assert parse_retry_after(headers) == seconds


def test_secrets_are_scrubbed_from_provider_messages() -> None:
    message = "Incorrect API key provided: sk-proj-abcdef123456. Bearer abc.def.ghijkl"
    scrubbed = scrub_secrets(message, "my-own-key-42")
    assert "sk-proj-abcdef123456" not in scrubbed and "abc.def.ghijkl" not in scrubbed
    error = status_error(
        "acme", 400, "key my-own-key-42 tvly-0123456789 bad", secret="my-own-key-42"
    )
    assert "my-own-key-42" not in error.message and "tvly-0123456789" not in error.message


# --------------------------------------------------------------------------- hedged requests


class Attempts:
    """An operation whose n-th call sleeps ``delays[n]`` s (real time), then fails or answers.

    Records which calls started, finished and were cancelled, and the peak concurrency.
    """

    def __init__(self, *plan: tuple[float, ProviderError | str]) -> None:
        self.plan = list(plan)
        self.started = 0
        self.cancelled: list[int] = []
        self.running = self.peak = 0

    async def __call__(self) -> str:
        number = self.started
        self.started += 1
        delay, outcome = self.plan[min(number, len(self.plan) - 1)]
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await anyio.sleep(delay)
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(number)
            raise
        finally:
            self.running -= 1
        if isinstance(outcome, ProviderError):
            raise outcome
        return outcome


def _hedged(**settings: Any) -> ProviderPolicy:
    values: dict[str, Any] = {
        "timeout": 5.0,
        "max_retries": 0,
        "hedge": True,
        "hedge_initial_delay": 0.1,
        "backoff_base": 0.01,
        "backoff_cap": 0.02,
    }
    values.update(settings)
    return ProviderPolicy("search", PolicySettings(**values))


HANG = 30.0


async def test_a_slow_attempt_is_hedged_and_the_hedge_wins() -> None:
    policy = _hedged()
    op = Attempts((HANG, "first"), (0.01, "hedge"))
    began = time.perf_counter()
    with anyio.fail_after(3):
        assert await policy.call(op) == "hedge"
    assert 0.1 <= time.perf_counter() - began < 1.0  # after the hedge delay, not the timeout
    assert op.started == 2 and policy.hedges == 1 and policy.attempts == 2
    # The loser was cancelled, nothing is left running, and it is not held against the provider.
    assert op.cancelled == [0] and op.running == 0
    assert policy.breaker.consecutive_failures == 0 and policy.breaker.state == "closed"


async def test_no_hedge_when_the_first_attempt_answers_in_time() -> None:
    policy = _hedged(hedge_initial_delay=0.2)
    op = Attempts((0.02, "first"), (0.0, "hedge"))
    assert await policy.call(op) == "first"
    await anyio.sleep(0.3)  # past the hedge delay: no hedge was left scheduled
    assert op.started == 1 and policy.hedges == 0 and op.cancelled == []


async def test_a_failed_attempt_waits_for_the_one_still_running() -> None:
    policy = _hedged(max_hedges=1)  # no retries: only the hedge can save the call
    op = Attempts((0.2, _error("transient")), (0.3, "hedge"))
    with anyio.fail_after(3):
        assert await policy.call(op) == "hedge"
    assert op.started == 2 and op.cancelled == [] and policy.retries == 0


async def test_at_most_two_hedges_then_the_last_failure_is_raised() -> None:
    policy = _hedged(timeout=0.6, max_retries=0)  # hedge delay: min(0.1, timeout / 2)
    op = Attempts((HANG, "never"))
    with anyio.fail_after(5), pytest.raises(ProviderError) as caught:
        await policy.call(op)
    assert caught.value.kind == "transient" and "0.6 s" in caught.value.message
    assert op.started == 3 and policy.hedges == 2 and op.peak == 3
    assert op.running == 0  # each was stopped by its own timeout


async def test_hedges_take_slots_like_any_attempt() -> None:
    policy = _hedged(timeout=0.4, max_in_flight=1)
    op = Attempts((HANG, "first"), (0.01, "hedge"))
    with anyio.fail_after(5):
        assert await policy.call(op) == "hedge"
    # The hedge waited for the slot until the first attempt timed out: never two at once.
    assert op.peak == 1 and op.started == 2


async def test_hedging_off_waits_for_the_slow_attempt() -> None:
    policy = _hedged(hedge=False)
    op = Attempts((0.3, "first"), (0.0, "hedge"))
    assert await policy.call(op) == "first"
    assert op.started == 1 and policy.hedges == 0


async def test_a_cancelled_call_cancels_every_attempt() -> None:
    policy = _hedged(hedge_initial_delay=0.05)
    op = Attempts((HANG, "never"))
    with anyio.move_on_after(0.3):
        await policy.call(op)
    assert op.started == 3 and sorted(op.cancelled) == [0, 1, 2] and op.running == 0
    assert policy.breaker.consecutive_failures == 0


async def test_hedge_delay_follows_the_observed_latency() -> None:
    clock = FakeClock()
    policy = ProviderPolicy(
        "search", PolicySettings(timeout=30.0, hedge=True), clock=clock, sleep=clock.sleep
    )

    def answering_in(seconds: float) -> Callable[[], Awaitable[str]]:
        async def op() -> str:
            clock.now += seconds
            return "ok"

        return op

    assert policy.hedge_delay() == 3.0  # until a few latencies are known
    for seconds in (0.5, 0.6, 2.0):
        await policy.call(answering_in(seconds))
    assert policy.hedge_delay() == pytest.approx(4 * 0.6)  # 4 x the median
    for _ in range(4):
        await policy.call(answering_in(0.05))
    assert policy.hedge_delay() == 1.0  # never below 1 s
    short = ProviderPolicy("s", PolicySettings(timeout=4.0, hedge=True))
    assert short.hedge_delay() == 2.0  # never more than half the timeout


def test_search_providers_get_a_shorter_timeout_and_hedging() -> None:
    default = ProviderSettings()
    llm = PolicySettings.for_provider(default, "llm")
    search = PolicySettings.for_provider(default, "search")
    assert (llm.timeout, llm.hedge) == (120.0, False)
    assert (search.timeout, search.hedge) == (30.0, True)
    configured = ProviderSettings(timeout=45, hedge_requests=False)
    assert PolicySettings.for_provider(configured, "search").timeout == 45
    assert PolicySettings.for_provider(configured, "search").hedge is False
    assert PolicySettings.for_provider(ProviderSettings(timeout=7), "llm").timeout == 7
    # The policy's own deadline leaves the SDK room to report its timeout first.
    assert search.deadline == 31.0 and PolicySettings(timeout=2.0).deadline == 2.5
