"""The synthesizer: writes the report from the findings and resolves its citations."""

from __future__ import annotations

import re
from collections import Counter

from foundry_mcp.research.citations import resolve_citations
from foundry_mcp.research.models import (
    ReportMetadata,
    ResearchState,
    SourceQuality,
    SynthesizerOutput,
)
from foundry_mcp.research.prompts.synthesizer import synthesizer_prompts
from foundry_mcp.research.workflow.calls import ResearchLLM

_HEADING = re.compile(r"^#{2,3}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FENCED_REPORT = re.compile(r"^```(?:markdown|md)?\s*\n(.*)\n```\s*$", re.DOTALL)


async def synthesize(
    llm: ResearchLLM, state: ResearchState, guidance: str | None
) -> SynthesizerOutput:
    """Write the report; every citation in it is resolved against the research's sources."""
    if not state.findings:
        return _no_evidence_report(state)
    cited_ids = {sid for f in state.findings for sid in f.source_ids}
    sources = [s for s in state.sources if s.id in cited_ids]
    high_quality = sum(1 for s in state.sources if s.quality is SourceQuality.HIGH)
    system, user = synthesizer_prompts(
        state.query,
        state.research_brief,
        state.findings,
        state.unaddressed_gaps(),
        sources,
        state.iteration,
        state.limits.max_iterations,
        high_quality,
        guidance,
    )
    draft = await llm.ask("synthesis", system, user, json_mode=False, max_tokens=8192)
    draft = _unwrap_fence(draft.strip())
    resolved = resolve_citations(draft, {s.id: s for s in sources})
    if resolved.dropped_citations:
        state.warn(
            f"{resolved.dropped_citations} citation(s) in the draft named no known source "
            "and were removed."
        )
    confidence = Counter(f.confidence.value for f in state.findings)
    body = resolved.markdown.split("\n## Sources\n", 1)[0]
    metadata = ReportMetadata(
        sections=[h for h in _HEADING.findall(resolved.markdown)],
        word_count=len(body.split()),
        citations_count=resolved.citations_count,
        sources_cited=len(resolved.cited),
        sources_examined=len(state.sources),
        confidence_summary={level: confidence.get(level, 0) for level in ("high", "medium", "low")},
        dropped_citations=resolved.dropped_citations,
        cited_source_ids=[source.id for source in resolved.cited],
    )
    return SynthesizerOutput(report=resolved.markdown, report_metadata=metadata)


def _unwrap_fence(text: str) -> str:
    match = _FENCED_REPORT.match(text)
    return match.group(1).strip() if match else text


def _no_evidence_report(state: ResearchState) -> SynthesizerOutput:
    """An honest report when nothing was found; the model is not asked to write from memory."""
    report = (
        f"# {state.query.strip()[:200]}\n\n"
        "## Executive Summary\n\n"
        f"The research examined {len(state.sources)} source(s) but extracted no finding that "
        "the sources support, so it makes no claims.\n\n"
        "## Limitations and Open Questions\n\n"
        "Try a more specific question, more sources per sub-query, or another search provider, "
        "then start the research again.\n"
    )
    state.warn("No findings were extracted; the report states that nothing could be established.")
    metadata = ReportMetadata(
        sections=["Executive Summary", "Limitations and Open Questions"],
        word_count=len(report.split()),
        sources_examined=len(state.sources),
        confidence_summary={"high": 0, "medium": 0, "low": 0},
    )
    return SynthesizerOutput(report=report, report_metadata=metadata)
