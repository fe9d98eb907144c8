"""Token management inside one research run: the calls the agents make.

``ResearchContext`` is opened by an agent for its phase. It knows the research's budget and
token counter and offers:

* :meth:`ResearchContext.ask`: every LLM call goes through it. Before sending, the prompt is
  counted and, when it exceeds what the call may carry, shrunk (preflight). A provider that
  still rejects it as too long (``ProviderError`` of kind ``context_overflow``) gets it again
  about 10% smaller, up to three times, instead of failing the phase.
* :meth:`ResearchContext.fit_sources`: the analyzer's sources fitted into the analysis budget
  (priority allocation, then the degradation ladder), with fidelity records and the archive.
* :meth:`ResearchContext.fit_findings`: the synthesizer's findings fitted into the synthesis
  budget.
* :meth:`ResearchContext.fit_text`: a free text (a requester's context, a report excerpt) cut
  to a share of a phase's budget by passage selection.

With ``token_management_enabled = false`` none of this happens: prompts go out as built.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from foundry_mcp.context.allocation import Allocation, allocate
from foundry_mcp.context.archive import ContentArchive
from foundry_mcp.context.budget import TokenBudget
from foundry_mcp.context.errors import ContextExceededError
from foundry_mcp.context.fidelity import finish_phase, make_record, record_item
from foundry_mcp.context.ladder import FOCUS_MAX_TOKENS, Degraded, Ladder, SummaryModel
from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.passages import content_words
from foundry_mcp.context.priority import ContentItem
from foundry_mcp.context.runtime import summary_cache
from foundry_mcp.context.selection import ELISION, select_passages, truncate_to_tokens
from foundry_mcp.context.tokens import (
    CachedCounter,
    TokenCounter,
    content_hash,
    count_messages,
    counter_for_model,
)
from foundry_mcp.errors import ProviderError
from foundry_mcp.research.models import (
    Confidence,
    Contradiction,
    Finding,
    Gap,
    ResearchState,
    Source,
    SourceQuality,
    TokenBudgetOptions,
)
from foundry_mcp.research.prompts.analyzer import render_source, source_text
from foundry_mcp.research.prompts.synthesizer import render_finding
from foundry_mcp.research.workflow.calls import ResearchLLM

log = logging.getLogger(__name__)

OVERFLOW_RETRIES = 3
OVERFLOW_SHRINK = 0.9
PREFLIGHT_ROUNDS = 8
MIN_SCALE = 0.01
SOURCE_FLOOR_TOKENS = 24
FINDING_FLOOR_TOKENS = 12
HEAVY_LEVELS = (ContentLevel.KEY_POINTS, ContentLevel.HEADLINE)
SOURCE_TITLE_CHARS = 160
MAX_FIXED_SHARE = 0.5  # the synthesis frame (sources, gaps, contradictions) may use at most half

QUALITY_SCORES: dict[SourceQuality, float] = {
    SourceQuality.HIGH: 1.0,
    SourceQuality.MEDIUM: 0.6,
    SourceQuality.LOW: 0.2,
    SourceQuality.UNKNOWN: 0.5,
}
CONFIDENCE_SCORES: dict[Confidence, float] = {
    Confidence.CONFIRMED: 1.0,
    Confidence.HIGH: 0.85,
    Confidence.MEDIUM: 0.6,
    Confidence.LOW: 0.35,
    Confidence.SPECULATION: 0.1,
}
CONFIDENCE_RANKS: dict[Confidence, int] = {
    Confidence.CONFIRMED: 4,
    Confidence.HIGH: 3,
    Confidence.MEDIUM: 2,
    Confidence.LOW: 1,
    Confidence.SPECULATION: 0,
}

_OVERFLOW_TEXT = re.compile(
    r"context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long|"
    r"input is too long|exceeds? the (model'?s? )?(maximum|context)|reduce the length|"
    r"token limit",
    re.IGNORECASE,
)

Rebuild = Callable[[float], tuple[str, str]]


def is_context_overflow(exc: ProviderError) -> bool:
    """True when a provider rejected a prompt for being longer than the model's window."""
    if exc.kind == "context_overflow":
        return True
    return exc.kind in ("bad_request", "unknown") and bool(_OVERFLOW_TEXT.search(exc.message))


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


@dataclass
class FittedSource:
    """A source as it goes into the analysis prompt."""

    source: Source
    text: str
    level: ContentLevel
    tokens: int

    def render(self) -> str:
        return render_source(self.source, self.text, self.level)


@dataclass
class FittedFindings:
    """What the synthesis prompt carries."""

    findings: list[Finding]
    sources: list[Source]
    gaps: list[Gap]
    contradictions: list[Contradiction]
    titles: dict[str, str] = field(default_factory=dict)  # source id -> title as shown


def _clamp(value: float | None) -> float | None:
    if value is None:
        return None
    return min(1.0, max(0.0, float(value)))


def coverage(terms: set[str], text: str) -> float:
    """The share of ``terms`` that occur in ``text`` (0.5 when there are no terms)."""
    if not terms:
        return 0.5
    return len(terms & set(content_words(text))) / len(terms)


def shrink_middle(text: str, target: int, counter: TokenCounter) -> str:
    """``text`` within ``target`` tokens: its beginning and end, ``[…]`` for the middle."""
    tokens = counter.count(text)
    if tokens <= target:
        return text
    keep = max(0, int(len(text) * target / tokens * 0.97) - 8)
    head, tail = text[: int(keep * 0.7)], text[len(text) - int(keep * 0.3) :] if keep else ""
    return f"{head.rstrip()}\n{ELISION}\n{tail.lstrip()}"


class ResearchContext:
    """Token management for one agent call of one research."""

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
    ) -> ResearchContext:
        """The context for ``purpose`` calls of ``state``'s research.

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
        return self.budget.phase_budget(phase)

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
            cache = await anyio.to_thread.run_sync(summary_cache, Path(options.cache_dir))
        # The summarizer reads at most half of what one call to this phase's model may carry.
        focus_max = max(500, min(FOCUS_MAX_TOKENS, self.budget.input_limit(4096) // 2))
        return Ladder(
            self.counter,
            await self._summary_models(),
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
        options = self.options
        if not options.archive_enabled or not options.archive_dir:
            return None
        return ContentArchive(Path(options.archive_dir), options.archive_ttl_hours)

    def original_tokens(self, item_id: str, text: str) -> tuple[int, str]:
        """The tokens and hash of an item's original; a saved record's count is reused."""
        digest = content_hash(text)
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

    # ------------------------------------------------------------------ analysis

    async def fit_sources(self, sources: Sequence[Source]) -> list[FittedSource]:
        """``sources`` fitted into the analysis budget, in their order; dropped ones left out.

        Records each source's fidelity, archives dropped and heavily compressed originals
        (``content_archive_enabled``) and warns about summaries that failed.
        """
        state, options = self.state, self.options
        budget = self.phase_budget("analysis")
        question_terms = set(content_words(state.query))
        protected = set(state.protected_content_ids)
        # A source dropped earlier whose original went to the archive stays dropped (a phase
        # retry must not analyse its snippet instead); restore_content brings it back.
        sources = [
            s
            for s in sources
            if s.content or s.id not in state.dropped_content_ids or s.id in protected
        ]
        if not sources:
            return []
        texts: dict[str, str] = {}
        hashes: dict[str, str] = {}
        items: list[ContentItem] = []
        for source in sources:
            text = texts[source.id] = source_text(source)
            tokens, hashes[source.id] = self.original_tokens(source.id, text)
            overhead = self.counter.count(render_source(source, "", ContentLevel.KEY_POINTS))
            lexical = coverage(question_terms, f"{source.title} {source.snippet} {text[:4000]}")
            score = _clamp(source.score)
            user_supplied = is_user_document(source)
            items.append(
                ContentItem(
                    item_id=source.id,
                    item_type="source",
                    tokens=tokens,
                    overhead=overhead,
                    relevance=lexical if score is None else 0.5 * score + 0.5 * lexical,
                    recency=source.iteration / max(1, state.iteration),
                    quality=QUALITY_SCORES.get(source.quality, 0.5),
                    user_priority=1.0 if user_supplied else 0.0,
                    protected=user_supplied or source.id in protected,
                    floor=SOURCE_FLOOR_TOKENS,
                )
            )
        allocation = allocate(
            items, budget, allow_dropping=options.allow_content_dropping, what="analysis content"
        )
        ladder = await self.ladder()
        degraded: dict[str, Degraded] = {}
        limiter = anyio.Semaphore(max(1, state.limits.max_concurrent))

        async def shorten(source: Source) -> None:
            level = allocation.levels[source.id]
            target = allocation.target_tokens(source.id)
            async with limiter:
                result = await ladder.degrade(
                    texts[source.id],
                    level,
                    target,
                    self.query_for(source),
                    question=state.query,
                    title=source.title,
                )
            if result.tokens > target and level is not ContentLevel.DROPPED:
                text = truncate_to_tokens(result.text, target, self.counter, "…")
                result = Degraded(
                    text, self.counter.count(text), level, result.method, result.summarizer
                )
            degraded[source.id] = result

        async with anyio.create_task_group() as group:
            for source in sources:
                group.start_soon(shorten, source)

        await self._record_sources(sources, allocation, degraded, texts, hashes)
        if ladder.failures:
            state.warn(
                f"Summarization failed {len(ladder.failures)} time(s) (first: "
                f"{ladder.failures[0][:200]}); the sources concerned were shortened by marked "
                "truncation. Configure summarization_providers fallbacks or raise "
                "summarization_timeout."
            )
        return [
            FittedSource(s, degraded[s.id].text, degraded[s.id].level, degraded[s.id].tokens)
            for s in sources
            if degraded[s.id].level is not ContentLevel.DROPPED
        ]

    async def _record_sources(
        self,
        sources: Sequence[Source],
        allocation: Allocation,
        degraded: dict[str, Degraded],
        texts: dict[str, str],
        hashes: dict[str, str],
    ) -> None:
        state = self.state
        archive = self.archive()
        regressions: list[str] = []
        used = 0
        dropped: list[str] = []
        for source in sources:
            result = degraded[source.id]
            item = allocation.item(source.id)
            if result.level is not ContentLevel.DROPPED:
                used += item.overhead + result.tokens
            record = make_record(
                item_type="source",
                original_tokens=item.tokens,
                current_tokens=result.tokens,
                level=result.level,
                method=result.method,
                phase="analysis",
                iteration=state.iteration,
                content_hash=hashes[source.id],
                summarizer=result.summarizer,
            )
            if archive is not None and (
                result.level is ContentLevel.DROPPED or result.level in HEAVY_LEVELS
            ):
                reason = "dropped" if result.level is ContentLevel.DROPPED else "compressed"
                try:
                    digest = await anyio.to_thread.run_sync(
                        functools.partial(
                            archive.write,
                            content=texts[source.id],
                            item_id=source.id,
                            item_type="source",
                            reason=reason,
                            original_tokens=item.tokens,
                            metadata={"url": source.url, "title": source.title},
                        )
                    )
                except OSError as exc:
                    state.warn(f"The original of {source.id} could not be archived: {exc}.")
                else:
                    state.content_archive_hashes[source.id] = digest
                    record.archived = True
                    if result.level is ContentLevel.DROPPED:
                        source.content = None  # the archive holds it; restore brings it back
            if result.level is ContentLevel.DROPPED:
                dropped.append(source.id)
                if source.id not in state.dropped_content_ids:
                    state.dropped_content_ids.append(source.id)
            elif source.id in state.dropped_content_ids:
                state.dropped_content_ids.remove(source.id)
            record_item(state, source.id, record, regressions)
        finish_phase(
            state, "analysis", [s.id for s in sources], used, allocation.budget, regressions
        )
        state.emit(
            "context_allocation",
            {
                "phase": "analysis",
                "items": len(sources),
                "budget": allocation.budget,
                "used": used,
                "levels": {
                    level.value: sum(1 for r in degraded.values() if r.level is level)
                    for level in ContentLevel
                    if any(r.level is level for r in degraded.values())
                },
            },
        )
        if dropped:
            where = (
                "their originals are archived; restore one with the service's "
                "restore_content(research_id, item_id) and resume"
                if archive is not None
                else "set content_archive_enabled to keep their originals"
            )
            state.warn(
                f"{len(dropped)} source(s) were dropped to fit the analysis budget "
                f"(allow_content_dropping); {where}."
            )

    # ------------------------------------------------------------------ synthesis

    def fit_findings(
        self,
        findings: Sequence[Finding],
        sources: Sequence[Source],
        gaps: Sequence[Gap],
        contradictions: Sequence[Contradiction],
        *,
        scale: float = 1.0,
        record: bool = True,
    ) -> FittedFindings:
        """The findings (shortened or dropped by priority) and the lists around them that fit
        the synthesis budget; ``scale`` shrinks the budget for overflow retries."""
        state, options = self.state, self.options
        budget = max(1, math.floor(self.phase_budget("synthesis") * scale))
        fixed_room = math.floor(budget * MAX_FIXED_SHARE)
        titles = {s.id: " ".join(s.title.split())[:SOURCE_TITLE_CHARS] for s in sources}
        kept_gaps = list(gaps)
        kept_contradictions = list(contradictions)

        def fixed_cost() -> int:
            lines = [f"- {s.id}: {titles[s.id]} ({s.url or 'no URL'})" for s in sources]
            lines += [f"- {g.description}" for g in kept_gaps]
            lines += [
                f"- {c.description}\n  Sources: {', '.join(c.source_ids)}"
                for c in kept_contradictions
            ]
            return self.counter.count("\n".join(lines))

        cost = fixed_cost()
        if cost > fixed_room:  # long lists: shorter titles, then fewer gaps
            titles = {sid: title[:60] for sid, title in titles.items()}
            cost = fixed_cost()
        while cost > fixed_room and kept_gaps:
            kept_gaps = kept_gaps[: len(kept_gaps) // 2]
            cost = fixed_cost()
        question_terms = set(content_words(state.query))
        user_sources = {s.id for s in sources if is_user_document(s)}
        items = []
        for finding in findings:
            frame = render_finding(999, finding, "")
            items.append(
                ContentItem(
                    item_id=finding.id,
                    item_type="finding",
                    tokens=self.counter.count(finding.content),
                    overhead=self.counter.count(frame) + 2,
                    relevance=coverage(question_terms, finding.content),
                    recency=finding.iteration / max(1, state.iteration),
                    quality=CONFIDENCE_SCORES.get(finding.confidence, 0.5),
                    user_priority=1.0 if user_sources & set(finding.source_ids) else 0.0,
                    confidence_rank=CONFIDENCE_RANKS.get(finding.confidence, 2),
                    high_confidence=finding.confidence in (Confidence.HIGH, Confidence.CONFIRMED),
                    floor=FINDING_FLOOR_TOKENS,
                )
            )
        allocation = allocate(
            items,
            max(0, budget - cost),
            allow_dropping=options.allow_content_dropping,
            what="synthesis findings",
        )
        kept: list[Finding] = []
        regressions: list[str] = []
        used = cost
        for finding in findings:
            level = allocation.levels[finding.id]
            item = allocation.item(finding.id)
            text = finding.content
            if level is not ContentLevel.DROPPED and level is not ContentLevel.FULL:
                text = truncate_to_tokens(
                    text, allocation.target_tokens(finding.id), self.counter, "…"
                )
            current = 0 if level is ContentLevel.DROPPED else self.counter.count(text)
            if level is not ContentLevel.DROPPED:
                kept.append(finding.model_copy(update={"content": text}))
                used += item.overhead + current
            if record:
                entry = make_record(
                    item_type="finding",
                    original_tokens=item.tokens,
                    current_tokens=current,
                    level=level,
                    method="full"
                    if level is ContentLevel.FULL
                    else ("dropped" if level is ContentLevel.DROPPED else "truncation"),
                    phase="synthesis",
                    iteration=state.iteration,
                )
                record_item(state, finding.id, entry, regressions)
        if record:
            finish_phase(state, "synthesis", [f.id for f in findings], used, budget, regressions)
            dropped = len(findings) - len(kept)
            if dropped:
                state.warn(
                    f"{dropped} low-priority finding(s) were left out of the report's prompt to "
                    "fit the synthesis budget (allow_content_dropping)."
                )
            if len(kept_gaps) < len(gaps):
                state.warn(
                    f"Only {len(kept_gaps)} of {len(gaps)} open gaps were listed to the writer "
                    "to fit the synthesis budget."
                )
        cited = {sid for f in kept for sid in f.source_ids}
        cited.update(sid for c in kept_contradictions for sid in c.source_ids)
        return FittedFindings(
            findings=kept,
            sources=[
                s.model_copy(update={"title": titles[s.id]}) for s in sources if s.id in cited
            ],
            gaps=kept_gaps,
            contradictions=kept_contradictions,
            titles=titles,
        )


def is_user_document(source: Source) -> bool:
    """A source from the user's own documents (any local-documents provider): protected."""
    return bool(source.url and source.url.startswith("file://"))
