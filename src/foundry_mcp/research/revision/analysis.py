"""A revision's analysis: the new and changed pages read, the findings they no longer support
judged.

The analyst (:func:`analyze`, with the research's readings: each page once) reads only what a
deepen or a refresh brought: the new pages, and of a changed page what it says now that it did
not (its added sentences, when its earlier text is still in memory; the whole new text after a
resume). The other pages are not read again. Each new finding joins the research under the
sub-question its pages belong to (hierarchical mode).

A finding of the version before that cites a changed page is then judged against the page's new
text: when the passage it rests on is unchanged it stands without asking; otherwise the
research's fact-checker (:mod:`foundry_mcp.research.verification`) reads the new text's
excerpts for it. A finding the new text does not support loses that citation, and leaves the
research when no other source is left to support it (kept in ``changes.dropped_findings``, so
the version can say what no longer holds). Nothing new and nothing changed: no model is asked.
"""

from __future__ import annotations

from collections.abc import Sequence

from foundry_mcp.research.models import (
    Finding,
    ResearchState,
    Revision,
    RevisionKind,
    Source,
    Verdict,
    VerificationSummary,
)
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.revision.pages import added_text, removed_keys, touches
from foundry_mcp.research.verification.excerpts import ExcerptSelector
from foundry_mcp.research.verification.judge import judge_claims
from foundry_mcp.research.workflow.agents.analyzer import analyze


async def analyze_new(kit: ResearchKit, state: ResearchState, revision: Revision) -> None:
    """Read the revision's new and changed pages, and judge the earlier findings resting on
    the changed ones (see the module); the new findings' ids go to ``changes.new_finding_ids``,
    those dropped to ``changes.dropped_finding_ids``."""
    state.iteration = revision.iteration
    changes = revision.changes
    by_id = state.source_by_id()
    new = [by_id[sid] for sid in changes.new_source_ids if sid in by_id]
    changed = [by_id[sid] for sid in changes.changed_source_ids if sid in by_id]
    if not new and not changed:
        return
    readings = [s for s in new if not s.analyzed]
    for source in changed:
        if not source.analyzed:
            reading = _reading_of(source, revision)
            if reading.content:
                readings.append(reading)
            else:  # it only lost sentences: nothing to read, its findings are judged below
                source.analyzed = True
    if readings:
        await analyze(
            kit.llm,
            state,
            _guidance(state, revision),
            kit.checkpoint,
            sources=readings,
            ledger=kit.repeats,
            readings=kit.readings,
        )
        for source in changed:
            source.analyzed = True
    before = set(revision.finding_ids_before)
    for finding in state.findings:
        if finding.id not in before and finding.id not in changes.new_finding_ids:
            changes.new_finding_ids.append(finding.id)
    _file_under_parts(state, changes.new_finding_ids)
    if changed:
        await _judge_earlier(kit, state, revision, changed)
    await kit.checkpoint()


def _reading_of(source: Source, revision: Revision) -> Source:
    """What of a changed page the analyst reads: what it added to the text it had (the whole
    new text when that is not known); the same id, so its findings cite the page."""
    earlier = revision.earlier_texts.get(source.id)
    if earlier is None or source.content is None:
        return source
    return source.model_copy(update={"content": added_text(earlier, source.content), "snippet": ""})


def _guidance(state: ResearchState, revision: Revision) -> str:
    if revision.kind is RevisionKind.DEEPEN:
        question = revision.part_question or revision.part or state.query
        return (
            "These pages were found to research one part of the question further: "
            f"{' '.join(question.split())}. Extract what they say on it."
        )
    since = f" since {revision.since:%Y-%m-%d}" if revision.since else ""
    return (
        f"These pages are new{since}, or are what a cited page says now that it did not "
        "before: extract what they add."
    )


def _file_under_parts(state: ResearchState, finding_ids: Sequence[str]) -> None:
    """Hierarchical: each new finding under the sub-question its first cited page belongs to."""
    if not state.sub_questions:
        return
    sources = state.source_by_id()
    questions = {sq.id: sq for sq in state.sub_questions}
    wanted = set(finding_ids)
    for finding in state.findings:
        if finding.id not in wanted or finding.sub_question_id is not None:
            continue
        part = next(
            (
                branch
                for sid in finding.source_ids
                if sid in sources
                for branch in sources[sid].branches
                if branch in questions
            ),
            None,
        )
        if part is None:
            continue
        finding.sub_question_id = part
        if part not in finding.parts:
            finding.parts.append(part)
        if finding.id not in questions[part].finding_ids:
            questions[part].finding_ids.append(finding.id)


async def _judge_earlier(
    kit: ResearchKit, state: ResearchState, revision: Revision, changed: list[Source]
) -> None:
    """Judge the earlier findings citing a changed page against its new text (see the
    module)."""
    pages = {s.id: s for s in changed}
    before = set(revision.finding_ids_before)
    now = ExcerptSelector(pages)
    then = _earlier_excerpts(pages, revision)
    removed = {
        sid: removed_keys(text, pages[sid].content or "")
        for sid, text in revision.earlier_texts.items()
        if sid in pages
    }
    asked: list[tuple[Finding, list[str]]] = []
    for finding in state.findings:
        if finding.id not in before:
            continue
        touched = [
            sid
            for sid in finding.source_ids
            if sid in pages
            and (
                sid not in then  # its earlier text is not known: judged again
                or any(
                    touches(passage, removed[sid])
                    for _, passage in then[sid].excerpts(finding.content, [sid])
                )
            )
        ]
        if touched:
            asked.append((finding, touched))
    if not asked:
        return
    items = [(finding.content, now.excerpts(finding.content, cited)) for finding, cited in asked]
    judged = await judge_claims(kit.llm, state, items, VerificationSummary())
    judged.warn(state)
    for (finding, cited), (_, excerpts), (verdict, _reason) in zip(
        asked, items, judged.answers, strict=True
    ):
        if verdict is Verdict.UNSUPPORTED or not excerpts:
            _withdraw(state, revision, finding, cited)


def _earlier_excerpts(pages: dict[str, Source], revision: Revision) -> dict[str, ExcerptSelector]:
    """For each changed page whose earlier text is known, the excerpts of that text."""
    return {
        sid: ExcerptSelector({sid: pages[sid].model_copy(update={"content": text})})
        for sid, text in revision.earlier_texts.items()
        if sid in pages
    }


def _withdraw(
    state: ResearchState, revision: Revision, finding: Finding, unsupported: list[str]
) -> None:
    """``finding`` no longer rests on ``unsupported``: it keeps its other sources, or leaves."""
    remaining = [sid for sid in finding.source_ids if sid not in unsupported]
    if remaining:
        finding.source_ids = remaining
        return
    changes = revision.changes
    state.findings = [f for f in state.findings if f.id != finding.id]
    for sub_question in state.sub_questions:
        if finding.id in sub_question.finding_ids:
            sub_question.finding_ids.remove(finding.id)
    if finding.id not in changes.dropped_finding_ids:
        changes.dropped_finding_ids.append(finding.id)
        changes.dropped_findings.append(finding.model_copy(deep=True))
