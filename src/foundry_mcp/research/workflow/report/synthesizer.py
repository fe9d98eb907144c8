"""The synthesizer: writes the report from the findings and resolves its citations."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from foundry_mcp.research.language import decide_language
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.llm.fanout import together
from foundry_mcp.research.models import (
    ReportMetadata,
    ResearchState,
    Source,
    SubQueryStatus,
    SynthesizerOutput,
    VerificationSummary,
)
from foundry_mcp.research.prompts.report_parts import FRAME_SYSTEM
from foundry_mcp.research.prompts.synthesizer import SYNTHESIZER_SYSTEM
from foundry_mcp.research.verification import (
    ExcerptSelector,
    evidence_quality_section,
    split_claims,
    verify_draft,
)
from foundry_mcp.research.workflow.deadline.ceiling import MARGIN_S, TimeCeiling
from foundry_mcp.research.workflow.deadline.pace import check_time
from foundry_mcp.research.workflow.deadline.texts import (
    check_note,
    deadline_emptied,
    last_stop,
    late_check_note,
    no_finding_texts,
    time_limit_section,
    unwritten_note,
)
from foundry_mcp.research.workflow.fitting.fitter import Fitting
from foundry_mcp.research.workflow.report.citations import quote_sources, resolve_citations
from foundry_mcp.research.workflow.report.frame import whole_report_builder
from foundry_mcp.research.workflow.report.parts import (
    ReportSection,
    WrittenReport,
    merge_smallest,
    sections_by_sub_query,
    stated_report,
    unwrap_fence,
    write_in_parts,
)

_SOURCE_ID = re.compile(r"\[(src-[0-9a-f]{8})\]")
_HEADING = re.compile(r"^#{2,3}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_SOURCES_SPLIT = "\n## Sources\n"  # the heading resolve_citations appends
LEGACY_MAX_TOKENS = 8192


@dataclass(frozen=True)
class Writing:
    """What a mode adds to the report: its writer's instructions and material, and a section.

    ``material`` (fenced blocks, e.g. the sub-questions' answers) goes into the prompt before
    the findings, and the sources in ``citable`` may be cited because it cites them.
    ``appendix`` is a section written by code (its citations as ``[src-...]``), added to the
    draft after verification, before the citations are numbered. With two or more
    ``sections`` (and ``parallel_writing``), the report is written in parts at once (see
    :mod:`foundry_mcp.research.workflow.report.parts`), the frame by ``frame_system``.
    """

    system: str = SYNTHESIZER_SYSTEM
    material: str | None = None
    citable: frozenset[str] = frozenset()
    appendix: str | None = None
    sections: tuple[ReportSection, ...] = ()
    frame_system: str = FRAME_SYSTEM


async def synthesize(
    llm: ResearchLLM,
    state: ResearchState,
    guidance: str | None,
    writing: Writing | None = None,
) -> SynthesizerOutput:
    """Write the report, check its cited sentences, and resolve its citations.

    With ``state.options.verify_citations`` each cited sentence is judged against its sources
    (see :mod:`foundry_mcp.research.verification`): unsupported ones are removed and partial ones
    marked. Either way an ``## Evidence Quality`` section ends the body. ``writing`` is what a
    mode adds (see :class:`Writing`). Under a deadline the writer's and the fact-checker's calls
    end by :meth:`TimeCeiling.finish_by`: what the writer did not write in time lists its
    findings as found, the sentences not checked in time stay unverified, and a ``## Time
    Limit`` section says so.
    """
    writing = writing or Writing(sections=tuple(sections_by_sub_query(state)))
    await decide_language(state.options, state.parent_query or state.query)
    if not state.findings:
        state.claim_checks = []
        return _no_evidence_report(state)
    cited_ids = {sid for f in state.findings for sid in f.source_ids}
    cited_ids.update(sid for c in state.contradictions for sid in c.source_ids)
    cited_ids.update(writing.citable)
    sources = [s for s in state.sources if s.id in cited_ids]
    fitting = await Fitting.open(llm, state, "synthesis")
    # The fact-checker's excerpts need every source's sentences indexed (those the analyst was
    # sent, when this run knows them): that is done in a thread while the writers' calls are
    # in flight, not after them with nothing in flight; and once the first is on its way, since
    # the thread holds the interpreter in turns with the loop building the writer's prompt.
    selector = ExcerptSelector({s.id: s for s in sources}, read=state.pages_sent())
    ceiling = TimeCeiling.current()
    end_by = math.inf if ceiling is None else ceiling.finish_by()
    drafts: list[WrittenReport] = []
    indexed = anyio.Event()

    async def index_sources() -> None:
        if state.options.verify_citations:
            await llm.calls.departure(limit=0.5)
            await anyio.to_thread.run_sync(selector.index, [s.id for s in sources])
            indexed.set()

    async def prepare_checks(written: str) -> None:
        # The claims of a part written while others are still out get their excerpts now:
        # after the last part, the fact-check's prompts wait only for that part's.
        if indexed.is_set():
            await anyio.to_thread.run_sync(selector.prepare, written)

    async def write_draft() -> None:
        drafts.append(
            await _write_draft(
                fitting, state, sources, guidance, writing, end_by, on_written=prepare_checks
            )
        )

    # together, not a bare task group: the writer's error reaches the run as its own type (a
    # context error names its fix), not wrapped in an exception group.
    await together(index_sources, write_draft)
    written = drafts[0]
    draft, offered = written.draft, written.offered
    notes = []  # what the deadline cut of the report's own writing and checking
    if written.unwritten:
        notes.append(
            unwritten_note(state.options.max_time_s or 0.0, written.unwritten, written.parts)
        )
    # A source that exists but was not given to the writer (its findings were left out to fit
    # the budget) is not citable: the writer never saw what it says.
    by_id = {s.id: s for s in sources if s.id in offered | writing.citable}
    # Counted on the writer's draft: verification may remove the sentence that held them.
    dropped = resolve_citations(draft, by_id).dropped_citations
    if dropped:
        state.warn(
            f"{dropped} citation(s) in the draft named no source given to the writer and were "
            "removed."
        )
    verification: VerificationSummary | None = None
    cap, note = _check_in_time(state, draft, by_id)
    if note:
        notes.append(note)
    if state.options.verify_citations and cap != 0:
        verified = await verify_draft(llm, state, draft, by_id, selector, cap, end_by)
        draft, verification = verified.markdown, verified.summary
        if verified.late:
            notes.append(late_check_note(verified.late, verified.asked))
        # A repaired citation names a source the writer was not given: it may be cited now.
        repaired = {
            sid for check in verified.checks if check.repaired_from for sid in check.source_ids
        }
        by_id.update({s.id: s for s in state.sources if s.id in repaired})
        uncited = verification.uncited_sentences
    else:
        state.claim_checks = []
        uncited = split_claims(draft).uncited_sentences
    draft = _ensure_conflict_section(draft, state)
    draft = _add_time_limit(draft, state, notes)
    if writing.appendix:
        appendix_ids = set(_SOURCE_ID.findall(writing.appendix))
        by_id.update({s.id: s for s in sources if s.id in appendix_ids})
        draft = draft.rstrip() + "\n\n" + writing.appendix.strip() + "\n"
    resolved = resolve_citations(draft, by_id)
    if state.options.report_quotes:
        resolved.markdown = quote_sources(resolved.markdown, resolved.cited, state.claim_checks)
    confidence = Counter(f.confidence.value for f in state.findings)
    confidence_summary = {level: confidence.get(level, 0) for level in ("high", "medium", "low")}
    section = evidence_quality_section(
        verification,
        state.claim_checks,
        sources_cited=len(resolved.cited),
        sources_examined=len(state.sources),
        confidence=confidence_summary,
        uncited_sentences=uncited,
        failed_searches=_failed_searches(state),
    )
    report = _insert_before_sources(resolved.markdown, section)
    body = report.split(_SOURCES_SPLIT, 1)[0]
    metadata = ReportMetadata(
        sections=[h for h in _HEADING.findall(report)],
        word_count=len(body.split()),
        citations_count=resolved.citations_count,
        sources_cited=len(resolved.cited),
        sources_examined=len(state.sources),
        confidence_summary=confidence_summary,
        dropped_citations=dropped,
        cited_source_ids=[source.id for source in resolved.cited],
        verification=verification,
    )
    return SynthesizerOutput(report=report, report_metadata=metadata)


async def _write_draft(
    fitting: Fitting,
    state: ResearchState,
    sources: list[Source],
    guidance: str | None,
    writing: Writing,
    end_by: float,
    *,
    on_written: Callable[[str], Awaitable[None]] | None = None,
) -> WrittenReport:
    """The writer's draft (in parts when ``writing`` has sections) and the ids of the sources
    its prompts gave the writer; what is not written by ``end_by`` is stated by code;
    ``on_written``: see :func:`write_in_parts`."""
    max_tokens = fitting.output_tokens("synthesis", LEGACY_MAX_TOKENS)
    if writing.sections and state.options.parallel_writing:
        sections = list(writing.sections)
        if _pressed(state):  # one wave of calls: no time for two
            sections = merge_smallest(sections, max(1, state.limits.max_concurrent - 1))
        return await write_in_parts(
            fitting,
            state,
            sections,
            sources,
            guidance,
            frame_system=writing.frame_system,
            material=writing.material,
            max_tokens=max_tokens,
            end_by=end_by,
            on_written=on_written,
        )
    offered: set[str] = set()  # the ids the prompt last sent gave the writer
    build = whole_report_builder(
        fitting,
        state,
        sources,
        guidance,
        system=writing.system,
        material=writing.material,
        offered=offered,
    )
    system, user = build(1.0)
    with anyio.CancelScope(deadline=end_by):
        answer = await fitting.ask(
            "synthesis", system, user, json_mode=False, max_tokens=max_tokens, rebuild=build
        )
        return WrittenReport(unwrap_fence(answer), offered)
    return stated_report(state)  # the deadline came before the writer's answer


_CONFLICT_HEADING = re.compile(
    r"^#{2,3}\s+.*\b(conflict|contradict|disagree|disput)", re.IGNORECASE | re.MULTILINE
)


def _ensure_conflict_section(draft: str, state: ResearchState) -> str:
    """Contradictions found in analysis always get their own section.

    When the writer left it out, it is added from the analyzer's records. It is added after
    verification: it reports that sources disagree, which no single source states.
    """
    if not state.contradictions or _CONFLICT_HEADING.search(draft):
        return draft
    lines = [
        f"- {c.description.strip()} {''.join(f'[{sid}]' for sid in c.source_ids)}"
        for c in state.contradictions
    ]
    return draft.rstrip() + "\n\n## Conflicting Evidence\n\n" + "\n".join(lines) + "\n"


def _insert_before_sources(report: str, section: str) -> str:
    """``section`` at the end of the body, before the ``## Sources`` list when there is one."""
    body, split, sources = report.rpartition(_SOURCES_SPLIT)
    if not split:
        return report.rstrip() + "\n\n" + section
    return body.rstrip() + "\n\n" + section + split + sources


def _failed_searches(state: ResearchState) -> tuple[int, int]:
    failed = sum(1 for sq in state.sub_queries if sq.status is SubQueryStatus.FAILED)
    return failed, len(state.sub_queries)


def _pressed(state: ResearchState) -> bool:
    """Whether the deadline leaves no time for a second wave of writer calls."""
    if state.metadata.get("time_ceiling_reached"):
        return True
    ceiling = TimeCeiling.current()
    return ceiling is not None and ceiling.left() < 2 * ceiling.report_time().total_s + MARGIN_S


def _check_in_time(
    state: ResearchState, draft: str, sources: dict[str, Source]
) -> tuple[int | None, str | None]:
    """How many cited sentences the fact-check may judge before the deadline (None: as many as
    configured), and what was given up to keep it (None: nothing)."""
    ceiling = TimeCeiling.current()
    if ceiling is None or not state.options.verify_citations:
        return None, None
    cap = max(0, state.options.max_verified_claims)
    claims = split_claims(draft).claims
    count = min(cap, sum(1 for c in claims if any(sid in sources for sid in c.source_ids)))
    slots, pace, left = state.limits.max_concurrent, ceiling.pace(), ceiling.left() - MARGIN_S
    needed = check_time(count, slots, pace)[0]
    if needed <= left:
        return None, None
    fits = next((k for k in range(count - 1, 0, -1) if check_time(k, slots, pace)[0] <= left), 0)
    return fits, check_note(fits, count, needed, left)


def _add_time_limit(draft: str, state: ResearchState, notes: list[str]) -> str:
    """The draft with a section saying what the deadline left out, when it left something
    (``notes``: what it cut of the report's writing and checking, each also a warning)."""
    stop = last_stop(state)
    for note in notes:
        state.warn(f"Time ceiling (max_time_s = {state.options.max_time_s:g}): {note}")
    if stop is None and not notes:
        return draft
    return draft.rstrip() + "\n\n" + time_limit_section(state, stop, " ".join(notes) or None)


def _no_evidence_report(state: ResearchState) -> SynthesizerOutput:
    """An honest report when nothing was found; the model is not asked to write from memory."""
    failed, total = _failed_searches(state)
    stop = last_stop(state)
    if stop is not None and not deadline_emptied(state, stop):
        stop = None  # the sources had their say: the deadline is not why nothing was found
    if stop is not None:  # the deadline came first: say so, not that the sources hold nothing
        why, advice = no_finding_texts(state, stop)
    elif total and failed == total:
        errors = "; ".join(dict.fromkeys(sq.error or "" for sq in state.sub_queries))
        why = (
            f"Every search failed ({errors}), so no source could be examined and the research "
            "makes no claims."
        )
        advice = (
            "Check the search providers with action='health' (or `foundry-mcp doctor`), then "
            "start the research again."
        )
    else:
        why = (
            f"The research examined {len(state.sources)} source(s) but extracted no finding "
            "that the sources support, so it makes no claims."
        )
        advice = (
            "Try a more specific question, more sources per sub-query, or another search "
            "provider, then start the research again."
        )
    report = (
        f"# {state.query.strip()[:200]}\n\n"
        f"## Executive Summary\n\n{why}\n\n"
        f"## Limitations and Open Questions\n\n{advice}\n"
    )
    state.warn(
        "No findings were extracted before the deadline; the report says what the deadline "
        "left out and how much time a report with findings would need."
        if stop is not None
        else "No findings were extracted; the report states that nothing could be established."
    )
    metadata = ReportMetadata(
        sections=["Executive Summary", "Limitations and Open Questions"],
        word_count=len(report.split()),
        sources_examined=len(state.sources),
        confidence_summary={"high": 0, "medium": 0, "low": 0},
    )
    return SynthesizerOutput(report=report, report_metadata=metadata)
