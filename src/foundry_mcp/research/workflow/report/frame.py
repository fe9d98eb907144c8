"""The prompt of a call written from every finding (the whole report, or a report's frame), and
the frame fitted to a small window.

The frame (title, executive summary, limitations, conclusion around body sections written by
other calls) reads every finding, but its sections carry each one into the report, so on a
small window it may go without some. Its findings are first fitted as any writer's are (the
ladder, within the research's ``allow_content_dropping``, recorded in the content fidelity);
when even their shortest forms do not fit, the lowest-priority ones are left out of its prompt
whatever that setting, and the mode's material it reads (the sub-questions' answers) is cut
with them as the prompt shrinks. When even that cannot fit, the frame is written by code
(:func:`unfitted_frame`) and a warning says so: a small window never fails the research.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from foundry_mcp.context.errors import ContextExceededError
from foundry_mcp.context.reading.selection import truncate_to_tokens
from foundry_mcp.context.tokens import TokenCounter
from foundry_mcp.research.language import writing_rule
from foundry_mcp.research.models import ResearchState, Source, SourceQuality
from foundry_mcp.research.prompts.synthesizer import SYNTHESIZER_SYSTEM, synthesizer_prompts
from foundry_mcp.research.workflow.fitting.findings import FINDING_FLOOR_TOKENS, fit_findings
from foundry_mcp.research.workflow.fitting.fitter import Fitting, Rebuild

STATED_SUMMARY = (
    "The writer did not finish this report in time (see Time Limit): what it did not write up "
    "lists the findings as the analysis extracted them, each with its sources."
)
UNFITTED_SUMMARY = (
    "The model's context window could not hold what this report's summary and conclusion are "
    "written from, so they were not written: the sections below state the findings, each with "
    "its sources (the research's warnings say what did not fit)."
)

# A fenced block of the mode's material (prompts/fence.py): its text holds no tag of ours.
_BLOCK = re.compile(r"^(<(\w+)\b[^>\n]*>\n)(.*?)(\n</\2>)$", re.DOTALL | re.MULTILINE)


@dataclass
class FrameFit:
    """The frame's own material and what its last prompt kept of it and of the findings."""

    note: str  # the body sections written elsewhere, never cut
    material: str | None = None  # the mode's fenced blocks (sub-answers), cut as it shrinks
    findings: int = 0  # the findings it is given (a sub-answer stands for the others)
    shown: int = 0
    material_scale: float = 1.0

    def material_at(self, scale: float, counter: TokenCounter) -> str:
        """The material and the note, each of the material's blocks cut to ``scale``."""
        self.material_scale = min(1.0, scale)
        material = self.material
        if material and scale < 1.0:
            material = shortened_blocks(material, scale, counter)
        return f"{material.strip()}\n\n{self.note}" if material else self.note

    def cut(self) -> bool:
        """Whether the frame's last prompt went without some of its findings or material."""
        return self.shown < self.findings or (bool(self.material) and self.material_scale < 1.0)

    def warning(self, window: int) -> str:
        """What the frame's last prompt went without, for the research's warnings."""
        cut = f"{self.shown} of its {self.findings} findings"
        if self.material and self.material_scale < 1.0:
            cut += f", the sub-answers shortened to about {self.material_scale:.0%}"
        return (
            f"The model's window ({window:,} tokens) could not hold the report frame's whole "
            f"prompt: the title, summary and conclusion were written from {cut}; the body "
            "sections state every finding."
        )


def shortened_blocks(material: str, scale: float, counter: TokenCounter) -> str:
    """``material`` with the text of each fenced block cut to ``scale`` of its tokens (its
    beginning kept: an answer's conclusion comes first), the tags and the rest untouched."""

    def cut(block: re.Match[str]) -> str:
        opening, _, text, closing = block.groups()
        target = max(FINDING_FLOOR_TOKENS, math.floor(counter.count(text) * scale))
        return opening + truncate_to_tokens(text, target, counter, "…") + closing

    return _BLOCK.sub(cut, material)


def whole_report_builder(
    fitting: Fitting,
    state: ResearchState,
    sources: Sequence[Source],
    guidance: str | None,
    *,
    system: str = SYNTHESIZER_SYSTEM,
    material: str | None = None,
    offered: set[str],
    summarized: frozenset[str] = frozenset(),
    summary_sources: frozenset[str] = frozenset(),
    frame: FrameFit | None = None,
) -> Rebuild:
    """The prompts of a call written from every finding (the whole report, or the frame).

    With token management the findings are fitted to ``scale`` of the synthesis budget, the
    fitting recorded at full scale; ``offered`` is set to the sources the prompt lists. The
    ``summarized`` findings are fitted but not shown: the sub-answers in ``material`` stand for
    them, and of their sources only those the answers cite (``summary_sources``) stay listed.
    A ``frame`` (whose sections carry the findings) takes its material from there, and may go
    without findings and material (see the module); it records what its last prompt kept.
    """
    high_quality = sum(1 for s in state.sources if s.quality is SourceQuality.HIGH)

    def build(scale: float) -> tuple[str, str]:
        findings, listed = state.findings, list(sources)
        gaps, contradictions = state.unaddressed_gaps(), state.contradictions
        written_from = material if frame is None else frame.material_at(scale, fitting.counter)
        if fitting.enabled:
            try:
                fitted = fit_findings(
                    fitting, findings, sources, gaps, contradictions, scale=scale, record=scale >= 1
                )
            except ContextExceededError:
                if frame is None:
                    raise
                # The sections state every finding: the frame may go without some of those it
                # sees, whatever allow_content_dropping.
                shown = [f for f in findings if f.id not in summarized]
                fitted = fit_findings(
                    fitting,
                    shown,
                    sources,
                    gaps,
                    contradictions,
                    scale=scale,
                    record=False,
                    allow_dropping=True,
                )
            findings, listed = fitted.findings, fitted.sources
            gaps, contradictions = fitted.gaps, fitted.contradictions
        if summarized:
            findings = [f for f in findings if f.id not in summarized]
            cited = {sid for f in findings for sid in f.source_ids} | summary_sources
            cited.update(sid for c in contradictions for sid in c.source_ids)
            listed = [s for s in listed if s.id in cited]
        if frame is not None:
            frame.findings = sum(1 for f in state.findings if f.id not in summarized)
            frame.shown = len(findings)
        offered.clear()
        offered.update(s.id for s in listed)
        return synthesizer_prompts(
            state.query,
            state.research_brief,
            findings,
            gaps,
            listed,
            state.iteration,
            state.limits.max_iterations,
            high_quality,
            guidance,
            contradictions=contradictions,
            system=system + writing_rule(state.options.language),
            material=written_from,
        )

    return build


def stated_frame(state: ResearchState) -> str:
    """The report's frame written by code (its writer did not answer in time): the question
    as its title, and a summary saying where to read why."""
    return f"# {state.query.strip()[:200]}\n\n## Executive Summary\n\n{STATED_SUMMARY}\n"


def unfitted_frame(state: ResearchState) -> str:
    """The report's frame written by code (its prompt did not fit the model's window): the
    question as its title, and a summary saying so."""
    return f"# {state.query.strip()[:200]}\n\n## Executive Summary\n\n{UNFITTED_SUMMARY}\n"
