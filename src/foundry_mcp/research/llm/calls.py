"""Provider calls made on behalf of one research: routing, fallback, usage, cost and timing.

Every LLM call of a research goes through ``ResearchLLM.ask(purpose, ...)``. The purpose picks
an ordered list of (provider, model) routes:

==========================  ====================================================================
purpose                     provider list
==========================  ====================================================================
``planning``                ``deep_research_planning_provider(s)``
``analysis``                ``deep_research_analysis_provider(s)``
``synthesis``               ``deep_research_synthesis_provider(s)``
``verification``            the synthesis list (claims are checked while the report is written)
``refinement``              ``deep_research_refinement_provider(s)``
``reflection:<phase>``      the list of ``<phase>`` (none for gathering)
``summarization``           ``summarization_provider(s)``, else the current phase's list
anything else               the list of the phase the research is in
==========================  ====================================================================

A list that is not configured is the research's own provider and model. When a route fails
with a rate limit or a transient error (after the resilience policy's retries), an open
circuit, an unknown model or a rejected key, the next route is tried and the switch is recorded
(a ``provider_fallback`` event, and a supervisor decision the first time per phase and pair).
When every route failed, the last error is raised.

**Never paid twice.** With a journal, every completed call is saved under a content key (the
phase, purpose, provider, model and a hash of the messages and parameters) together with its
usage record: queued for the store before its answer is used, so no save of a state that used
the answer reaches the store before it does. A call whose key is already in the journal (a resumed
research asking again what it asked before a crash) returns the saved answer without calling
the provider and without counting its tokens or cost again (unless the crash came before they
were counted); the event ``llm_replayed`` says so.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from foundry_mcp.context.archive import ContentArchive
from foundry_mcp.context.tokens import estimate_tokens
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.llm.base import LLMProvider, LLMRequest, LLMResponse
from foundry_mcp.providers.resilience import RetryObserver, retry_observer
from foundry_mcp.research.llm.routing import (
    AnswerJournal,
    CallLog,
    LLMRoute,
    request_key,
    route_group,
    work_phase,
)
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    LLMCallRecord,
    ResearchState,
)
from foundry_mcp.research.pricing import PriceTable

__all__ = ["AnswerJournal", "CallLog", "LLMRoute", "ResearchLLM", "route_group", "work_phase"]

log = logging.getLogger(__name__)

# Set inside ResearchLLM.finishing(): the cost ceiling was checked when the work began.
_finishing: ContextVar[bool] = ContextVar("foundry_finishing", default=False)

# Failures after which the next provider of the list is tried.
FALLBACK_KINDS = frozenset({"rate_limit", "transient", "circuit_open", "not_found", "auth"})
BUDGET_PROVIDER = "cost ceiling"


class ResearchLLM:
    """The LLMs of one research: routes prompts, falls back, books tokens and cost.

    ``provider`` and ``model`` are the research's own; ``routes`` the configured lists by
    group (see the module doc); ``prices`` estimates each call's cost; with ``max_cost_usd``,
    no call is made once the research has spent that much (``ProviderError`` kind ``budget``).
    """

    def __init__(
        self,
        provider: LLMProvider,
        model: str,
        state: ResearchState,
        calls: CallLog,
        *,
        routes: Mapping[str, Sequence[LLMRoute]] | None = None,
        prices: PriceTable | None = None,
        max_cost_usd: float | None = None,
        journal: AnswerJournal | None = None,
        archive: ContentArchive | None = None,
    ) -> None:
        self.provider = provider
        self.archive = archive  # where dropped originals go (the store's, for every server)
        self.model = model
        self._state = state  # whose phase routes the calls and who hears about them
        self._ledger = state  # whose usage the calls are booked in and the ceiling checked on
        self._calls = calls
        self._default = [LLMRoute(provider, model)]
        self._routes = {group: list(items) for group, items in (routes or {}).items() if items}
        self._prices = prices
        self._max_cost = max_cost_usd
        self._journal = journal
        self._reported: set[tuple[str, str, str, str]] = set()
        state.llm_usage.max_cost_usd = max_cost_usd
        state.llm_usage.cost_ceiling_reached = False  # a resumed run checks against the new one

    @property
    def calls(self) -> CallLog:
        """When this research's provider calls ran, and the LLM calls in flight now."""
        return self._calls

    def for_branch(self, branch: ResearchState) -> ResearchLLM:
        """The same LLMs for one researcher of this research (a sub-question's).

        Calls are routed by the branch's phase and reported as its events and decisions, and
        booked in this research's usage: one token and cost budget for the whole research.
        """
        twin = copy.copy(self)
        twin._state = branch
        twin._reported = set()
        return twin

    @contextmanager
    def finishing(self) -> Iterator[None]:
        """Calls made inside (and in tasks started inside) finish one piece of work.

        The cost ceiling is checked once, here, not before each call: a report written in
        parts is finished, as one written in a single call would be.
        """
        self._check_budget()
        token = _finishing.set(True)
        try:
            yield
        finally:
            _finishing.reset(token)

    def routes_for(self, purpose: str) -> list[LLMRoute]:
        """The (provider, model) routes a call for ``purpose`` tries, in order."""
        phase = self._state.phase.value
        group = route_group(purpose, phase)
        for candidate in (group, phase):
            if candidate is not None and candidate in self._routes:
                return self._routes[candidate]
        return self._default

    def model_for(self, purpose: str) -> tuple[str, str]:
        """The (provider, model) that answers ``purpose`` first (e.g. to size its prompt)."""
        route = self.routes_for(purpose)[0]
        return route.provider.name, route.model

    async def ask(
        self, purpose: str, system: str, user: str, *, json_mode: bool, max_tokens: int = 4096
    ) -> str:
        """Send one prompt and return the model's text, trying the purpose's routes in order."""
        routes = self.routes_for(purpose)
        phase = work_phase(purpose, self._state.phase.value)
        tried: list[str] = []
        for index, route in enumerate(routes):
            request = LLMRequest(
                system=system,
                user=user,
                model=route.model,
                max_tokens=max_tokens,
                json_mode=json_mode,
                purpose=purpose,
            )
            key = request_key(phase, purpose, route.provider.name, request)
            saved = await self._journal.get(key) if self._journal is not None else None
            if saved is not None:
                return self._replay(key, *saved)
            if not _finishing.get():
                self._check_budget()
            started = time.perf_counter()
            ticket = self._calls.depart(purpose, started)
            token = retry_observer.set(self._retry_listener(purpose, route))
            traced: dict[str, Any] = {}
            try:
                response = await route.provider.complete(request)
            except ProviderError as exc:
                self._state.emit(
                    "llm_error",
                    {
                        "purpose": purpose,
                        "provider": route.provider.name,
                        "model": route.model,
                        "kind": exc.kind,
                        "error": exc.message,
                    },
                )
                tried.append(f"{route.label} ({exc.kind})")
                if index + 1 < len(routes) and exc.kind in FALLBACK_KINDS:
                    self._fall_back(purpose, phase, route, routes[index + 1], exc)
                    continue
                if len(tried) > 1:
                    raise _all_failed(purpose, tried, exc) from None
                raise
            finally:
                retry_observer.reset(token)
                traced = self._calls.land(ticket)
                self._calls.add("llm", started, time.perf_counter())
            tokens = token_counts(response, request)
            await self._book(purpose, phase, route, response, tokens, key, traced)
            return response.text
        raise AssertionError("a route list is never empty")

    # ------------------------------------------------------------------ internals

    def _check_budget(self) -> None:
        if self._max_cost is None:
            return
        usage = self._ledger.llm_usage
        spent = usage.spent_usd
        if spent < self._max_cost:
            return
        usage.cost_ceiling_reached = True
        self._ledger.warn(
            f"Cost ceiling reached: about ${spent:.4f} spent of max_cost_usd ${self._max_cost:g}; "
            "no further LLM calls were made."
        )
        raise ProviderError(
            f"The research reached its cost ceiling: about ${spent:.4f} spent of "
            f"max_cost_usd ${self._max_cost:g} (estimated from list prices).",
            provider=BUDGET_PROVIDER,
            kind="budget",
            remediation=(
                "Raise [research] max_cost_usd in foundry-mcp.toml, restart the server, then "
                "resume the research."
            ),
        )

    def _replay(self, key: str, answer: str, record: LLMCallRecord) -> str:
        """A journaled answer, its usage counted only if the crash came before it was."""
        usage = self._ledger.llm_usage
        counted = usage.books(key)
        if not counted:
            usage.add(record.model_copy(update={"key": key}))
        self._state.emit(
            "llm_replayed",
            {
                "purpose": record.purpose,
                "phase": record.phase,
                "provider": record.provider,
                "model": record.model,
                "key": key,
                "usage_counted_now": not counted,
            },
        )
        return answer

    async def _book(
        self,
        purpose: str,
        phase: str,
        route: LLMRoute,
        response: LLMResponse,
        tokens: tuple[int, int],
        key: str,
        traced: dict[str, Any],
    ) -> None:
        input_tokens, output_tokens = tokens
        cost = None
        if self._prices is not None:
            cost = self._prices.cost(
                route.provider.name,
                (response.model, route.model),
                input_tokens,
                output_tokens,
            )
        record = LLMCallRecord(
            provider=route.provider.name,
            model=route.model,
            phase=phase,
            purpose=purpose,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            latency_s=round(response.latency_s, 3),
            cost_usd=cost,
            key=key,
        )
        if self._journal is not None:
            await self._journal.put(key, response.text, record)  # kept before the answer is used
        self._ledger.llm_usage.add(record)
        self._state.emit(
            "llm_call",
            {
                "purpose": purpose,
                "phase": phase,
                "provider": response.provider,
                "model": response.model,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "latency_s": round(response.latency_s, 3),
                "cost_usd": None if cost is None else round(cost, 6),
                **traced,
            },
        )
        log.debug(
            "llm call %s/%s for %s: %d in, %d out, %.2fs",
            response.provider,
            response.model,
            purpose,
            input_tokens,
            output_tokens,
            response.latency_s,
        )

    def _fall_back(
        self, purpose: str, phase: str, failed: LLMRoute, following: LLMRoute, exc: ProviderError
    ) -> None:
        state = self._state
        state.emit(
            "provider_fallback",
            {
                "purpose": purpose,
                "phase": phase,
                "from": failed.label,
                "to": following.label,
                "kind": exc.kind,
                "error": exc.message,
            },
        )
        if exc.kind == "auth":
            state.warn(f"{exc.message} {exc.remediation} Calls fall back to {following.label}.")
        key = (phase, failed.label, following.label, exc.kind)
        if key in self._reported:
            return
        self._reported.add(key)
        log.warning(
            "%s failed for %s (%s); using %s", failed.label, purpose, exc.kind, following.label
        )
        state.record(
            AgentDecision(
                agent=AgentRole.SUPERVISOR,
                action="provider_fallback",
                rationale=(
                    f"{failed.label} failed for {purpose} ({exc.kind}: {exc.message}); "
                    f"switching to {following.label}."
                ),
                inputs={"purpose": purpose, "phase": phase, "iteration": state.iteration},
                outputs={"from": failed.label, "to": following.label, "kind": exc.kind},
            )
        )

    def _retry_listener(self, purpose: str, route: LLMRoute) -> RetryObserver:
        state = self._state

        def on_retry(provider: str, attempt: int, error: ProviderError, delay: float) -> None:
            state.emit(
                "llm_retry",
                {
                    "purpose": purpose,
                    "provider": provider,
                    "model": route.model,
                    "attempt": attempt,
                    "kind": error.kind,
                    "delay_s": round(delay, 2),
                    "error": error.message,
                },
            )

        return on_retry


def _all_failed(purpose: str, tried: list[str], last: ProviderError) -> ProviderError:
    return ProviderError(
        f"Every LLM provider for {purpose} failed: {', '.join(tried)}. Last error: {last.message}",
        provider=last.provider,
        retryable=last.retryable,
        status_code=last.status_code,
        kind=last.kind,
        retry_after=last.retry_after,
        remediation=last.remediation,
    )


def token_counts(response: LLMResponse, request: LLMRequest) -> tuple[int, int]:
    """A call's input and output tokens: as its provider reported them, else estimated from the
    text (an assistant's program may not report them)."""
    reported_in, reported_out = response.input_tokens, response.output_tokens
    return (
        estimate_tokens(request.system + request.user) if reported_in is None else reported_in,
        estimate_tokens(response.text) if reported_out is None else reported_out,
    )
