"""Provider calls behind their resilience policy: the adapter wrappers and the process's policies.

``ResilienceRegistry`` holds one ``ProviderPolicy`` per provider name for the whole process
(see ``policy`` for what a call through it does); ``ResilientLLM`` and ``ResilientSearch`` put
that policy in front of an adapter. The policy's parts are re-exported here, where callers have
always found them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import anyio

from foundry_mcp.config import Settings
from foundry_mcp.config.provider_settings import CLI_LLM_KINDS, CLI_MAX_IN_FLIGHT
from foundry_mcp.providers.breaker import CircuitBreaker
from foundry_mcp.providers.llm.base import LLMProvider, LLMRequest, LLMResponse
from foundry_mcp.providers.pacing import Clock, RateLimiter, Sleep, backoff_delay
from foundry_mcp.providers.policy import (
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_REQUESTS_PER_MINUTE,
    PolicySettings,
    ProviderPolicy,
    RetryObserver,
    Role,
    is_local_url,
    retry_observer,
)
from foundry_mcp.providers.search.base import (
    SearchProvider,
    SearchResult,
    SourceType,
    search_as_asked,
)
from foundry_mcp.providers.search.bounds import SourceBounds

__all__ = [
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_REQUESTS_PER_MINUTE",
    "CircuitBreaker",
    "Clock",
    "PolicySettings",
    "ProviderPolicy",
    "RateLimiter",
    "ResilienceRegistry",
    "ResilientLLM",
    "ResilientSearch",
    "RetryObserver",
    "Role",
    "Sleep",
    "backoff_delay",
    "is_local_url",
    "resilient_llm",
    "resilient_search",
    "retry_observer",
]

# Defaults of providers that scrape public pages (the keyless web search), for the keys their
# table does not set: a hedge or a burst would only earn the address a rate limit.
SCRAPER_DEFAULTS: dict[str, dict[str, Any]] = {
    "ddgs": {"hedge_requests": False, "requests_per_minute": 30.0, "max_in_flight": 2},
}
# Defaults of the providers that run an assistant's program (claude-cli...): every call is a
# whole program on the user's one subscription, so few run at once (llm/programs/runner.py).
PROGRAM_DEFAULTS: dict[str, dict[str, Any]] = {
    kind: {"max_in_flight": CLI_MAX_IN_FLIGHT} for kind in CLI_LLM_KINDS
}
KIND_DEFAULTS = {**SCRAPER_DEFAULTS, **PROGRAM_DEFAULTS}


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

    async def search(
        self,
        query: str,
        max_results: int,
        source_type: SourceType | None = None,
        *,
        bounds: SourceBounds | None = None,
    ) -> list[SearchResult]:
        return await self.policy.call(
            lambda: search_as_asked(self.inner, query, max_results, source_type, bounds)
        )

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
            provider = self._settings.provider(name)
            defaults = KIND_DEFAULTS.get(self._settings.provider_kind(name) or "", {})
            server = self._settings.server
            if role == "llm" and server.team:  # one process serves a whole team
                defaults = {"max_in_flight": server.llm_max_in_flight, **defaults}
            unset = {k: v for k, v in defaults.items() if k not in provider.model_fields_set}
            self._policies[name] = ProviderPolicy(
                name,
                PolicySettings.for_provider(provider.model_copy(update=unset), role),
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
