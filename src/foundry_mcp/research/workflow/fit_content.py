"""Sources and findings fitted into a phase's budget: priority allocation, then the ladder.

* :func:`fit_sources`: the analyzer's sources fitted into the analysis budget, with fidelity
  records, the archive of dropped and heavily shortened originals, and summary failures warned.
* :func:`fit_findings`: the synthesizer's findings (shortened or dropped by priority) and the
  lists around them fitted into the synthesis budget.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from foundry_mcp.context.allocation import Allocation, allocate
from foundry_mcp.context.fidelity import finish_phase, make_record, record_item
from foundry_mcp.context.ladder import Degraded
from foundry_mcp.context.passages import content_words
from foundry_mcp.context.priority import ContentItem
from foundry_mcp.context.selection import truncate_to_tokens
from foundry_mcp.research.models import (
    Confidence,
    Contradiction,
    Finding,
    Gap,
    Source,
    SourceQuality,
)
from foundry_mcp.research.models.levels import ContentLevel
from foundry_mcp.research.prompts.analyzer import render_source, source_text
from foundry_mcp.research.prompts.synthesizer import render_finding
from foundry_mcp.research.workflow.fitting import Fitting

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


async def fit_sources(fitting: Fitting, sources: Sequence[Source]) -> list[FittedSource]:
    """``sources`` fitted into the analysis budget, in their order; dropped ones left out.

    Records each source's fidelity, archives dropped and heavily compressed originals
    (``content_archive_enabled``) and warns about summaries that failed.
    """
    state, options = fitting.state, fitting.options
    budget = fitting.phase_budget("analysis")
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
        tokens, hashes[source.id] = fitting.original_tokens(source.id, text)
        overhead = fitting.counter.count(render_source(source, "", ContentLevel.KEY_POINTS))
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

    await _record_sources(fitting, sources, allocation, degraded, texts, hashes)
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
    texts: dict[str, str],
    hashes: dict[str, str],
) -> None:
    state = fitting.state
    archive = fitting.archive()
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
    finish_phase(state, "analysis", [s.id for s in sources], used, allocation.budget, regressions)
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


def fit_findings(
    fitting: Fitting,
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
    state, options = fitting.state, fitting.options
    budget = max(1, math.floor(fitting.phase_budget("synthesis") * scale))
    fixed_room = math.floor(budget * MAX_FIXED_SHARE)
    titles = {s.id: " ".join(s.title.split())[:SOURCE_TITLE_CHARS] for s in sources}
    kept_gaps = list(gaps)
    kept_contradictions = list(contradictions)

    def fixed_cost() -> int:
        lines = [f"- {s.id}: {titles[s.id]} ({s.url or 'no URL'})" for s in sources]
        lines += [f"- {g.description}" for g in kept_gaps]
        lines += [
            f"- {c.description}\n  Sources: {', '.join(c.source_ids)}" for c in kept_contradictions
        ]
        return fitting.counter.count("\n".join(lines))

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
                tokens=fitting.counter.count(finding.content),
                overhead=fitting.counter.count(frame) + 2,
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
                text, allocation.target_tokens(finding.id), fitting.counter, "…"
            )
        current = 0 if level is ContentLevel.DROPPED else fitting.counter.count(text)
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
        sources=[s.model_copy(update={"title": titles[s.id]}) for s in sources if s.id in cited],
        gaps=kept_gaps,
        contradictions=kept_contradictions,
        titles=titles,
    )


def is_user_document(source: Source) -> bool:
    """A source from the user's own documents (any local-documents provider): protected."""
    return bool(source.url and source.url.startswith("file://"))
