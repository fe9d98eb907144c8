"""Writing the report in parts at once, so a long report costs the time of its longest part.

A report written in one call keeps the provider busy with a single long answer (the writer is
most of a research's time with nothing else in flight). When the findings fall into two or more
topics (the sub-queries that found them, or a hierarchical research's sub-questions), each topic
becomes a body section written by its own call, from its own findings, while one more call
writes the frame (title, executive summary, contradictions, limitations, conclusion) from all of
them. At most ``max_concurrent`` calls run at once. The parts are then put together: the frame's
title and summary, the sections in topic order, the rest of the frame. A part whose call has not
answered by the deadline is written by code: a section lists its findings as the analysis stated
them, with their citations; the frame is a title and a summary saying so.

The frame's fitting covers every finding, so it is the one recorded in the content fidelity: a
section sees a subset of the same findings within the same budget and is never cut more. When a
section's material is its sub-question's answer, that answer stands for its findings in the
frame (the frame shows the answer, not the findings again), and the section is given the
answer's conclusion and caveats, not its evidence list (the section has the findings).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from foundry_mcp.research.language import writing_rule
from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.models import (
    Finding,
    ResearchState,
    Source,
    SourceQuality,
    SubQuestion,
    SubQuestionSynthesis,
)
from foundry_mcp.research.prompts.report_parts import body_sections_note, section_prompts
from foundry_mcp.research.prompts.synthesizer import (
    SYNTHESIZER_SYSTEM,
    render_sub_answers,
    synthesizer_prompts,
)
from foundry_mcp.research.workflow.deadline.pace import MIN_FINDINGS
from foundry_mcp.research.workflow.fitting.findings import fit_findings
from foundry_mcp.research.workflow.fitting.fitter import Fitting, Rebuild

MAX_SECTIONS = 6  # more topics than this are merged: a report is not a list of fragments
STATED_SUMMARY = (
    "The writer did not finish this report in time (see Time Limit): what it did not write up "
    "lists the findings as the analysis extracted them, each with its sources."
)

_FENCED_REPORT = re.compile(r"^```(?:markdown|md)?\s*\n(.*)\n```\s*$", re.DOTALL)
_LEVEL_TWO = re.compile(r"^##\s+\S", re.MULTILINE)
_TITLE = re.compile(r"^#\s+\S", re.MULTILINE)
_SUMMARY = re.compile(r"^##\s+(executive\s+)?summary\b", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class ReportSection:
    """A body section to write: its topic, its findings, and what else it may cite."""

    topic: str
    finding_ids: tuple[str, ...]
    material: str | None = None  # fenced blocks placed before its findings (a sub-answer)
    citable: frozenset[str] = frozenset()
    summarized: tuple[str, ...] = ()  # the findings its sub-answer stands for in the frame


@dataclass
class WrittenReport:
    """The draft, the ids of the sources the writer calls were given (or the parts written by
    code cite), and how many of its parts the deadline left to code."""

    draft: str
    offered: set[str] = field(default_factory=set)
    unwritten: int = 0
    parts: int = 1


def unwrap_fence(text: str) -> str:
    """A report the model wrapped in a markdown code fence, unwrapped."""
    text = text.strip()
    match = _FENCED_REPORT.match(text)
    return match.group(1).strip() if match else text


def sections_by_sub_query(state: ResearchState) -> list[ReportSection]:
    """One section per sub-query whose sources gave findings (none when fewer than two).

    A finding goes to the sub-query of its first source that has one, else to the largest
    section; more than ``MAX_SECTIONS`` topics are merged, the smallest into a neighbour.
    """
    if len(state.findings) < MIN_FINDINGS:
        return []
    queries = {sq.id: sq.query for sq in state.sub_queries}
    found_by = {s.id: s.sub_query_id for s in state.sources if s.sub_query_id in queries}
    groups: dict[str, list[str]] = {sq_id: [] for sq_id in queries}
    homeless: list[str] = []
    for finding in state.findings:
        key = next((found_by[sid] for sid in finding.source_ids if sid in found_by), None)
        (groups[key] if key is not None else homeless).append(finding.id)
    sections = [ReportSection(queries[key], tuple(ids)) for key, ids in groups.items() if ids]
    if len(sections) < 2:
        return []
    if homeless:
        largest = max(sections, key=lambda section: len(section.finding_ids))
        sections[sections.index(largest)] = merged(largest, ReportSection("", tuple(homeless)))
    return merge_smallest(sections)


def sections_by_sub_question(
    state: ResearchState, answers: Sequence[tuple[SubQuestion, SubQuestionSynthesis]]
) -> list[ReportSection]:
    """One section per sub-question with an answer or findings: its answer (if its researcher
    wrote one before it stopped) and the findings it found."""
    answer_of = {sub_question.id: answer for sub_question, answer in answers}
    sections = []
    for sub_question in state.sub_questions:
        ids = tuple(f.id for f in state.findings if f.sub_question_id == sub_question.id)
        answer = answer_of.get(sub_question.id)
        if answer is None and not ids:
            continue
        answered = [(sub_question.question, answer)] if answer else []
        sections.append(
            ReportSection(
                sub_question.question,
                ids,
                material=render_sub_answers(answered, evidence=False) if answer else None,
                citable=frozenset(answer.citations) if answer else frozenset(),
                summarized=ids if answer else (),
            )
        )
    if len(sections) < 2:
        return []
    return merge_smallest(sections)


def merged(first: ReportSection, second: ReportSection) -> ReportSection:
    """Two sections as one: both topics, findings, materials and citable sources."""
    topic = "; ".join(t for t in (first.topic, second.topic) if t)
    materials = [m.strip() for m in (first.material, second.material) if m]
    return ReportSection(
        topic,
        first.finding_ids + second.finding_ids,
        material="\n\n".join(materials) or None,
        citable=first.citable | second.citable,
        summarized=first.summarized + second.summarized,
    )


def merge_smallest(sections: list[ReportSection], limit: int = MAX_SECTIONS) -> list[ReportSection]:
    """``sections`` merged, the smallest into its smaller neighbour, until at most ``limit``."""
    sections = list(sections)

    def size(k: int) -> int:
        return len(sections[k].finding_ids)

    while len(sections) > max(1, limit):
        i = min(range(len(sections)), key=size)
        if i == 0:
            j = 1
        elif i == len(sections) - 1:
            j = i - 1
        else:
            j = i - 1 if size(i - 1) <= size(i + 1) else i + 1
        first, second = sorted((i, j))
        sections[first : second + 1] = [merged(sections[first], sections[second])]
    return sections


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
) -> Rebuild:
    """The prompts of a call written from every finding (the whole report, or the frame).

    With token management the findings are fitted to ``scale`` of the synthesis budget, the
    fitting recorded at full scale; ``offered`` is set to the sources the prompt lists. The
    ``summarized`` findings are fitted but not shown: the sub-answers in ``material`` stand for
    them, and of their sources only those the answers cite (``summary_sources``) stay listed.
    """
    high_quality = sum(1 for s in state.sources if s.quality is SourceQuality.HIGH)

    def build(scale: float) -> tuple[str, str]:
        findings, listed = state.findings, list(sources)
        gaps, contradictions = state.unaddressed_gaps(), state.contradictions
        if fitting.enabled:
            fitted = fit_findings(
                fitting, findings, sources, gaps, contradictions, scale=scale, record=scale >= 1.0
            )
            findings, listed = fitted.findings, fitted.sources
            gaps, contradictions = fitted.gaps, fitted.contradictions
        if summarized:
            findings = [f for f in findings if f.id not in summarized]
            cited = {sid for f in findings for sid in f.source_ids} | summary_sources
            cited.update(sid for c in contradictions for sid in c.source_ids)
            listed = [s for s in listed if s.id in cited]
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
            material=material,
        )

    return build


def section_builder(
    fitting: Fitting,
    state: ResearchState,
    section: ReportSection,
    sources: Sequence[Source],
    guidance: str | None,
    offered: set[str],
) -> Rebuild:
    """The prompts of one section's call: its findings fitted, never recorded."""
    wanted = set(section.finding_ids)
    findings: list[Finding] = [f for f in state.findings if f.id in wanted]
    cited = {sid for f in findings for sid in f.source_ids} | section.citable
    own_sources = [s for s in sources if s.id in cited]

    def build(scale: float) -> tuple[str, str]:
        kept, listed = findings, own_sources
        if fitting.enabled:
            fitted = fit_findings(fitting, findings, own_sources, [], [], scale=scale, record=False)
            kept = fitted.findings
            titled = {s.id: s for s in fitted.sources}
            listed = [
                titled.get(s.id, s)
                for s in own_sources
                if s.id in titled or s.id in section.citable
            ]
        offered.clear()
        offered.update(s.id for s in listed)
        system, user = section_prompts(
            state.query,
            state.research_brief,
            section.topic,
            kept,
            listed,
            guidance,
            material=section.material,
        )
        return system + writing_rule(state.options.language), user

    return build


async def write_in_parts(
    fitting: Fitting,
    state: ResearchState,
    sections: Sequence[ReportSection],
    sources: Sequence[Source],
    guidance: str | None,
    *,
    frame_system: str,
    material: str | None,
    max_tokens: int,
    end_by: float = math.inf,
) -> WrittenReport:
    """The frame and every section written concurrently, then put together (see module); the
    parts not written by ``end_by`` (anyio's clock: a deadline's) are written by code."""
    note = body_sections_note([s.topic for s in sections])
    frame_offered: set[str] = set()
    frame = whole_report_builder(
        fitting,
        state,
        sources,
        guidance,
        system=frame_system,
        material=f"{material.strip()}\n\n{note}" if material else note,
        offered=frame_offered,
        summarized=frozenset(fid for s in sections for fid in s.summarized),
        summary_sources=frozenset().union(*(s.citable for s in sections if s.summarized)),
    )
    offered_by: list[set[str]] = [set() for _ in sections]
    builders: list[Rebuild] = [frame] + [
        section_builder(fitting, state, section, sources, guidance, offered_by[n])
        for n, section in enumerate(sections)
    ]
    texts: list[str] = [""] * len(builders)
    written: set[int] = set()
    semaphore = anyio.Semaphore(max(1, state.limits.max_concurrent))

    async def write(index: int) -> None:
        async with semaphore:
            system, user = builders[index](1.0)
            purpose = "synthesis" if index == 0 else f"synthesis:section-{index}"
            text = await fitting.ask(
                purpose,
                system,
                user,
                json_mode=False,
                max_tokens=max_tokens,
                rebuild=builders[index],
            )
            text = unwrap_fence(text)
            texts[index] = text if index == 0 else without_title(text)
            written.add(index)

    # The frame first, then the sections with the most findings: the longest parts start first.
    order = sorted(range(1, len(builders)), key=lambda i: -len(sections[i - 1].finding_ids))
    # The cost ceiling is checked once: a report is not left half written.
    with fitting.llm.finishing(), anyio.CancelScope(deadline=end_by):
        await fan_out(write, [0, *order])
    unwritten = [index for index in range(len(texts)) if index not in written]
    for index in unwritten:
        if index == 0:
            texts[0] = stated_frame(state)
            continue
        wanted = set(sections[index - 1].finding_ids)
        findings = [f for f in state.findings if f.id in wanted]
        texts[index] = stated_section(sections[index - 1].topic, findings)
        offered_by[index - 1].update(sid for f in findings for sid in f.source_ids)
    offered = frame_offered.union(*offered_by)
    return WrittenReport(assemble(texts[0], texts[1:]), offered, len(unwritten), len(texts))


def stated_report(state: ResearchState) -> WrittenReport:
    """The whole report written by code (its writer did not answer in time): a frame saying
    so, and every finding as the analysis stated it, with its citations."""
    cited = {sid for finding in state.findings for sid in finding.source_ids}
    draft = assemble(stated_frame(state), [stated_section("", state.findings)])
    return WrittenReport(draft, cited, unwritten=1)


def stated_section(topic: str, findings: Sequence[Finding]) -> str:
    """A body section written by code (its writer did not answer in time): ``topic`` as its
    heading, then each finding as the analysis stated it, with its citations."""
    heading = topic.strip() or "Findings"
    lines = [f"## {heading[:1].upper()}{heading[1:]}", ""]
    for finding in findings:
        text = " ".join(finding.content.split())
        words, mark = (text[:-1], text[-1]) if text[-1:] in (".", "!", "?") else (text, ".")
        lines.append(f"- {words} {''.join(f'[{sid}]' for sid in finding.source_ids)}{mark}")
    return "\n".join(lines) + "\n"


def stated_frame(state: ResearchState) -> str:
    """The report's frame written by code (its writer did not answer in time): the question
    as its title, and a summary saying where to read why."""
    return f"# {state.query.strip()[:200]}\n\n## Executive Summary\n\n{STATED_SUMMARY}\n"


def without_title(section: str) -> str:
    """A section without the report title a model may have put above it."""
    first, _, rest = section.partition("\n")
    return rest.strip() if _TITLE.match(first) else section


def assemble(frame: str, sections: Sequence[str]) -> str:
    """The frame's title and summary, then ``sections`` in order, then the rest of the frame.

    The body goes before the frame's first level-two heading after its summary; a frame
    without one gets the body at its end.
    """
    body = "\n\n".join(s.strip() for s in sections if s.strip())
    frame = frame.strip()
    opening = _SUMMARY.search(frame) or _TITLE.search(frame)
    start = opening.end() if opening else 0
    following = _LEVEL_TWO.search(frame, start)
    if following is None:
        return f"{frame}\n\n{body}\n" if frame else f"{body}\n"
    head, tail = frame[: following.start()].rstrip(), frame[following.start() :].strip()
    return f"{head}\n\n{body}\n\n{tail}\n"
