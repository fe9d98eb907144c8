"""One resilience policy for every provider call: timeout, hedging, retries, rate limit, breaker.

Each provider (by its name in ``[providers.<name>]``) gets one ``ProviderPolicy`` per process,
shared by every research the process runs. A call through the policy:

1. is rejected at once with ``ProviderError(kind="circuit_open")`` while the provider's circuit
   is open (after ``circuit_breaker_failures`` consecutive rate-limit or transient failures;
   after ``circuit_breaker_reset_seconds`` one probe call is let through, and its outcome
   closes or re-opens the circuit);
2. waits for one of ``max_in_flight`` slots, then for its turn under ``requests_per_minute``
   (requests are spaced evenly, so no 1-second window holds more than rpm/60 of them);
3. runs with the provider's ``timeout`` (120 s for LLMs, 30 s for search providers unless
   configured). The adapter passes it to its SDK, whose own timeout error is mapped; the policy
   stops the attempt a little later (a quarter more, at most 1 s) in case the SDK does not;
4. for search providers (cheap and idempotent; ``hedge_requests``, on by default) is *hedged*:
   when the attempt has not answered after the hedge delay, a second one is started, and a
   third after another delay. The first success wins and the others are cancelled; a failure
   waits for the attempts still running. The delay is 4 times the median latency of the
   provider's recent successful requests, at least 1 s (3 s until 3 have been seen) and at most
   half the timeout. Hedges take slots, rate-limit turns and breaker accounting like any
   attempt; a cancelled one counts as abandoned, not failed. LLM calls are never hedged;
5. on a ``rate_limit`` or ``transient`` failure, is retried up to ``max_retries`` times after a
   jittered exponential backoff (0.5 s doubling, at most 20 s) or, when the provider said
   ``Retry-After``, after that delay. Other kinds (auth, bad_request, context_overflow,
   not_found) are never retried. A ``Retry-After`` longer than 60 s is not waited out: the
   error is raised so a fallback provider can take over.

Defaults when a provider's table does not set them: 120 requests per minute for LLMs, 60 for
search providers, 8 calls in flight. Providers whose ``base_url`` is on this machine or the
local network (Ollama, vLLM, test fakes) get no request-rate limit unless one is configured.
"""

from __future__ import annotations

import contextvars
import ipaddress
import logging
import random
import statistics
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import anyio

from foundry_mcp.config import ProviderSettings, Settings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http_errors import RETRYABLE_KINDS, timeout_error
from foundry_mcp.providers.llm.base import LLMProvider, LLMRequest, LLMResponse
from foundry_mcp.providers.search.base import SearchProvider, SearchResult

log = logging.getLogger(__name__)

T = TypeVar("T")
Role = Literal["llm", "search"]
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

DEFAULT_REQUESTS_PER_MINUTE: dict[str, float] = {"llm": 120.0, "search": 60.0}
DEFAULT_MAX_IN_FLIGHT = 8
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 20.0
MAX_RETRY_AFTER_SECONDS = 60.0
# The policy's own deadline for an attempt: the timeout plus this share of it (at most the cap),
# so that the adapter's SDK, which knows the request, normally reports the timeout itself.
TIMEOUT_GRACE_SHARE = 0.25
TIMEOUT_GRACE_CAP_SECONDS = 1.0
# Hedged requests (search providers).
MAX_HEDGES = 2  # at most three attempts at once
HEDGE_INITIAL_DELAY_SECONDS = 3.0  # until HEDGE_MIN_SAMPLES successes have been timed
HEDGE_MIN_DELAY_SECONDS = 1.0
HEDGE_LATENCY_FACTOR = 4.0  # times the median of the recent successful latencies
HEDGE_MIN_SAMPLES = 3
LATENCY_SAMPLES = 20

# Kinds that count against a provider's circuit breaker.
BREAKER_KINDS = RETRYABLE_KINDS


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class PolicySettings:
    """The limits of one provider's policy, resolved from its ``[providers.<name>]`` table."""

    timeout: float = 120.0
    max_retries: int = 2
    requests_per_minute: float | None = None
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    breaker_failures: int = 5
    breaker_reset_seconds: float = 30.0
    backoff_base: float = BACKOFF_BASE_SECONDS
    backoff_cap: float = BACKOFF_CAP_SECONDS
    max_retry_after: float = MAX_RETRY_AFTER_SECONDS
    hedge: bool = False
    max_hedges: int = MAX_HEDGES
    hedge_initial_delay: float = HEDGE_INITIAL_DELAY_SECONDS
    hedge_min_delay: float = HEDGE_MIN_DELAY_SECONDS

    @classmethod
    def for_provider(cls, settings: ProviderSettings, role: Role) -> PolicySettings:
        """The policy of a provider: its own settings, else the defaults for its role."""
        rpm = settings.requests_per_minute
        if rpm is None and not is_local_url(settings.base_url):
            rpm = DEFAULT_REQUESTS_PER_MINUTE[role]
        return cls(
            timeout=settings.timeout_for(role),
            max_retries=settings.max_retries,
            requests_per_minute=rpm,
            max_in_flight=settings.max_in_flight or DEFAULT_MAX_IN_FLIGHT,
            breaker_failures=settings.circuit_breaker_failures,
            breaker_reset_seconds=settings.circuit_breaker_reset_seconds,
            backoff_base=BACKOFF_BASE_SECONDS,
            backoff_cap=BACKOFF_CAP_SECONDS,
            hedge=role == "search" and settings.hedge_requests,
        )

    @property
    def deadline(self) -> float:
        """The policy's own limit for one attempt: the timeout plus a grace (see the module)."""
        return self.timeout + min(TIMEOUT_GRACE_CAP_SECONDS, self.timeout * TIMEOUT_GRACE_SHARE)


def is_local_url(url: str | None) -> bool:
    """True for a base_url on this machine or a private network (a self-hosted server)."""
    if not url:
        return False
    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def backoff_delay(
    attempt: int,
    retry_after: float | None,
    *,
    base: float = BACKOFF_BASE_SECONDS,
    cap: float = BACKOFF_CAP_SECONDS,
    rand: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0).

    Without ``retry_after``: "equal jitter" over ``min(cap, base * 2**attempt)``, i.e. between
    half of it and all of it. With ``retry_after``: that delay plus up to 10% (at most 1 s) of
    jitter, so callers told the same delay do not all come back at the same instant.
    """
    if retry_after is not None:
        return retry_after + min(1.0, 0.1 * retry_after) * rand()
    ceiling = min(cap, base * 2.0**attempt)
    return ceiling / 2 + (ceiling / 2) * rand()


# --------------------------------------------------------------------------- rate limiting


class RateLimiter:
    """Spaces requests evenly: at most one every ``60 / requests_per_minute`` seconds.

    A token bucket holding one token: no bursts, so no 1-second window ever holds more than
    rpm/60 grants (the per-second limits providers enforce, not only the per-minute ones).
    Grants are first come, first served.
    """

    def __init__(self, requests_per_minute: float, clock: Clock, sleep: Sleep) -> None:
        self.interval = 60.0 / requests_per_minute
        self._clock = clock
        self._sleep = sleep
        self._next = float("-inf")
        self._lock = anyio.Lock()

    async def acquire(self) -> None:
        """Wait for this caller's turn."""
        async with self._lock:
            wait = self._next - self._clock()
            if wait > 0:
                await self._sleep(wait)
            # From the actual time of the grant: a late wake-up never lets the next one in early.
            self._next = max(self._clock(), self._next) + self.interval


# --------------------------------------------------------------------------- circuit breaker


CircuitState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Stops calling a provider that keeps failing, and probes it again after a pause."""

    def __init__(self, name: str, failures: int, reset_seconds: float, clock: Clock) -> None:
        self.name = name
        self.threshold = failures
        self.reset_seconds = reset_seconds
        self._clock = clock
        self.state: CircuitState = "closed"
        self.consecutive_failures = 0
        self.opened_at = 0.0
        self.last_error: str | None = None
        self._probing = False

    def seconds_until_probe(self) -> float:
        """How long the circuit stays open (0 when a call may go through now)."""
        if self.state != "open":
            return 0.0
        return max(0.0, self.opened_at + self.reset_seconds - self._clock())

    def reject_if_open(self) -> None:
        """Raise ``circuit_open`` when no call may go through now (reserves nothing)."""
        if (self.state == "open" and self.seconds_until_probe() > 0) or (
            self.state == "half_open" and self._probing
        ):
            raise self._open_error()

    def begin(self) -> bool:
        """Admit one call; True when it is the half-open probe. Raises ``circuit_open``."""
        if self.state == "open" and self.seconds_until_probe() <= 0:
            self.state = "half_open"
            self._probing = False
        if self.state == "closed":
            return False
        if self.state == "half_open" and not self._probing:
            self._probing = True
            log.info("circuit of %s is half-open: sending one probe call", self.name)
            return True
        raise self._open_error()

    def succeeded(self, probe: bool) -> None:
        """The provider answered (even with an error that is not its health's fault)."""
        if probe or self.state != "closed":
            log.info("circuit of %s is closed again", self.name)
        self.state = "closed"
        self.consecutive_failures = 0
        self._probing = False

    def failed(self, probe: bool, error: ProviderError) -> None:
        """A rate-limit or transient failure."""
        self.last_error = error.message
        self._probing = False
        if probe or self.state == "half_open":
            self._open()
            return
        self.consecutive_failures += 1
        if self.state == "closed" and self.consecutive_failures >= self.threshold:
            self._open()

    def abandoned(self, probe: bool) -> None:
        """The call was cancelled before it finished: free the probe slot, change nothing."""
        if probe:
            self._probing = False

    def _open(self) -> None:
        self.state = "open"
        self.opened_at = self._clock()
        log.warning(
            "circuit of %s opened after %d consecutive failures (last: %s)",
            self.name,
            self.consecutive_failures,
            self.last_error,
        )

    def _open_error(self) -> ProviderError:
        wait = self.seconds_until_probe()
        last = f" Last error: {self.last_error}" if self.last_error else ""
        return ProviderError(
            f"{self.name} is failing repeatedly, so calls to it are paused for "
            f"{max(wait, 0.1):.0f} s (circuit open).{last}",
            provider=self.name,
            retryable=True,
            kind="circuit_open",
            retry_after=wait,
            remediation=(
                f"Wait for {self.name} to recover (see its status page), or configure a fallback "
                "provider; then resume the research."
            ),
        )

    def snapshot(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "consecutive_failures": self.consecutive_failures,
            "seconds_until_probe": round(self.seconds_until_probe(), 1),
            "last_error": self.last_error,
        }


# --------------------------------------------------------------------------- the policy

RetryObserver = Callable[[str, int, ProviderError, float], None]

# Set by whoever wants to hear about retries of the calls it makes (the research's LLM uses it
# to put retries in the audit trail): (provider, attempt, error, delay).
retry_observer: contextvars.ContextVar[RetryObserver | None] = contextvars.ContextVar(
    "foundry_mcp_retry_observer", default=None
)


class ProviderPolicy:
    """Timeout, hedging, retries, rate limit, concurrency cap and circuit breaker of a provider."""

    def __init__(
        self,
        name: str,
        settings: PolicySettings,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.name = name
        self.settings = settings
        self._clock = clock
        self._sleep = sleep
        self._rand = rand
        self._latencies: deque[float] = deque(maxlen=LATENCY_SAMPLES)
        self.attempts = 0  # requests sent, hedges included
        self.hedges = 0
        self.retries = 0
        self.limiter = (
            RateLimiter(settings.requests_per_minute, clock, sleep)
            if settings.requests_per_minute
            else None
        )
        self.breaker = CircuitBreaker(
            name, settings.breaker_failures, settings.breaker_reset_seconds, clock
        )
        self._slots = anyio.Semaphore(settings.max_in_flight)

    async def call(self, operation: Callable[[], Awaitable[T]]) -> T:
        """Run ``operation`` (one provider request) under the policy; see the module doc."""
        attempt = 0
        while True:
            try:
                if self.settings.hedge:
                    return await self._hedged(operation)
                return await self._attempt(operation)
            except ProviderError as exc:
                retry = exc.kind in RETRYABLE_KINDS and exc.retryable
                if not retry or attempt >= self.settings.max_retries:
                    raise
                if exc.retry_after is not None and exc.retry_after > self.settings.max_retry_after:
                    raise  # a long wait (quota exhausted) is better spent on a fallback
                delay = backoff_delay(
                    attempt,
                    exc.retry_after,
                    base=self.settings.backoff_base,
                    cap=self.settings.backoff_cap,
                    rand=self._rand,
                )
                attempt += 1
                self.retries += 1
                log.info(
                    "%s failed (%s); retry %d of %d in %.2f s",
                    self.name,
                    exc.kind,
                    attempt,
                    self.settings.max_retries,
                    delay,
                )
                observer = retry_observer.get()
                if observer is not None:
                    observer(self.name, attempt, exc, delay)
                await self._sleep(delay)

    def hedge_delay(self) -> float:
        """Seconds an attempt may go unanswered before a hedge is started (see the module)."""
        settings = self.settings
        if len(self._latencies) < HEDGE_MIN_SAMPLES:
            delay = settings.hedge_initial_delay
        else:
            median = statistics.median(self._latencies)
            delay = max(settings.hedge_min_delay, HEDGE_LATENCY_FACTOR * median)
        return min(delay, settings.timeout / 2)

    async def _hedged(self, operation: Callable[[], Awaitable[T]]) -> T:
        """One attempt, with up to ``max_hedges`` more started while it goes unanswered.

        The first success wins and cancels the rest. A failure waits for the attempts still
        running; when every attempt has failed, the last failure is raised.
        """
        answers: list[T] = []
        failures: list[ProviderError] = []
        crashes: list[Exception] = []
        launched = 0

        async with anyio.create_task_group() as group:

            async def attempt(sent: anyio.Event) -> None:
                try:
                    answers.append(await self._attempt(operation, sent))
                except ProviderError as exc:
                    failures.append(exc)
                except Exception as exc:  # a bug, not a provider failure: it ends the call
                    crashes.append(exc)
                finally:
                    sent.set()  # also when it failed before it was sent
                if answers or crashes or len(failures) == launched:
                    group.cancel_scope.cancel()

            def launch() -> anyio.Event:
                nonlocal launched
                launched += 1
                sent = anyio.Event()
                group.start_soon(attempt, sent)
                return sent

            async def hedge() -> None:
                sent = launch()
                for _ in range(self.settings.max_hedges):
                    await sent.wait()
                    await self._sleep(self.hedge_delay())
                    if self.breaker.state != "closed":
                        return  # a half-open circuit admits one probe, never its twin
                    self.hedges += 1
                    log.info("%s is slow to answer; hedging with another request", self.name)
                    sent = launch()

            group.start_soon(hedge)
        if answers:
            return answers[0]
        if crashes:
            raise crashes[0]
        raise failures[-1]

    async def _attempt(
        self, operation: Callable[[], Awaitable[T]], sent: anyio.Event | None = None
    ) -> T:
        """One request under the slots, rate limit and breaker; ``sent`` is set as it goes out."""
        self.breaker.reject_if_open()  # fail fast, before queueing for a slot
        async with self._slots:
            if self.limiter is not None:
                await self.limiter.acquire()
            probe = self.breaker.begin()
            if sent is not None:
                sent.set()
            self.attempts += 1
            started = self._clock()
            try:
                with anyio.fail_after(self.settings.deadline):
                    result = await operation()
            except TimeoutError:
                error = timeout_error(self.name, self.settings.timeout)
                self.breaker.failed(probe, error)
                raise error from None
            except ProviderError as exc:
                if exc.kind in BREAKER_KINDS:
                    self.breaker.failed(probe, exc)
                else:  # the provider answered: its health is not in question
                    self.breaker.succeeded(probe)
                raise
            except BaseException:  # cancelled, or a bug: says nothing about the provider
                self.breaker.abandoned(probe)
                raise
            self.breaker.succeeded(probe)
            self._latencies.append(self._clock() - started)
            return result

    def snapshot(self) -> dict[str, Any]:
        """The policy's limits, counters and the circuit's state, for health reports."""
        return {
            "requests_per_minute": self.settings.requests_per_minute,
            "max_in_flight": self.settings.max_in_flight,
            "max_retries": self.settings.max_retries,
            "timeout": self.settings.timeout,
            "hedge_requests": self.settings.hedge,
            "hedge_delay": round(self.hedge_delay(), 2) if self.settings.hedge else None,
            "attempts": self.attempts,
            "hedges": self.hedges,
            "retries": self.retries,
            "circuit": self.breaker.snapshot(),
        }


# --------------------------------------------------------------------------- wrappers


class ResilientLLM:
    """An LLM adapter whose calls go through its provider's policy."""

    def __init__(self, inner: LLMProvider, policy: ProviderPolicy) -> None:
        self.name = inner.name
        self.inner = inner
        self.policy = policy

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return await self.policy.call(lambda: self.inner.complete(request))

    async def aclose(self) -> None:
        await self.inner.aclose()


class ResilientSearch:
    """A search adapter whose ``search`` goes through its provider's policy.

    Anything else the adapter offers is passed through unchanged.
    """

    def __init__(self, inner: SearchProvider, policy: ProviderPolicy) -> None:
        self.name = inner.name
        self.inner = inner
        self.policy = policy

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        return await self.policy.call(lambda: self.inner.search(query, max_results))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)


class ResilienceRegistry:
    """The policies of one process, one per provider name, created on first use."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._sleep = sleep
        self._rand = rand
        self._policies: dict[str, ProviderPolicy] = {}

    def policy(self, name: str, role: Role) -> ProviderPolicy:
        """The policy of provider ``name`` (``role`` picks the defaults on first use)."""
        if name not in self._policies:
            self._policies[name] = ProviderPolicy(
                name,
                PolicySettings.for_provider(self._settings.provider(name), role),
                clock=self._clock,
                sleep=self._sleep,
                rand=self._rand,
            )
        return self._policies[name]

    def wrap_llm(self, provider: LLMProvider) -> LLMProvider:
        """``provider`` with the policy in front (unchanged if it already has it)."""
        if isinstance(provider, ResilientLLM):
            return provider
        return ResilientLLM(provider, self.policy(provider.name, "llm"))

    def wrap_search(self, provider: SearchProvider) -> SearchProvider:
        """``provider`` with the policy in front (unchanged if it already has it).

        The user's own documents are searched on this machine: no rate limit, retry or breaker.
        """
        if isinstance(provider, ResilientSearch):
            return provider
        if self._settings.provider_kind(provider.name) == "local":
            return provider
        return ResilientSearch(provider, self.policy(provider.name, "search"))

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every policy in use, by provider name."""
        return {name: policy.snapshot() for name, policy in self._policies.items()}


def resilient_search(provider: SearchProvider, policies: ResilienceRegistry) -> SearchProvider:
    """Put the per-process policy of ``provider`` in front of its ``search`` (idempotent)."""
    return policies.wrap_search(provider)


def resilient_llm(provider: LLMProvider, policies: ResilienceRegistry) -> LLMProvider:
    """Put the per-process policy of ``provider`` in front of its ``complete`` (idempotent)."""
    return policies.wrap_llm(provider)
