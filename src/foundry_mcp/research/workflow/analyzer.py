"""The analyzer: extracts cited findings, gaps and source ratings from new sources.

The sources not analysed yet are first fitted into the analysis budget (see
:mod:`foundry_mcp.research.workflow.fit_content`): each gets a level of the degradation ladder by priority,
long ones are cut to their relevant passages or summarized, and low-priority ones may be
dropped when ``allow_content_dropping`` is set. The fitted sources are then analysed in batches
of at most ``SOURCES_PER_CALL``, concurrently in one task group (a failed batch ends the
others); each batch is saved as it lands.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence

import anyio

from foundry_mcp.context.selection import select_passages
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
from foundry_mcp.research.models.levels import ContentLevel
from foundry_mcp.research.prompts.analyzer import (
    analyzer_prompts,
    cut_text,
    render_source,
    source_text,
)
from foundry_mcp.research.workflow.calls import ResearchLLM
from foundry_mcp.research.workflow.fanout import fan_out
from foundry_mcp.research.workflow.fit_content import FittedSource, fit_sources
from foundry_mcp.research.workflow.fitting import Fitting
from foundry_mcp.research.workflow.jsonparse import parse_handoff

SOURCES_PER_CALL = 20
CHARS_PER_SOURCE = 4000  # the fixed cut used when token management is switched off
LEGACY_MAX_TOKENS = 4096

Checkpoint = Callable[[], Awaitable[None]]


async def analyze(
    llm: ResearchLLM, state: ResearchState, guidance: str | None, checkpoint: Checkpoint
) -> AnalyzerOutput:
    """Analyse every source not analysed yet, in batches; each batch is saved as it lands."""
    pending = [s for s in state.sources if not s.analyzed]
    fitting = await Fitting.open(llm, state, "analysis")
    if fitting.enabled and pending:
        fitted = await fit_sources(fitting, pending)
    else:
        fitted = [
            FittedSource(s, cut_text(source_text(s), CHARS_PER_SOURCE), ContentLevel.FULL, 0)
            for s in pending
        ]
    kept = {f.source.id for f in fitted}
    for source in pending:  # dropped to fit: considered, but nothing to analyse
        if source.id not in kept:
            source.analyzed = True
    batches = [fitted[i : i + SOURCES_PER_CALL] for i in range(0, len(fitted), SOURCES_PER_CALL)]
    combined = AnalyzerOutput()
    semaphore = anyio.Semaphore(state.limits.max_concurrent)

    async def run(batch: list[FittedSource]) -> None:
        async with semaphore:
            output = await _analyze_batch(fitting, state, batch, guidance)
        _apply(state, [f.source for f in batch], output)
        combined.findings.extend(output.findings)
        combined.gaps.extend(output.gaps)
        combined.quality_updates.extend(output.quality_updates)
        combined.contradictions.extend(output.contradictions)
        await checkpoint()

    await fan_out(run, batches)
    return combined


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
        return analyzer_prompts(
            state.query,
            state.research_brief,
            rendered,
            state.iteration,
            state.limits.max_iterations,
            guidance,
        )

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
