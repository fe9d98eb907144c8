"""Sources fitted into an analysis call's budget: priority allocation, then the ladder.

:func:`prepare_round` ranks a round's sources once; :func:`fit_sources` fits them batch by
batch into one analysis call's budget, with fidelity records, the archive of dropped and
heavily shortened originals, and summary failures warned. The findings' side is
:mod:`foundry_mcp.research.workflow.fitting.findings`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio

from foundry_mcp.context.allocation import Allocation, allocate
from foundry_mcp.context.fidelity.bookkeeping import (
    READ_BY_BUDGET,
    finish_phase,
    make_record,
    record_item,
)
from foundry_mcp.context.fidelity.records import ContentFidelity
from foundry_mcp.context.ladder import Degraded
from foundry_mcp.context.levels import ContentLevel, lowest_level_keeping
from foundry_mcp.context.priority import ContentItem, top_sources
from foundry_mcp.context.reading.passages import content_words
from foundry_mcp.context.reading.selection import truncate_to_tokens
from foundry_mcp.research.models import Source, SourceQuality
from foundry_mcp.research.prompts.analyzer import render_source, source_text
from foundry_mcp.research.workflow.fitting.batches import BATCH_TARGET_TOKENS
from foundry_mcp.research.workflow.fitting.fitter import Fitting

SOURCE_FLOOR_TOKENS = 24
HEAVY_LEVELS = (ContentLevel.KEY_POINTS, ContentLevel.HEADLINE)

QUALITY_SCORES: dict[SourceQuality, float] = {
    SourceQuality.HIGH: 1.0,
    SourceQuality.MEDIUM: 0.6,
    SourceQuality.LOW: 0.2,
    SourceQuality.UNKNOWN: 0.5,
}


@dataclass
class FittedSource:
    """A source as it goes into the analysis prompt."""

    source: Source
    text: str
    level: ContentLevel
    tokens: int

    def render(self) -> str:
        return render_source(self.source, self.text, self.level)


def _clamp(value: float | None) -> float | None:
    if value is None:
        return None
    return min(1.0, max(0.0, float(value)))


def coverage(terms: set[str], text: str) -> float:
    """The share of ``terms`` that occur in ``text`` (0.5 when there are no terms)."""
    if not terms:
        return 0.5
    return len(terms & set(content_words(text))) / len(terms)


@dataclass
class SourceRound:
    """The sources of one analysis round, ready to be fitted batch by batch.

    The round decides which sources are its five best (:data:`~foundry_mcp.context.priority.
    TOP_SOURCES`, never below 30% fidelity), so that guardrail means the same whether the
    round is analysed in one call or in many.
    """

    sources: dict[str, Source]
    texts: dict[str, str]  # what the analyst is to read (the relevant passages)
    originals: dict[str, str]
    hashes: dict[str, str]
    whole: dict[str, int]  # tokens of each original
    items: dict[str, ContentItem]
    top: frozenset[str]
    selected: frozenset[str] = frozenset()  # narrowed to their share by passage selection


def prepare_round(
    fitting: Fitting,
    sources: Sequence[Source],
    focused: Mapping[str, str] | None = None,
    selected: set[str] | frozenset[str] = frozenset(),
) -> SourceRound:
    """``sources`` measured and ranked for fitting; ``focused`` holds the text to read of each
    (within its share, see :mod:`~foundry_mcp.research.workflow.fitting.batches`), else the
    whole text; ``selected`` names those whose passages were chosen to fit their share."""
    state = fitting.state
    question_terms = set(content_words(state.query))
    protected = set(state.protected_content_ids)
    # A source dropped earlier whose original went to the archive stays dropped (a phase
    # retry must not analyse its snippet instead); restore_content brings it back.
    kept = [
        s
        for s in sources
        if s.content or s.id not in state.dropped_content_ids or s.id in protected
    ]
    ready = SourceRound(
        {s.id: s for s in kept}, {}, {}, {}, {}, {}, frozenset(), frozenset(selected)
    )
    for source in kept:
        original = ready.originals[source.id] = source_text(source)
        whole, ready.hashes[source.id] = fitting.original_tokens(
            source.id, original, _stored_hash(source, original)
        )
        ready.whole[source.id] = whole
        text = ready.texts[source.id] = original if focused is None else focused[source.id]
        tokens = whole if text is original else fitting.counter.count(text)
        overhead = fitting.counter.count(render_source(source, "", ContentLevel.KEY_POINTS))
        lexical = coverage(question_terms, f"{source.title} {source.snippet} {text[:4000]}")
        score = _clamp(source.score)
        user_supplied = is_user_marked(source, state.options.preferred_sources)
        ready.items[source.id] = ContentItem(
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
    ready.top = top_sources(ready.items.values())
    return ready


def _stored_hash(source: Source, original: str) -> str | None:
    """The hash of ``original`` known without hashing it: that of the page the store holds,
    when ``original`` is that very text."""
    if original is source.content and source.text_is_kept:
        return source.content_hash
    return None


async def fit_sources(
    fitting: Fitting, ready: SourceRound, batch: Sequence[str], room: int
) -> list[FittedSource]:
    """The sources ``batch`` names fitted into one analysis call's ``room`` (the content tokens
    the call can carry), in their order; dropped ones left out.

    Records each source's fidelity (of the relevant text: setting off-topic passages aside is
    not a loss), archives dropped and heavily compressed originals (``content_archive_enabled``)
    and warns about summaries that failed.
    """
    state, options = fitting.state, fitting.options
    budget = room
    sources = [ready.sources[i] for i in batch if i in ready.sources]
    if not sources:
        return []
    texts = ready.texts
    allocation = allocate(
        [ready.items[s.id] for s in sources],
        budget,
        allow_dropping=options.allow_content_dropping,
        what="analysis content",
        top=ready.top,
    )
    ladder = await fitting.ladder()
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
                fitting.query_for(source),
                question=state.query,
                title=source.title,
            )
        if result.tokens > target and level is not ContentLevel.DROPPED:
            text = truncate_to_tokens(result.text, target, fitting.counter, "…")
            result = Degraded(
                text, fitting.counter.count(text), level, result.method, result.summarizer
            )
        degraded[source.id] = result

    async with anyio.create_task_group() as group:
        for source in sources:
            group.start_soon(shorten, source)

    await _record_sources(fitting, sources, allocation, degraded, ready)
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
    fitting: Fitting,
    sources: Sequence[Source],
    allocation: Allocation,
    degraded: dict[str, Degraded],
    ready: SourceRound,
) -> None:
    state = fitting.state
    whole = ready.whole
    archive = fitting.archive()
    regressions: list[str] = []
    used = 0
    dropped: list[str] = []
    # Passages chosen within the reading budget, in a window roomy enough for a whole batch,
    # were chosen by the budget; in a smaller window the call's room capped each page too.
    budgeted = state.limits.reading_budget is not None and allocation.budget >= BATCH_TARGET_TOKENS
    for source in sources:
        result = degraded[source.id]
        item = allocation.item(source.id)
        if result.level is not ContentLevel.DROPPED:
            used += item.overhead + result.tokens
        by_budget = budgeted and source.id not in state.protected_content_ids
        record = _record(
            source.id, result, item.tokens, whole[source.id], ready, state.iteration, by_budget
        )
        if archive is not None and (
            result.level is ContentLevel.DROPPED or record.current_level in HEAVY_LEVELS
        ):
            reason = "dropped" if result.level is ContentLevel.DROPPED else "compressed"
            try:
                digest = await anyio.to_thread.run_sync(
                    functools.partial(
                        archive.write,
                        content=ready.originals[source.id],
                        item_id=source.id,
                        item_type="source",
                        reason=reason,
                        original_tokens=whole[source.id],
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
        state,
        "analysis",
        [s.id for s in sources],
        used,
        allocation.budget,
        regressions,
        accumulate=True,
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


def _record(
    source_id: str,
    result: Degraded,
    read: int,
    whole: int,
    ready: SourceRound,
    iteration: int,
    by_budget: bool,
) -> ContentFidelity:
    """The fidelity record of a source read as ``result`` out of ``read`` tokens chosen from its
    ``whole``. Passages chosen to fit its share are a loss (measured against the whole, at the
    level that ratio keeps), said to be the reading budget's choice (``budget``) when
    ``by_budget``, else the window's (``selection``); repeats set aside are not a loss
    (measured against what was read)."""
    level, method, relevant = result.level, result.method, read if read != whole else None
    if source_id in ready.selected:
        relevant = None
        if level is ContentLevel.FULL:
            level = lowest_level_keeping(result.tokens / max(1, whole))
            method = READ_BY_BUDGET if by_budget else "selection"
    elif method == "full" and read < whole:
        method = "focus"
    return make_record(
        item_type="source",
        original_tokens=whole,
        relevant_tokens=relevant,
        current_tokens=result.tokens,
        level=level,
        method=method,
        phase="analysis",
        iteration=iteration,
        content_hash=ready.hashes[source_id],
        summarizer=result.summarizer,
    )


def is_user_document(source: Source) -> bool:
    """A source from the user's own documents (any local-documents provider): protected."""
    return bool(source.url and source.url.startswith("file://"))


def is_user_marked(source: Source, preferred: Sequence[str]) -> bool:
    """A source the user gave (their documents) or asked for (``preferred_sources``)."""
    return is_user_document(source) or is_preferred(source.url, preferred)


def is_preferred(url: str | None, preferred: Sequence[str]) -> bool:
    """Whether ``url`` is under one of the ``preferred`` address prefixes or domains."""
    if not url or not preferred:
        return False
    address = url.lower()
    host = (urlsplit(address).hostname or "").rstrip(".")
    for pattern in preferred:
        if pattern.startswith(("http://", "https://")):
            if address.startswith(pattern):
                return True
            continue
        domain = pattern.removeprefix("*.")
        if host == domain or host.endswith("." + domain):
            return True
    return False
