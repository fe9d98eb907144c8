"""The resilience policy of a provider: timeout, hedging, retries, rate limit, breaker.

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
The keyless web search, which scrapes public engines, defaults to 30 requests per minute, 2 in
flight and no hedging (``resilience.SCRAPER_DEFAULTS``).

The rate limiter and the backoff live in ``pacing``, the circuit breaker in ``breaker``;
``resilience`` puts one policy per provider in front of the adapters.
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

from foundry_mcp.config import ProviderSettings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.breaker import BREAKER_KINDS, CircuitBreaker
from foundry_mcp.providers.http.errors import RETRYABLE_KINDS, timeout_error
from foundry_mcp.providers.pacing import (
    BACKOFF_BASE_SECONDS,
    BACKOFF_CAP_SECONDS,
    Clock,
    RateLimiter,
    Sleep,
    backoff_delay,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
Role = Literal["llm", "search"]

DEFAULT_REQUESTS_PER_MINUTE: dict[str, float] = {"llm": 120.0, "search": 60.0}
DEFAULT_MAX_IN_FLIGHT = 8
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
