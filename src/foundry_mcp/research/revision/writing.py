"""The report written again, as the caller asked: form, audience, length, language, corrections.

It is written from the research's findings and sources as they stand (a deepen's and a
refresh's merged in), by the synthesizer, so its citations are resolved and its cited
sentences checked as any report's. The full report keeps the research mode's sections; a
brief, a table or a memo is written in one call under its own instructions. A deepen's or a
refresh's section on what it changed is written by code and added to the report
(:mod:`.changes`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

from foundry_mcp.research.models import (
    BranchStatus,
    ReportForm,
    ResearchMode,
    ResearchOptions,
    ResearchState,
    Revision,
    RevisionKind,
    WritingInstructions,
)
from foundry_mcp.research.modes.exploration import exploration_section, numbered
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.prompts.hypotheses import HYPOTHESES_WRITER_SYSTEM, render_outcomes
from foundry_mcp.research.prompts.report_parts import META_FRAME_SYSTEM
from foundry_mcp.research.prompts.revision import (
    BRIEF_SYSTEM,
    MEMO_SYSTEM,
    TABLE_SYSTEM,
    revision_guidance,
)
from foundry_mcp.research.prompts.synthesizer import META_SYSTEM, render_sub_answers
from foundry_mcp.research.revision.changes import changes_section
from foundry_mcp.research.workflow.agents.structurer import shape_answer
from foundry_mcp.research.workflow.deadline.ceiling import TimeCeiling
from foundry_mcp.research.workflow.report.parts import (
    sections_by_sub_query,
    sections_by_sub_question,
)
from foundry_mcp.research.workflow.report.synthesizer import Writing, synthesize

# The forms written in one call, by their writer's instructions.
ONE_CALL_SYSTEMS: dict[ReportForm, str] = {
    ReportForm.BRIEF: BRIEF_SYSTEM,
    ReportForm.TABLE: TABLE_SYSTEM,
    ReportForm.MEMO: MEMO_SYSTEM,
}


async def write_again(kit: ResearchKit, state: ResearchState, revision: Revision) -> None:
    """Write the research's report again for ``revision``: ``state.report``, its metadata and
    its claim checks are the new version's."""
    instructions = revision.instructions
    writing = writing_for(state, instructions.form, changes_section(state, revision))
    with in_language(state.options, instructions.language):
        output = await synthesize(kit.llm, state, guidance_for(instructions), writing)
    state.report, state.report_metadata = output.report, output.report_metadata
    # An answer in the caller's shape is made from the findings: new ones make it again.
    if state.options.output_schema is not None and revision.kind is not RevisionKind.REWRITE:
        ceiling = TimeCeiling.current()  # the revision's (the research's began long ago)
        await shape_answer(kit.llm, state, end_by=ceiling.finish_by() if ceiling else math.inf)


def guidance_for(instructions: WritingInstructions) -> str | None:
    """The writer's guidance from what the caller asked (None: nothing beyond the form)."""
    return revision_guidance(
        audience=instructions.audience,
        length_words=instructions.length_words,
        corrections=instructions.corrections,
    )


def writing_for(state: ResearchState, form: ReportForm, appendix: str | None = None) -> Writing:
    """What the synthesizer is given to write ``form`` of the research's report, with
    ``appendix`` (a section written by code) added to it.

    The full report is written as the research's mode writes it: in sections by sub-query, by
    sub-question (with their answers) or, for hypotheses, with their outcomes and the
    exploration section. The other forms are one call under their own instructions, with a
    hierarchical research's sub-answers as material.
    """
    material, citable = _sub_answers(state)
    if form is not ReportForm.REPORT:
        return Writing(
            system=ONE_CALL_SYSTEMS[form], material=material, citable=citable, appendix=appendix
        )
    if state.mode is ResearchMode.HIERARCHICAL:
        answered = [(sq, sq.synthesis) for sq in state.sub_questions if sq.synthesis is not None]
        return Writing(
            system=META_SYSTEM,
            material=material,
            citable=citable,
            sections=tuple(sections_by_sub_question(state, answered)),
            frame_system=META_FRAME_SYSTEM,
            appendix=appendix,
        )
    if state.mode is ResearchMode.HYPOTHESES:
        explored = numbered(state, BranchStatus.COMPLETED)
        return Writing(
            system=HYPOTHESES_WRITER_SYSTEM,
            material=render_outcomes(explored) if explored else None,
            appendix=_joined(exploration_section(state), appendix),
        )
    return Writing(sections=tuple(sections_by_sub_query(state)), appendix=appendix)


@contextmanager
def in_language(options: ResearchOptions, language: str | None) -> Iterator[None]:
    """The report written in ``language`` within the block (None: the research's own); the
    research keeps its own language after, for the versions to come."""
    if language is None:
        yield
        return
    saved = options.language, options.language_from_question
    options.language, options.language_from_question = language, False
    try:
        yield
    finally:
        options.language, options.language_from_question = saved


def _sub_answers(state: ResearchState) -> tuple[str | None, frozenset[str]]:
    """A hierarchical research's sub-answers as the writer's material, and what they cite."""
    if state.mode is not ResearchMode.HIERARCHICAL:
        return None, frozenset()
    answers = [(sq.question, sq.synthesis) for sq in state.sub_questions if sq.synthesis]
    if not answers:
        return None, frozenset()
    cited = frozenset(sid for _, answer in answers for sid in answer.citations)
    return render_sub_answers(answers), cited


def _joined(*sections: str | None) -> str | None:
    return "\n\n".join(s.strip() for s in sections if s) or None
