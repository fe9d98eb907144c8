"""What a research's page shows (:class:`~.model.ViewData`), read from the research service or
built from a saved state; bounded, so a huge research still makes a page of at most about a
megabyte, and says what it left out (``ViewData.omitted``).
"""

from __future__ import annotations

import re
from datetime import datetime

from foundry_mcp.research.models import (
    PHASE_ORDER,
    BranchStatus,
    ClaimCheck,
    Finding,
    FollowUp,
    ReportVersion,
    ResearchState,
    Source,
    Status,
    SubQueryStatus,
    utcnow,
)
from foundry_mcp.research.principal import Principal
from foundry_mcp.research.service.completed.versions import versions_of
from foundry_mcp.research.service.payloads.status import usage_totals
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.view.model import (
    Activity,
    Claim,
    Cost,
    FollowUpView,
    Part,
    PhaseCost,
    Plan,
    Quote,
    Reading,
    SourceView,
    Usage,
    Version,
    ViewData,
)

__all__ = ["ViewData", "view_data", "view_of"]

# The bounds of one page's data (see ``ViewData.omitted`` for what they cut).
MAX_REPORT_CHARS = 300_000
MAX_CLAIMS = 300
MAX_QUOTES_PER_CLAIM = 3
MAX_QUOTE_CHARS = 600
MAX_SENTENCE_CHARS = 600
MAX_SOURCES = 300
MAX_PARTS = 60
MAX_FINDINGS_PER_PART = 6
MAX_FINDING_CHARS = 400
MAX_FOLLOW_UPS = 20
MAX_ANSWER_CHARS = 6_000
MAX_TEXT_CHARS = 2_000  # a question, a brief, a warning, a title's worth and then some
MAX_TITLE_CHARS = 300
MAX_LIST = 20  # warnings, activity

# The report's own list of sources: the page lists the sources itself, with what was read.
_SOURCES_SECTION = re.compile(r"^## Sources[ \t]*$", re.MULTILINE)


async def view_data(
    service: ResearchService, research_id: str, principal: Principal | None = None
) -> ViewData:
    """The page's data for ``research_id``, as ``principal`` may see it (another principal's
    research is not found, as an unknown id). The status is the service's honest one (a
    research whose process died is interrupted; one asked to stop, cancelling)."""
    status = await service.status(research_id, principal=principal)
    state = await service.watch.load_checked(status["research_id"])
    return view_of(state, status=Status(status["status"]))


def view_of(
    state: ResearchState, *, status: Status | None = None, now: datetime | None = None
) -> ViewData:
    """The page's data from a saved state (``status``: the service's word for it, if known)."""
    status = status or state.status
    omitted: list[str] = []
    numbers = state.citation_numbers()
    report, cut = _report_body(state.report)
    if cut:
        omitted.append(f"The report is cut at {MAX_REPORT_CHARS:,} characters.")
    claims = [_claim(check, numbers) for check in state.claim_checks[:MAX_CLAIMS]]
    if len(state.claim_checks) > MAX_CLAIMS:
        omitted.append(
            f"{len(state.claim_checks) - MAX_CLAIMS} checked sentences are not shown "
            f"(the first {MAX_CLAIMS} are)."
        )
    if any(len(c.quotes) > MAX_QUOTES_PER_CLAIM for c in state.claim_checks):
        omitted.append(f"At most {MAX_QUOTES_PER_CLAIM} quotes are shown for a sentence.")
    verdicts: dict[str, int] = {}
    for check in state.claim_checks:
        verdicts[check.verdict.value] = verdicts.get(check.verdict.value, 0) + 1
    sources = _sources(state, numbers)
    if len(state.sources) > MAX_SOURCES:
        omitted.append(
            f"{len(state.sources) - MAX_SOURCES} of {len(state.sources)} sources are not shown "
            "(the cited ones come first)."
        )
    plan = Plan(brief=_cut(state.research_brief), parts=_parts(state))
    if max(len(state.sub_questions), len(state.hypotheses), len(state.sub_queries)) > MAX_PARTS:
        omitted.append(f"Only the first {MAX_PARTS} parts of the plan are shown.")
    if len(state.warnings) > MAX_LIST:
        omitted.append(f"Only the latest {MAX_LIST} of {len(state.warnings)} warnings are shown.")
    versions = versions_of(state)
    return ViewData(
        research_id=state.id,
        question=_cut(state.query) or "",
        status=status.value,
        live=status.is_active,
        phase=state.phase.value,
        phase_index=PHASE_ORDER.index(state.phase) + 1,
        iteration=state.iteration,
        max_iterations=state.limits.max_iterations,
        mode=state.mode.value,
        elapsed_s=round(state.elapsed_seconds(now or utcnow()), 1),
        created_at=state.created_at.isoformat(),
        updated_at=state.updated_at.isoformat(),
        usage=_usage(state),
        plan=plan,
        findings=max(len(state.findings), sum(len(q.finding_ids) for q in state.sub_questions)),
        report=report,
        version=versions[-1].number if versions and report is not None else None,
        claims=claims,
        verdicts=verdicts,
        sources=sources,
        # A hierarchical research's sources are its researchers' until they finish.
        sources_total=max(len(state.sources), sum(q.source_count for q in state.sub_questions)),
        versions=[_version(v) for v in versions],
        follow_ups=[_follow_up(f, numbers) for f in state.follow_ups[-MAX_FOLLOW_UPS:]],
        activity=[
            Activity(
                agent=d.agent.value,
                action=d.action,
                text=_cut(d.rationale, 300) or "",
                at=d.timestamp.isoformat(),
            )
            for d in state.decisions[-MAX_LIST:]
        ],
        warnings=[_cut(w) or "" for w in state.warnings[-MAX_LIST:]],
        error=_cut(state.error),
        omitted=omitted,
    )


def _cut(text: str | None, limit: int = MAX_TEXT_CHARS) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _report_body(report: str | None) -> tuple[str | None, bool]:
    """The report without its closing list of sources, and whether it was cut to the bound."""
    if report is None:
        return None, False
    matches = list(_SOURCES_SECTION.finditer(report))
    if matches and not re.search(r"^#{1,2}\s", report[matches[-1].end() :], re.MULTILINE):
        report = report[: matches[-1].start()].rstrip() + "\n"
    if len(report) > MAX_REPORT_CHARS:
        return report[:MAX_REPORT_CHARS], True
    return report, False


def _usage(state: ResearchState) -> Usage:
    usage = state.llm_usage
    order = [p.value for p in PHASE_ORDER]
    phases = sorted(usage.by_phase, key=lambda p: (order.index(p) if p in order else len(order), p))
    return Usage(
        total=Cost.model_validate(usage_totals(usage.total)),
        by_phase=[
            PhaseCost.model_validate({"phase": p, **usage_totals(usage.by_phase[p])})
            for p in phases
        ],
        search_calls=state.search_calls,
        max_cost_usd=usage.max_cost_usd,
        cost_ceiling_reached=usage.cost_ceiling_reached,
    )


def _texts(ids: list[str], findings: dict[str, Finding]) -> list[str]:
    found = [findings[i].content for i in ids if i in findings]
    return [_cut(text, MAX_FINDING_CHARS) or "" for text in found[:MAX_FINDINGS_PER_PART]]


def _parts(state: ResearchState) -> list[Part]:
    """The plan's parts: its sub-questions, else its hypotheses, else its searches."""
    findings = {f.id: f for f in state.findings}
    parts: list[Part] = []
    for sq in state.sub_questions[:MAX_PARTS]:
        done = sq.status in (BranchStatus.COMPLETED, BranchStatus.FAILED, BranchStatus.SKIPPED)
        budget = max(1, sq.iteration_budget)
        parts.append(
            Part(
                id=sq.id,
                kind="sub_question",
                text=_cut(sq.question) or "",
                status=sq.status.value,
                progress=1.0 if done else _progress(sq.status, sq.iterations_used, budget),
                detail=(
                    f"{sq.phase}, iteration {max(1, sq.iterations_used)} of {budget}"
                    if sq.status is BranchStatus.RESEARCHING
                    else (_cut(sq.error, 300) or "")
                ),
                sources=sq.source_count,
                findings_count=len(sq.finding_ids),
                findings=_texts(sq.finding_ids, findings),
            )
        )
    if parts:
        return parts
    for h in state.hypotheses[:MAX_PARTS]:
        evidence = h.evidence_for + h.evidence_against
        verdict = h.verdict.value.replace("_", " ") if h.verdict else ""
        confidence = h.final_confidence if h.final_confidence is not None else h.confidence
        parts.append(
            Part(
                id=h.id,
                kind="hypothesis",
                text=_cut(h.statement) or "",
                status=h.status.value,
                progress=_progress(h.status, 0, 1),
                detail=", ".join(
                    x for x in (verdict, f"confidence {confidence}%", _cut(h.skip_reason, 300)) if x
                ),
                findings_count=len(evidence),
                findings=_texts(evidence, findings),
            )
        )
    if parts:
        return parts
    for q in state.sub_queries[:MAX_PARTS]:
        found = set(q.source_ids)
        mine = [f.id for f in state.findings if found.intersection(f.source_ids)]
        status = {
            SubQueryStatus.PENDING: "pending",
            SubQueryStatus.COMPLETED: "completed",
            SubQueryStatus.FAILED: "failed",
        }[q.status]
        parts.append(
            Part(
                id=q.id,
                kind="search",
                text=_cut(q.query) or "",
                status=status,
                progress=0.0 if status == "pending" else 1.0,
                detail=_cut(q.error, 300) or (f"round {q.iteration}" if q.iteration > 1 else ""),
                sources=len(q.source_ids),
                findings_count=len(mine),
                findings=_texts(mine, findings),
            )
        )
    return parts


def _progress(status: BranchStatus, used: int, budget: int) -> float:
    if status is BranchStatus.PENDING:
        return 0.0
    if status is BranchStatus.RESEARCHING:
        # Halfway through the iteration it is in: never shown as done while it runs.
        return min(0.95, (max(0, used) + 0.5) / budget)
    return 1.0


def _quotes(
    quotes: list[tuple[str, str]], numbers: dict[str, int], limit: int = MAX_QUOTES_PER_CLAIM
) -> list[Quote]:
    return [
        Quote(number=numbers.get(source_id), text=_cut(text, MAX_QUOTE_CHARS) or "")
        for source_id, text in quotes[:limit]
    ]


def _cited(source_ids: list[str], numbers: dict[str, int]) -> list[int]:
    return sorted({numbers[s] for s in source_ids if s in numbers})


def _claim(check: ClaimCheck, numbers: dict[str, int]) -> Claim:
    return Claim(
        sentence=_cut(check.sentence, MAX_SENTENCE_CHARS) or "",
        verdict=check.verdict.value,
        reason=_cut(check.reason, 600) or "",
        numbers=_cited(check.source_ids, numbers),
        quotes=_quotes([(q.source_id, q.text) for q in check.quotes], numbers),
    )


def _sources(state: ResearchState, numbers: dict[str, int]) -> list[SourceView]:
    ordered = sorted(state.sources, key=lambda s: (s.id not in numbers, numbers.get(s.id, 0)))
    return [_source(s, numbers, state) for s in ordered[:MAX_SOURCES]]


def _source(source: Source, numbers: dict[str, int], state: ResearchState) -> SourceView:
    record = state.readings.get(source.id)
    return SourceView(
        id=source.id,
        number=numbers.get(source.id),
        title=_cut(" ".join(source.title.split()), MAX_TITLE_CHARS) or "Untitled",
        url=source.url if source.url and len(source.url) <= MAX_TEXT_CHARS else None,
        provider=source.provider,
        quality=source.quality.value,
        read=Reading(
            passages=record.passages,
            passages_read=record.count,
            tokens=record.tokens,
            whole=record.whole,
        )
        if record
        else None,
    )


def _version(version: ReportVersion) -> Version:
    label = version.kind.value
    if version.instructions is not None and not version.instructions.is_plain():
        wanted = version.instructions
        label += f": {wanted.form.value}" + (f" for {wanted.audience}" if wanted.audience else "")
    elif version.part:
        label += f": {version.part}"
    total = version.cost.total
    return Version(
        number=version.number,
        kind=version.kind.value,
        label=_cut(label, 300) or "",
        created_at=version.created_at.isoformat(),
        cost_usd=round(total.cost_usd, 6),
        tokens=total.input_tokens + total.output_tokens,
        search_calls=version.cost.search_calls,
    )


def _follow_up(follow_up: FollowUp, numbers: dict[str, int]) -> FollowUpView:
    return FollowUpView(
        question=_cut(follow_up.question) or "",
        answer=_cut(follow_up.answer, MAX_ANSWER_CHARS) or "",
        answerable=follow_up.answerable,
        numbers=_cited(follow_up.source_ids, numbers),
        quotes=_quotes([(q.source_id, q.quote) for q in follow_up.quotes], numbers),
    )
