"""Findings fitted into the synthesis budget: shortened or dropped by priority, with the lists
(sources for citation, open gaps, contradictions) around them kept within half of it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from foundry_mcp.context.allocation import allocate
from foundry_mcp.context.fidelity.bookkeeping import finish_phase, make_record, record_item
from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.priority import ContentItem
from foundry_mcp.context.reading.passages import content_words
from foundry_mcp.context.reading.selection import truncate_to_tokens
from foundry_mcp.research.models import Confidence, Contradiction, Finding, Gap, Source
from foundry_mcp.research.prompts.synthesizer import render_finding
from foundry_mcp.research.workflow.fitting.fitter import Fitting
from foundry_mcp.research.workflow.fitting.sources import coverage, is_user_marked

FINDING_FLOOR_TOKENS = 12
SOURCE_TITLE_CHARS = 160
MAX_FIXED_SHARE = 0.5  # the synthesis frame (sources, gaps, contradictions) may use at most half

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
class FittedFindings:
    """What the synthesis prompt carries."""

    findings: list[Finding]
    sources: list[Source]
    gaps: list[Gap]
    contradictions: list[Contradiction]
    titles: dict[str, str] = field(default_factory=dict)  # source id -> title as shown


def fit_findings(
    fitting: Fitting,
    findings: Sequence[Finding],
    sources: Sequence[Source],
    gaps: Sequence[Gap],
    contradictions: Sequence[Contradiction],
    *,
    scale: float = 1.0,
    record: bool = True,
    allow_dropping: bool | None = None,
) -> FittedFindings:
    """The findings (shortened or dropped by priority) and the lists around them that fit
    the synthesis budget; ``scale`` shrinks the budget for overflow retries.
    ``allow_dropping`` overrides the research's ``allow_content_dropping`` (a prompt whose
    findings reach the report by another call may go without some)."""
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
    preferred = state.options.preferred_sources
    user_sources = {s.id for s in sources if is_user_marked(s, preferred)}
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
        allow_dropping=options.allow_content_dropping if allow_dropping is None else allow_dropping,
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
