"""The analyzer: extracts cited findings, gaps and source ratings from new sources.

The pages of the sources not analysed yet are claimed and read (what of each page the analyst
is sent, each page once in the research, packed into small batches: the reading room,
:mod:`foundry_mcp.research.workflow.reading`); each batch is fitted into one call's analysis
budget (:mod:`foundry_mcp.research.workflow.fitting.sources`: the degradation ladder, which only
acts when the batch does not fit) and analysed, the batches concurrently up to
``max_concurrent`` (or the ``limiter`` shared by a pipeline). Each batch is recorded and saved
as it lands; a failed batch ends the others.

Simple mode calls :func:`analyze` for a sub-query's sources as soon as its search returns
(the pipeline), and once more in the analysis phase for whatever is still pending, then
:func:`read_further`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from functools import partial

import anyio

from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.reading.focus import RepeatLedger
from foundry_mcp.context.reading.selection import select_passages
from foundry_mcp.context.tokens import count_messages
from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.models import (
    AgentRole,
    AnalyzerOutput,
    Contradiction,
    Finding,
    Gap,
    ResearchState,
    Source,
    SubQuestion,
)
from foundry_mcp.research.prompts.analyzer import (
    analyzer_prompts,
    cut_text,
    render_source,
    source_text,
)
from foundry_mcp.research.workflow.deadline.ceiling import TimeCeiling
from foundry_mcp.research.workflow.fitting.batches import SOURCES_PER_CALL
from foundry_mcp.research.workflow.fitting.fitter import Fitting
from foundry_mcp.research.workflow.fitting.sources import FittedSource, fit_sources, prepare_round
from foundry_mcp.research.workflow.reading.budget import further_allowance, round_allowance
from foundry_mcp.research.workflow.reading.pages import Reading, read_pages, reading_terms
from foundry_mcp.research.workflow.reading.readings import Readings
from foundry_mcp.research.workflow.reading.shares import MIN_SHARE_TOKENS

CHARS_PER_SOURCE = 4000  # the fixed cut used when token management is switched off
LEGACY_MAX_TOKENS = 4096

Checkpoint = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Analysis:
    """What the readings of one :func:`analyze` or :func:`read_further` share: the researcher's
    LLM, state and guidance, the checkpoint saving each batch, the research's repeat ledger and
    readings, the concurrency ``limiter`` (None: ``max_concurrent``), and ``combined``, where
    every batch's output is gathered."""

    llm: ResearchLLM
    state: ResearchState
    guidance: str | None
    checkpoint: Checkpoint
    _: KW_ONLY
    ledger: RepeatLedger | None = None
    readings: Readings | None = None
    limiter: anyio.Semaphore | None = None
    combined: AnalyzerOutput = field(default_factory=AnalyzerOutput)


async def analyze(
    llm: ResearchLLM,
    state: ResearchState,
    guidance: str | None,
    checkpoint: Checkpoint,
    *,
    sources: Sequence[Source] | None = None,
    limiter: anyio.Semaphore | None = None,
    ledger: RepeatLedger | None = None,
    readings: Readings | None = None,
) -> AnalyzerOutput:
    """Analyse ``sources`` (default: every source) not analysed yet; see the module.

    ``ledger`` remembers the passages already read in this research, so a repeat is read once.
    ``readings`` (the research's) makes each page's text go to the analyst once in the whole
    research: a page another researcher read is not sent again, and what that reading found for
    this researcher's part is filed to it.
    """
    pending = [s for s in (state.sources if sources is None else sources) if not s.analyzed]
    analysis = Analysis(
        llm, state, guidance, checkpoint, ledger=ledger, readings=readings, limiter=limiter
    )
    if readings is not None:
        readings.receive(state)
    if not pending:
        return analysis.combined
    if readings is None:
        await _analyze_sources(analysis, pending)
        return analysis.combined
    analysed = False
    while pending:
        with readings.claimed(pending) as claim:
            for source in claim.read:  # read elsewhere in the research: its findings were filed
                source.analyzed = True
            readings.receive(state)
            if claim.mine:
                await _analyze_sources(analysis, claim.mine)
                analysed = True
        # Pages another researcher is reading now: waited for holding nothing (this caller's
        # own are released above), then taken as read, or read here if that reading failed.
        await readings.settle(claim.busy)
        pending = [s for s in claim.busy if not s.analyzed]
    if not analysed:
        await checkpoint()
    return analysis.combined


async def read_further(
    llm: ResearchLLM,
    state: ResearchState,
    guidance: str | None,
    checkpoint: Checkpoint,
    *,
    ledger: RepeatLedger | None = None,
    readings: Readings | None = None,
) -> AnalyzerOutput:
    """A further reading: what the round's reading budget has left
    (:func:`~foundry_mcp.research.workflow.reading.budget.further_allowance`) spent on the pages
    this researcher read in part, their passages worth most to the question, its parts and this
    round's sub-queries (the gaps a later round searches for), across those pages, as a first
    reading values them. A page a round read only in part is read further before the research
    searches again for what it may hold; the pages are claimed as a first reading is (one being
    read elsewhere now is left to that reading)."""
    analysis = Analysis(llm, state, guidance, checkpoint, ledger=ledger, readings=readings)
    allowance = further_allowance(state)
    ceiling = TimeCeiling.current()
    if ceiling is not None and not ceiling.allows("analysis"):
        return analysis.combined  # no time for a further call before the report must be written
    if readings is None or not allowance:
        return analysis.combined
    with readings.claimed_further(state) as pages:
        if pages:
            await _analyze_sources(analysis, pages, further=allowance)
    return analysis.combined


async def _analyze_sources(
    analysis: Analysis, pending: list[Source], *, further: int | None = None
) -> None:
    """Analyse ``pending`` into ``analysis.combined``; ``further``: the allowance of a further
    reading of pages read in part (else the round's share for them)."""
    state, guidance, readings = analysis.state, analysis.guidance, analysis.readings
    fitting = await Fitting.open(analysis.llm, state, "analysis")
    if (
        further is not None
        and fitting.enabled
        and fitting.phase_budget("analysis") < MIN_SHARE_TOKENS
    ):
        return  # a small window: its report could not hold what a further reading finds
    limiter = analysis.limiter or anyio.Semaphore(max(1, state.limits.max_concurrent))
    parts = readings.parts() if readings is not None else []
    reading = Reading()
    room = 0
    if fitting.enabled:
        fixed = count_messages(fitting.counter, *_prompts(state, [], guidance, parts))
        room = fitting.call_room("analysis", fixed)
        read_before = {s.id: readings.read_before(s.id) for s in pending} if readings else {}
        # Every search of the round: the pages one of them found, the others may have found too.
        searched = [sq.query for sq in state.sub_queries if sq.iteration == state.iteration]
        reading = await anyio.to_thread.run_sync(
            partial(
                read_pages,
                fitting,
                state,
                pending,
                room=room,
                allowance=(
                    round_allowance(state, pending)
                    if further is None  # a further reading: no more than a round of this window
                    else min(further, fitting.phase_budget("analysis"))
                ),
                read_before=read_before,
                terms=reading_terms(state, [sq.question for sq in parts], pending, searched),
                ledger=analysis.ledger,
            ),
            abandon_on_cancel=True,  # a cancel need not wait for the reading's end
        )
        batches = reading.batches
    else:
        batches = [
            {s.id: cut_text(source_text(s), CHARS_PER_SOURCE) for s in chunk}
            for chunk in (
                pending[i : i + SOURCES_PER_CALL] for i in range(0, len(pending), SOURCES_PER_CALL)
            )
        ]
    by_id = {s.id: s for s in pending}
    sent = {i for batch in batches for i in batch}
    for source in pending:
        if source.id not in sent:  # nothing of it within the round's allowance: considered
            source.analyzed = True
    ready = None
    if fitting.enabled:
        focused = {i: text for batch in batches for i, text in batch.items()}
        read = [s for s in pending if s.id in sent]
        ready = prepare_round(fitting, read, focused, reading.selected)

    async def run(texts: dict[str, str]) -> None:
        batch = [by_id[source_id] for source_id in texts]
        async with limiter:
            if ready is not None:
                fitted = await fit_sources(fitting, ready, list(texts), room)
            else:
                fitted = [FittedSource(s, texts[s.id], ContentLevel.FULL, 0) for s in batch]
            output = (
                await _analyze_batch(fitting, state, fitted, guidance, parts)
                if fitted
                else AnalyzerOutput()
            )
        _apply(
            state, batch, output, readings
        )  # dropped sources too: considered, nothing to analyse
        reading.record(state, batch, readings)
        combined = analysis.combined
        combined.findings.extend(output.findings)
        combined.gaps.extend(output.gaps)
        combined.quality_updates.extend(output.quality_updates)
        combined.contradictions.extend(output.contradictions)
        await analysis.checkpoint()

    await fan_out(run, batches, in_turn=True)


def _prompts(
    state: ResearchState,
    rendered: Sequence[str],
    guidance: str | None,
    parts: Sequence[SubQuestion] = (),
) -> tuple[str, str]:
    return analyzer_prompts(
        state.parent_query or state.query,
        state.research_brief,
        list(rendered),
        state.iteration,
        state.limits.max_iterations,
        guidance,
        parts=[(sq.id, sq.question) for sq in parts],
        reading_for=state.branch,
    )


async def _analyze_batch(
    fitting: Fitting,
    state: ResearchState,
    batch: Sequence[FittedSource],
    guidance: str | None,
    parts: Sequence[SubQuestion],
) -> AnalyzerOutput:
    def build(scale: float) -> tuple[str, str]:
        """The prompts, with every source's text cut to ``scale`` of its fitted size."""
        rendered = []
        for fitted in batch:
            if scale >= 1.0:
                rendered.append(fitted.render())
                continue
            size = fitted.tokens or fitting.counter.count(fitted.text)
            text = select_passages(
                fitted.text,
                fitting.query_for(fitted.source),
                max(1, math.floor(size * scale)),
                fitting.counter,
            ).text
            rendered.append(render_source(fitted.source, text, fitted.level))
        return _prompts(state, rendered, guidance, parts)

    system, user = build(1.0)
    output = await ask_json(
        fitting.json_ask("analysis", LEGACY_MAX_TOKENS, build),
        system,
        user,
        AnalyzerOutput,
        state=state,
        agent=AgentRole.ANALYZER,
        fallback="An analysis answer could not be read, even when asked again; its sources "
        "gave no findings.",
    )
    if output is None:
        return AnalyzerOutput()
    return _keep_known_sources(output, {fitted.source.id for fitted in batch})


def _keep_known_sources(output: AnalyzerOutput, known: set[str]) -> AnalyzerOutput:
    """Drop source ids the model invented, and findings left with no source at all."""
    findings = []
    for finding in output.findings:
        finding.source_ids = [sid for sid in dict.fromkeys(finding.source_ids) if sid in known]
        if finding.source_ids and finding.content.strip():
            findings.append(finding)
    output.findings = findings
    output.quality_updates = [u for u in output.quality_updates if u.source_id in known]
    for contradiction in output.contradictions:
        contradiction.source_ids = [
            sid for sid in dict.fromkeys(contradiction.source_ids) if sid in known
        ]
    output.contradictions = [
        c for c in output.contradictions if c.source_ids and c.description.strip()
    ]
    return output


def _apply(
    state: ResearchState,
    batch: Sequence[Source],
    output: AnalyzerOutput,
    readings: Readings | None,
) -> None:
    by_id = state.source_by_id()
    for update in output.quality_updates:
        by_id[update.source_id].quality = update.quality
    known = {sq.id for sq in readings.parts()} if readings is not None else set()
    for extracted in output.findings:
        parts = [part for part in dict.fromkeys(extracted.parts) if part in known]
        finding = Finding(
            content=extracted.content.strip(),
            confidence=extracted.confidence,
            source_ids=extracted.source_ids,
            category=extracted.category,
            iteration=state.iteration,
            parts=parts,
        )
        own = state.branch
        if readings is not None and own is not None and parts and own not in parts:
            readings.file(finding, batch, parts, by=own)  # it answers other parts only
            continue
        state.findings.append(finding)
        if readings is not None:
            readings.file(finding, batch, [part for part in parts if part != own], by=own)
    known_gaps = {" ".join(g.description.lower().split()) for g in state.gaps}
    for identified in output.gaps:
        key = " ".join(identified.description.lower().split())
        if key and key not in known_gaps:
            known_gaps.add(key)
            state.gaps.append(
                Gap(
                    description=identified.description.strip(),
                    suggested_queries=identified.suggested_queries,
                    priority=identified.priority,
                    iteration=state.iteration,
                )
            )
    for contradiction in output.contradictions:
        state.contradictions.append(
            Contradiction(
                description=contradiction.description.strip(),
                source_ids=contradiction.source_ids,
                iteration=state.iteration,
            )
        )
    for source in batch:
        source.analyzed = True
