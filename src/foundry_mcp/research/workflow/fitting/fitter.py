"""Token fitting inside one research run: the calls the agents make.

``Fitting`` is opened by an agent for its phase. It knows the research's budget and token
counter (from ``context/``, which knows models but not agents) and offers:

* :meth:`Fitting.ask`: every LLM call goes through it. Before sending, the prompt is counted
  and, when it exceeds what the call may carry, shrunk (preflight). A provider that still
  rejects it as too long (``ProviderError`` of kind ``context_overflow``) gets it again about
  10% smaller, up to three times, instead of failing the phase.
* :meth:`Fitting.fit_text`: a free text (a requester's context, a report excerpt) cut to a
  share of a phase's budget by passage selection.
* the degradation ladder with the research's summarizer, the archive, and saved token counts,
  for :mod:`foundry_mcp.research.workflow.fitting.sources` (sources and findings).

With ``token_management_enabled = false`` none of this happens: prompts go out as built.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from foundry_mcp.context.archive import ContentArchive
from foundry_mcp.context.budget import TokenBudget
from foundry_mcp.context.errors import ContextExceededError, context_remediation
from foundry_mcp.context.ladder import FOCUS_MAX_TOKENS, Ladder, SummaryModel
from foundry_mcp.context.options import TokenBudgetOptions
from foundry_mcp.context.reading.selection import ELISION, select_passages
from foundry_mcp.context.runtime import opened_summary_cache, summary_cache
from foundry_mcp.context.tokens import (
    CachedCounter,
    TokenCounter,
    content_hash,
    count_messages,
    counter_for_model,
    loaded_counter_for_model,
)
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import is_context_overflow as overflow_message
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    ResearchState,
    Source,
)
from foundry_mcp.research.prompts.summarizer import SUMMARY_PROMPT_VERSION, summarizer_prompts

log = logging.getLogger(__name__)

OVERFLOW_RETRIES = 3
OVERFLOW_SHRINK = 0.9
PREFLIGHT_ROUNDS = 8
MIN_SCALE = 0.01

Rebuild = Callable[[float], tuple[str, str]]
REJECTED_REMEDIATION = (
    "The model's real room is smaller than foundry-mcp was told. Give its window in [research] "
    "model_context_overrides, or raise runtime_overhead (tokens taken from every call) or "
    "token_safety_margin, then resume the research."
)


def is_context_overflow(exc: ProviderError) -> bool:
    """True when a provider rejected a prompt for being longer than the model's window."""
    if exc.kind == "context_overflow":
        return True
    return exc.kind in ("bad_request", "unknown") and overflow_message(exc.message)


class OwnModel:
    """The research's summarization route as a summarizer."""

    def __init__(self, llm: ResearchLLM) -> None:
        self._llm = llm
        self.label = f"{llm.provider.name}:{llm.model}"
        model_for = getattr(llm, "model_for", None)
        if callable(model_for):
            try:
                provider, model = model_for("summarization")
                self.label = f"{provider}:{model}"
            except Exception:
                log.debug("no summarization route; labelled with the research's model")

    async def summarize(self, system: str, user: str, max_tokens: int) -> str:
        return await self._llm.ask(
            "summarization", system, user, json_mode=False, max_tokens=max_tokens
        )


def shrink_middle(text: str, target: int, counter: TokenCounter) -> str:
    """``text`` within ``target`` tokens: its beginning and end, ``[…]`` for the middle."""
    tokens = counter.count(text)
    if tokens <= target:
        return text
    keep = max(0, int(len(text) * target / tokens * 0.97) - 8)
    head, tail = text[: int(keep * 0.7)], text[len(text) - int(keep * 0.3) :] if keep else ""
    return f"{head.rstrip()}\n{ELISION}\n{tail.lstrip()}"


class Fitting:
    """Token fitting for one phase's calls of one research."""

    def __init__(
        self,
        llm: ResearchLLM,
        state: ResearchState,
        counter: TokenCounter,
        budget: TokenBudget,
        *,
        model: str | None = None,
    ) -> None:
        self.llm = llm
        self.state = state
        self.counter = counter
        self.budget = budget
        self.model = model or state.llm_model

    @classmethod
    async def open(
        cls, llm: ResearchLLM, state: ResearchState, purpose: str = "analysis"
    ) -> Fitting:
        """The fitting for ``purpose`` calls of ``state``'s research.

        The budget and token counter are those of the model that answers ``purpose`` first
        (a phase may be routed to another provider than the research's own).
        """
        provider, model = state.llm_provider, state.llm_model
        model_for = getattr(llm, "model_for", None)
        if callable(model_for):
            try:
                provider, model = model_for(purpose)
            except Exception:  # routing is optional here: size for the research's own model
                log.debug("no route for %s; budgeting for the research's model", purpose)
        # Loaded once a process, in a thread (a tiktoken encoding may be downloaded); then
        # taken as it stands, without a thread's round trip before every agent's call.
        counter = loaded_counter_for_model(model)
        if counter is None:
            counter = await anyio.to_thread.run_sync(counter_for_model, model)
        budget = TokenBudget.from_options(
            state.options.token_budget, model, provider, own_model=state.llm_model
        )
        return cls(llm, state, counter, budget, model=model)

    @property
    def options(self) -> TokenBudgetOptions:
        return self.state.options.token_budget

    @property
    def enabled(self) -> bool:
        return self.options.enabled

    def output_tokens(self, phase: str, legacy: int) -> int:
        """``max_tokens`` for a call of ``phase`` (``legacy`` when management is off)."""
        return self.budget.output_tokens(phase) if self.enabled else legacy

    def phase_budget(self, phase: str) -> int:
        """The content tokens ``phase`` has for a whole round (its share of the window)."""
        return self.budget.phase_budget(phase)

    def call_room(self, phase: str, fixed: int) -> int:
        """The content tokens one call of ``phase`` may carry beside ``fixed`` tokens of fixed
        prompt text (its instructions): the rest of the call's whole input room."""
        return max(1, self.budget.call_room(phase) - fixed)

    # ------------------------------------------------------------------ calls

    async def ask(
        self,
        purpose: str,
        system: str,
        user: str,
        *,
        json_mode: bool,
        max_tokens: int,
        rebuild: Rebuild | None = None,
    ) -> str:
        """Send a prompt that fits: preflight, then up to three shrinking retries on overflow."""
        if not self.enabled:
            return await self.llm.ask(
                purpose, system, user, json_mode=json_mode, max_tokens=max_tokens
            )
        max_tokens = max(1, min(max_tokens, self.budget.max_output))
        limit = self.budget.input_limit(max_tokens)
        original = (system, user)
        scale = 1.0
        tokens = count_messages(self.counter, system, user)
        first_count = tokens
        rounds = 0
        while tokens > limit:
            rounds += 1
            if rounds > PREFLIGHT_ROUNDS or limit <= 0:
                raise ContextExceededError(
                    f"The {purpose} prompt needs {tokens:,} tokens and cannot be shrunk below "
                    f"the {limit:,} a call to {self.model} may carry.",
                    remediation=context_remediation(self.options.allow_content_dropping),
                    details={"purpose": purpose, "tokens": tokens, "limit": limit},
                )
            scale *= min(OVERFLOW_SHRINK, limit / tokens * 0.97)
            system, user = self._shrunk(rebuild, scale, original)
            tokens = count_messages(self.counter, system, user)
        if rounds:
            self.state.emit(
                "context_preflight",
                {
                    "purpose": purpose,
                    "tokens_before": first_count,
                    "tokens": tokens,
                    "limit": limit,
                },
            )
        attempt = 0
        while True:
            try:
                return await self.llm.ask(
                    purpose, system, user, json_mode=json_mode, max_tokens=max_tokens
                )
            except ProviderError as exc:
                if not is_context_overflow(exc):
                    raise
                attempt += 1
                if attempt > OVERFLOW_RETRIES:
                    raise ContextExceededError(
                        f"The model rejected the {purpose} prompt as too long "
                        f"{attempt} times, even shrunk to {tokens:,} tokens: {exc.message}",
                        remediation=REJECTED_REMEDIATION,
                        details={"purpose": purpose, "tokens": tokens, "provider": exc.provider},
                    ) from exc
                before = tokens
                while True:  # about 10% smaller than what was rejected, whatever the grain
                    scale *= OVERFLOW_SHRINK
                    system, user = self._shrunk(rebuild, scale, original)
                    tokens = count_messages(self.counter, system, user)
                    if tokens <= before * OVERFLOW_SHRINK * 1.02 or scale < MIN_SCALE:
                        break
                self.state.emit(
                    "context_overflow",
                    {
                        "purpose": purpose,
                        "attempt": attempt,
                        "tokens_before": before,
                        "tokens": tokens,
                        "error": exc.message[:300],
                    },
                )
                self.state.warn(
                    f"The model rejected the {purpose} prompt as too long; it was shrunk by about "
                    "10% and sent again. Set the model's window in [research] "
                    "model_context_overrides to avoid the retries."
                )

    def json_ask(
        self, purpose: str, legacy_max_tokens: int, rebuild: Rebuild | None = None
    ) -> Callable[[str, str], Awaitable[str]]:
        """JSON-mode calls of ``purpose`` as :func:`~foundry_mcp.research.llm.answers.ask_json`
        makes them: the first prompt sent is the one ``rebuild`` builds (and shrinks when it
        does not fit); a later one, a repair request, is shrunk in its middle."""
        max_tokens = self.output_tokens(purpose, legacy_max_tokens)
        sent = 0

        async def ask(system: str, user: str) -> str:
            nonlocal sent
            sent += 1
            fit_by = rebuild if sent == 1 else None
            return await self.ask(
                purpose, system, user, json_mode=True, max_tokens=max_tokens, rebuild=fit_by
            )

        return ask

    def _shrunk(
        self, rebuild: Rebuild | None, scale: float, original: tuple[str, str]
    ) -> tuple[str, str]:
        if rebuild is not None:
            return rebuild(scale)
        system, user = original
        target = max(1, math.floor(self.counter.count(user) * scale))
        return system, shrink_middle(user, target, self.counter)

    # ------------------------------------------------------------------ helpers

    async def ladder(self) -> Ladder:
        """The degradation ladder with the research's summarization chain and cache."""
        options = self.options
        cache = None
        if options.summarization_cache and options.cache_dir:
            # Opened once a process, in a thread; every later ladder takes it as it stands,
            # without a thread's round trip before each analysis call.
            directory = Path(options.cache_dir)
            cache = opened_summary_cache(directory)
            if cache is None:
                cache = await anyio.to_thread.run_sync(summary_cache, directory)
        # The summarizer reads at most half of what one call to this phase's model may carry.
        focus_max = max(500, min(FOCUS_MAX_TOKENS, self.budget.input_limit(4096) // 2))
        return Ladder(
            self.counter,
            await self._summary_models(),
            prompts=summarizer_prompts,
            prompt_version=SUMMARY_PROMPT_VERSION,
            cache=cache,
            timeout=options.summarization_timeout,
            focus_max_tokens=focus_max,
        )

    async def _summary_models(self) -> list[SummaryModel]:
        """The summarizer: ``ResearchLLM.ask("summarization", ...)``, which routes to
        ``summarization_provider(s)`` in order (else the phase's provider) and falls back
        between them."""
        return [OwnModel(self.llm)]

    def archive(self) -> ContentArchive | None:
        """Where dropped and heavily shortened originals go: the archive the run gave its LLMs
        (``ResearchLLM.archive``: the research store's, readable by every server), else this
        server's folder."""
        options = self.options
        if not options.archive_enabled:
            return None
        given = getattr(self.llm, "archive", None)
        if isinstance(given, ContentArchive):
            return given
        if not options.archive_dir:
            return None
        return ContentArchive(Path(options.archive_dir), options.archive_ttl_hours)

    def original_tokens(
        self, item_id: str, text: str, digest: str | None = None
    ) -> tuple[int, str]:
        """The tokens and hash of an item's original; a saved record's count is reused.
        ``digest``: the text's hash when already known (a page the store holds)."""
        digest = digest or content_hash(text)
        record = self.state.content_fidelity.get(item_id)
        if record is not None and record.content_hash == digest:
            if isinstance(self.counter, CachedCounter):
                self.counter.remember(text, record.original_tokens)
            return record.original_tokens, digest
        return self.counter.count(text), digest

    def query_for(self, source: Source) -> str:
        sub_queries = {sq.id: sq.query for sq in self.state.sub_queries}
        return f"{self.state.query} {sub_queries.get(source.sub_query_id or '', '')}".strip()

    def fit_text(self, text: str, budget: int, query: str) -> str:
        """``text`` within ``budget`` tokens: the passages most relevant to ``query``."""
        if self.counter.count(text) <= budget:
            return text
        return select_passages(text, query, max(1, budget), self.counter).text
