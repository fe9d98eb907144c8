"""The analyzer: extracts cited findings, gaps and source ratings from new sources.

The sources not analysed yet are focused on the question and packed into small batches
(:mod:`foundry_mcp.research.workflow.fitting.batches`); each batch is fitted into one call's
analysis budget (:mod:`foundry_mcp.research.workflow.fitting.sources`: the degradation ladder,
which only acts when the batch does not fit) and analysed, the batches concurrently up to
``max_concurrent`` (or the ``limiter`` shared by a pipeline). Each batch is saved as it lands;
a failed batch ends the others.

Simple mode calls :func:`analyze` for a sub-query's sources as soon as its search returns
(the pipeline), and once more in the analysis phase for whatever is still pending.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence

import anyio

from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.reading.focus import RepeatLedger
from foundry_mcp.context.reading.selection import select_passages
from foundry_mcp.context.tokens import count_messages
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.llm.jsonparse import parse_handoff
from foundry_mcp.research.models import (
    AgentRole,
    AnalyzerOutput,
    Confidence,
    Contradiction,
    ExtractedFinding,
    Finding,
    Gap,
    ResearchState,
    Source,
)
from foundry_mcp.research.prompts.analyzer import (
    analyzer_prompts,
    cut_text,
    render_source,
    source_text,
)
from foundry_mcp.research.workflow.fitting.batches import (
    SOURCES_PER_CALL,
    batch_capacity,
    focus_sources,
    pack,
    seed_ledger,
)
from foundry_mcp.research.workflow.fitting.fitter import Fitting
from foundry_mcp.research.workflow.fitting.sources import FittedSource, fit_sources, prepare_round

CHARS_PER_SOURCE = 4000  # the fixed cut used when token management is switched off
LEGACY_MAX_TOKENS = 4096

Checkpoint = Callable[[], Awaitable[None]]


async def analyze(
    llm: ResearchLLM,
    state: ResearchState,
    guidance: str | None,
    checkpoint: Checkpoint,
    *,
    sources: Sequence[Source] | None = None,
    limiter: anyio.Semaphore | None = None,
    ledger: RepeatLedger | None = None,
) -> AnalyzerOutput:
    """Analyse ``sources`` (default: every source) not analysed yet; see the module.

    ``ledger`` remembers the passages already read in this research, so a repeat is read once.
    """
    pending = [s for s in (state.sources if sources is None else sources) if not s.analyzed]
    combined = AnalyzerOutput()
    if not pending:
        return combined
    fitting = await Fitting.open(llm, state, "analysis")
    limiter = limiter or anyio.Semaphore(max(1, state.limits.max_concurrent))
    room = 0
    selected: set[str] = set()
    if fitting.enabled:
        fixed = count_messages(fitting.counter, *_prompts(state, [], guidance))
        room = fitting.call_room("analysis", fixed)
        batches, selected = await anyio.to_thread.run_sync(
            _read, fitting, state, pending, ledger, room
        )
    else:
        batches = [
            {s.id: cut_text(source_text(s), CHARS_PER_SOURCE) for s in chunk}
            for chunk in (
                pending[i : i + SOURCES_PER_CALL] for i in range(0, len(pending), SOURCES_PER_CALL)
            )
        ]
    by_id = {s.id: s for s in pending}
    ready = None
    if fitting.enabled:
        focused = {i: text for batch in batches for i, text in batch.items()}
        ready = prepare_round(fitting, pending, focused, selected)

    async def run(texts: dict[str, str]) -> None:
        batch = [by_id[source_id] for source_id in texts]
        async with limiter:
            if ready is not None:
                fitted = await fit_sources(fitting, ready, list(texts), room)
            else:
                fitted = [FittedSource(s, texts[s.id], ContentLevel.FULL, 0) for s in batch]
            output = (
                await _analyze_batch(fitting, state, fitted, guidance)
                if fitted
                else AnalyzerOutput()
            )
        _apply(state, batch, output)  # dropped sources too: considered, nothing to analyse
        combined.findings.extend(output.findings)
        combined.gaps.extend(output.gaps)
        combined.quality_updates.extend(output.quality_updates)
        combined.contradictions.extend(output.contradictions)
        await checkpoint()

    await fan_out(run, batches)
    return combined


def _read(
    fitting: Fitting,
    state: ResearchState,
    pending: Sequence[Source],
    ledger: RepeatLedger | None,
    room: int,
) -> tuple[list[dict[str, str]], set[str]]:
    """The batches of one round (each source within its share, focused where it must be, packed
    into calls of at most ``room`` tokens) and the sources whose passages were chosen to fit.
    CPU work over long pages: run it in a worker thread."""
    if ledger is not None:
        seed_ledger(ledger, state, fitting.counter)
    reading = focus_sources(
        state,
        pending,
        fitting.counter,
        ledger,
        round_budget=fitting.phase_budget("analysis"),
        room=room,
    )
    for source in pending:  # the originals' counts, cached for prepare_round
        fitting.counter.count(source_text(source))
    batches = [
        {item.source.id: item.text for item in batch}
        for batch in pack(reading, batch_capacity(room))
    ]
    return batches, {item.source.id for item in reading if item.selected}


def _prompts(
    state: ResearchState, rendered: Sequence[str], guidance: str | None
) -> tuple[str, str]:
    return analyzer_prompts(
        state.query,
        state.research_brief,
        list(rendered),
        state.iteration,
        state.limits.max_iterations,
        guidance,
    )


async def _analyze_batch(
    fitting: Fitting,
    state: ResearchState,
    batch: Sequence[FittedSource],
    guidance: str | None,
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
        return _prompts(state, rendered, guidance)

    system, user = build(1.0)
    text = await fitting.ask(
        "analysis",
        system,
        user,
        json_mode=True,
        max_tokens=fitting.output_tokens("analysis", LEGACY_MAX_TOKENS),
        rebuild=build,
    )
    sources = [f.source for f in batch]
    output = parse_handoff(text, AnalyzerOutput)
    if output is not None:
        return _keep_known_sources(output, {s.id for s in sources})
    state.record_fallback(
        AgentRole.ANALYZER,
        "An analysis answer could not be read; a low-confidence summary was kept.",
    )
    summary = " ".join(text.split())[:600] or "The sources were collected but not analysed."
    return AnalyzerOutput(
        findings=[
            ExtractedFinding(
                content=summary,
                confidence=Confidence.LOW,
                source_ids=[s.id for s in sources[:3]],
            )
        ]
    )


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


def _apply(state: ResearchState, batch: Sequence[Source], output: AnalyzerOutput) -> None:
    by_id = state.source_by_id()
    for update in output.quality_updates:
        by_id[update.source_id].quality = update.quality
    for extracted in output.findings:
        state.findings.append(
            Finding(
                content=extracted.content.strip(),
                confidence=extracted.confidence,
                source_ids=extracted.source_ids,
                category=extracted.category,
                iteration=state.iteration,
            )
        )
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
