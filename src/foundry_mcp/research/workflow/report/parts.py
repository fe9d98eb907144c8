"""Writing the report in parts at once, so a long report costs the time of its longest part.

A report written in one call keeps the provider busy with a single long answer (the writer is
most of a research's time with nothing else in flight). When the findings fall into two or more
topics (the sub-queries that found them, or a hierarchical research's sub-questions), each topic
becomes a body section written by its own call, from its own findings, while one more call
writes the frame (title, executive summary, contradictions, limitations, conclusion) from all of
them. At most ``max_concurrent`` calls run at once. The parts are then put together: the frame's
title and summary, the sections in topic order, the rest of the frame. A part whose call has not
answered by the deadline is written by code: a section lists its findings as the analysis stated
them, with their citations; the frame is a title and a summary saying so. So is a part whose
prompt no shortening fits to the model's window (the frame shortens further first, see
:mod:`foundry_mcp.research.workflow.report.frame`), with a warning: a small window never fails
the research.

The frame's fitting covers every finding, so it is the one recorded in the content fidelity: a
section sees a subset of the same findings within the same budget and is never cut more (when
their shortest forms do not fit, the frame goes without some and records nothing: its sections
show them). When a section's material is its sub-question's answer, that answer stands for its findings in the
frame (the frame shows the answer, not the findings again), and the section is given the
answer's conclusion and caveats, not its evidence list (the section has the findings).
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio

from foundry_mcp.context.errors import ContextExceededError
from foundry_mcp.errors import ProviderError
from foundry_mcp.research.language import writing_rule
from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.models import (
    Finding,
    ResearchState,
    Source,
    SubQuestion,
    SubQuestionSynthesis,
)
from foundry_mcp.research.prompts.report_parts import body_sections_note, section_prompts
from foundry_mcp.research.prompts.synthesizer import render_sub_answers
from foundry_mcp.research.workflow.deadline.pace import MIN_FINDINGS
from foundry_mcp.research.workflow.fitting.findings import fit_findings
from foundry_mcp.research.workflow.fitting.fitter import Fitting, Rebuild, is_context_overflow
from foundry_mcp.research.workflow.report.frame import (
    FrameFit,
    stated_frame,
    unfitted_frame,
    whole_report_builder,
)

MAX_SECTIONS = 6  # more topics than this are merged: a report is not a list of fragments

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
    on_written: Callable[[str], Awaitable[None]] | None = None,
) -> WrittenReport:
    """The frame and every section written concurrently, then put together (see module); the
    parts not written by ``end_by`` (anyio's clock: a deadline's) are written by code, and so
    are those whose prompt no shortening fits to the model's window (each with a warning).
    ``on_written`` is given each part the writer wrote, as it comes (the others go on)."""
    frame_fit = FrameFit(body_sections_note([s.topic for s in sections]), material)
    frame_offered: set[str] = set()
    frame = whole_report_builder(
        fitting,
        state,
        sources,
        guidance,
        system=frame_system,
        offered=frame_offered,
        summarized=frozenset(fid for s in sections for fid in s.summarized),
        summary_sources=frozenset().union(*(s.citable for s in sections if s.summarized)),
        frame=frame_fit,
    )
    offered_by: list[set[str]] = [set() for _ in sections]
    builders: list[Rebuild] = [frame] + [
        section_builder(fitting, state, section, sources, guidance, offered_by[n])
        for n, section in enumerate(sections)
    ]
    texts: list[str] = [""] * len(builders)
    written: set[int] = set()
    unfitted: dict[int, str] = {}  # part -> why its prompt fits no shortening
    semaphore = anyio.Semaphore(max(1, state.limits.max_concurrent))

    async def write(index: int) -> None:
        async with semaphore:
            purpose = "synthesis" if index == 0 else f"synthesis:section-{index}"
            try:
                system, user = builders[index](1.0)
                text = await fitting.ask(
                    purpose,
                    system,
                    user,
                    json_mode=False,
                    max_tokens=max_tokens,
                    rebuild=builders[index],
                )
            except (ContextExceededError, ProviderError) as exc:
                if isinstance(exc, ProviderError) and not is_context_overflow(exc):
                    raise
                unfitted[index] = exc.message
                return
            text = unwrap_fence(text)
            texts[index] = text if index == 0 else without_title(text)
            written.add(index)
        if on_written is not None:
            await on_written(texts[index])

    def stated(index: int) -> str:
        wanted = set(sections[index - 1].finding_ids)
        findings = [f for f in state.findings if f.id in wanted]
        offered_by[index - 1].update(sid for f in findings for sid in f.source_ids)
        return stated_section(sections[index - 1].topic, findings)

    # The frame first, then the sections with the most findings: the longest parts start first.
    order = sorted(range(1, len(builders)), key=lambda i: -len(sections[i - 1].finding_ids))
    # The cost ceiling is checked once: a report is not left half written.
    with fitting.llm.finishing(), anyio.CancelScope(deadline=end_by):
        await fan_out(write, [0, *order], in_turn=True)
    window = fitting.budget.context_window
    if 0 in written and frame_fit.cut():
        state.warn(frame_fit.warning(window))
    for index, why in sorted(unfitted.items()):
        if index == 0:
            texts[0] = unfitted_frame(state)
            frame_offered.clear()
        else:
            texts[index] = stated(index)
        topic = sections[index - 1].topic if index else None
        state.warn(unfitted_warning(topic, window, why, fitting.options.allow_content_dropping))
    unwritten = [i for i in range(len(texts)) if i not in written and i not in unfitted]
    for index in unwritten:
        texts[index] = stated(index) if index else stated_frame(state)
    offered = frame_offered.union(*offered_by)
    return WrittenReport(assemble(texts[0], texts[1:]), offered, len(unwritten), len(texts))


def unfitted_warning(topic: str | None, window: int, why: str, dropping: bool) -> str:
    """What the research's warnings say of a part (the frame when ``topic`` is None) written
    by code because no shortening fitted its prompt to the model's ``window`` (``why``);
    ``dropping``: whether the research lets content be dropped (then never advised)."""
    part = "frame (title, summary, conclusion)" if topic is None else f"section on {topic!r}"
    done = (
        "it was written by code: the report opens with its body sections, written as usual"
        if topic is None
        else "its findings are listed as the analysis stated them, each with its sources"
    )
    advice = (
        "A model with a larger window writes it (or give the model's true window in [research] "
        "model_context_overrides)"
    )
    if topic is not None and not dropping:
        advice += "; so does allow_content_dropping = true, leaving out its least findings"
    return (
        f"The report's {part} did not fit the model's window ({window:,} tokens) even "
        f"shortened ({why.rstrip('.')}), so {done}. {advice}."
    )


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
