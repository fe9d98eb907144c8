"""A research written out for other tools: the markdown report, the state as JSON (one pydantic
model is its shape and its published schema), and the cited sources as BibTeX or RIS (written
by :mod:`.citations`).

The JSON export is an allow-list: only the fields of ``ResearchExport`` leave the state, so
nothing a future state field holds (headers, keys, free-form metadata) is exported by accident.
Every format is plain text (:mod:`foundry_mcp.plain`): what a page or a model wrote reaches the
file without the control sequences a terminal would obey.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from foundry_mcp.errors import InputError, ReportNotReadyError
from foundry_mcp.plain import plain, plain_within
from foundry_mcp.research.export.citations import bibtex_entry, ris_entry, source_doi
from foundry_mcp.research.export.footer import with_cost_footer
from foundry_mcp.research.export.formats import EXPORT_FORMATS

if TYPE_CHECKING:
    from foundry_mcp.research.models import ResearchState, Source

EXPORT_VERSION: Literal[1] = 1


class _Export(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExportedSource(_Export):
    id: str
    number: int | None  # its [n] in the report; None: gathered but not cited
    title: str
    url: str | None
    doi: str | None
    provider: str
    quality: str
    snippet: str
    # What the search API said of it as a publication (a paper, a dated news article).
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    venue: str | None = None


class ExportedFinding(_Export):
    id: str
    content: str
    confidence: str
    category: str | None
    source_ids: list[str]


class ExportedQuote(_Export):
    source_id: str
    text: str
    start: int
    end: int
    field: str


class ExportedClaimCheck(_Export):
    sentence: str
    verdict: str
    reason: str
    source_ids: list[str]
    quotes: list[ExportedQuote]
    repaired_from: list[str]


class ExportedFollowUpQuote(_Export):
    source_id: str
    number: int
    quote: str


class ExportedFollowUpSource(_Export):
    source_id: str
    number: int  # its [n] in the answer: the report's, or after the report's for one it omits


class ExportedFollowUp(_Export):
    """A follow-up question asked once the research completed, and its answer."""

    id: str
    question: str
    answer: str  # markdown citing sources as [n]
    answerable: bool
    reason: str
    sources: list[ExportedFollowUpSource]  # cited, first cited first
    quotes: list[ExportedFollowUpQuote]
    verdicts: dict[str, int]
    gap_id: str | None
    asked_at: datetime


class ExportedVersion(_Export):
    """One version of the report: what made it, its text, its evidence and what it cost."""

    number: int
    kind: str  # research, rewrite, deepen, refresh
    instructions: dict[str, Any] | None  # a rewrite's form, audience, length, language...
    part: str | None  # a deepen's part, as named
    created_at: datetime
    report: str
    cited_source_ids: list[str]
    finding_ids: list[str]
    changes: dict[str, Any] | None  # what a deepen or a refresh found (ids, dropped findings)
    cost: dict[str, Any]  # total and by_phase (tokens, calls, cost_usd), search_calls


class ExportedUsage(_Export):
    input_tokens: int
    output_tokens: int
    llm_calls: int
    search_calls: int
    cost_usd: float  # an estimate from list prices
    unpriced_calls: int


class ResearchExport(_Export):
    """The ``json`` export of one research."""

    model_config = ConfigDict(extra="forbid", title="foundry-mcp research export")

    export_version: Literal[1] = EXPORT_VERSION
    research_id: str
    question: str
    status: str
    mode: str
    llm: str  # provider:model
    created_at: datetime
    completed_at: datetime | None
    exported_at: datetime
    report: str | None
    sources: list[ExportedSource]
    findings: list[ExportedFinding]
    claim_checks: list[ExportedClaimCheck]
    follow_ups: list[ExportedFollowUp] = Field(default_factory=list)
    usage: ExportedUsage
    # Started with an output_schema: the schema, and the answer in its shape with its sources.
    output_schema: dict[str, Any] | None = None
    # data, citations (by JSON pointer), unknown, valid, ... as deep-research-report's answer
    answer: dict[str, Any] | None = None
    # The report's version exported (report above), and every version once it was revised.
    version: int | None = None
    versions: list[ExportedVersion] = Field(default_factory=list)


def schema() -> dict[str, Any]:
    """The JSON schema of the ``json`` export."""
    return ResearchExport.model_json_schema()


def render(state: ResearchState, fmt: str, *, now: datetime, version: int | None = None) -> str:
    """The research in ``fmt``; every format but ``json`` needs the report. ``version``: the
    number of the report's version ``state`` holds (the markdown says it, once revised)."""
    if fmt not in EXPORT_FORMATS:
        raise InputError(
            f"format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}.",
            remediation=f"Use format one of: {', '.join(EXPORT_FORMATS)}.",
            details={"field": "format"},
        )
    if fmt == "json":
        # Escaped in JSON, a page's control sequence would still act once a reader prints the
        # string: every string is made plain, as the other formats are.
        exported = plain_within(to_model(state, now=now, version=version).model_dump())
        return ResearchExport.model_validate(exported).model_dump_json(indent=2)
    if state.report is None:
        raise ReportNotReadyError(
            f"Research {state.id} has no report yet; format {fmt!r} exports the report.",
            remediation=(
                "Wait for the research to complete (or resume it), or export format='json' for "
                "the state so far."
            ),
        )
    if fmt == "markdown":
        text = with_cost_footer(state, appendix=follow_up_section(state))
        note = version_note(state, version)
        return plain(f"{text.rstrip()}\n\n{note}\n" if note else text)
    sources = cited(state)
    if fmt == "bibtex":
        return plain("\n".join(bibtex_entry(s, accessed=now.date()) for s in sources))
    return plain("".join(ris_entry(s, accessed=now.date()) for s in sources))


def cited(state: ResearchState) -> list[Source]:
    """The report's cited sources in report order ([1], [2], ...)."""
    ids = state.report_metadata.cited_source_ids if state.report_metadata else []
    by_id = state.source_by_id()
    return [by_id[sid] for sid in ids if sid in by_id]


def source_numbers(state: ResearchState) -> dict[str, int]:
    """Every source's number: its [n] in the report's Sources, then the sources the report does
    not cite, in the order they were gathered (how a follow-up answer cites them)."""
    numbers = {source.id: n for n, source in enumerate(cited(state), start=1)}
    for source in state.sources:
        numbers.setdefault(source.id, len(numbers) + 1)
    return numbers


def follow_up_section(state: ResearchState) -> str:
    """The markdown export's "Follow-up questions": each question, its answer and the sources
    it cites ("" when none was asked)."""
    if not state.follow_ups:
        return ""
    numbers = source_numbers(state)
    by_id = state.source_by_id()
    lines = ["## Follow-up questions"]
    for follow_up in state.follow_ups:
        lines += ["", f"### {' '.join(follow_up.question.split())}", "", follow_up.answer.strip()]
        if not follow_up.answerable:
            lines += ["", "*The saved sources do not answer it.*"]
        listed = [
            f"[{numbers[sid]}] {_entry(by_id[sid])}"
            for sid in follow_up.source_ids
            if sid in by_id and sid in numbers
        ]
        if listed:
            lines += ["", "Sources:", "", *listed]
    return "\n".join(lines) + "\n"


def _entry(source: Source) -> str:
    title = " ".join(source.title.split()) or "Untitled"
    return f"{title} - {source.url}" if source.url else title


def version_note(state: ResearchState, number: int | None) -> str:
    """The markdown export's last line once the report has versions: which one it is and what
    made it ("" before any revision)."""
    version = next((v for v in state.versions if v.number == number), None)
    if version is None:
        return ""
    made = {
        "research": "the research's own report",
        "rewrite": "a rewrite",
        "deepen": f"a deepen of {version.part!r}" if version.part else "a deepen",
        "refresh": "a refresh",
    }.get(version.kind.value, version.kind.value)
    asked = version.instructions
    if asked is not None:
        how = [asked.form.value if asked.form.value != "report" else ""]
        how += [f"for {asked.audience}" if asked.audience else ""]
        how += [f"about {asked.length_words:,} words" if asked.length_words else ""]
        how += [asked.language or "", "with corrections" if asked.corrections else ""]
        if said := ", ".join(" ".join(part.split()) for part in how if part):
            made += f" ({said})"
    last = state.versions[-1].number
    return f"*Version {version.number} of {last}: {made}, {version.created_at:%Y-%m-%d}.*"


def exported_versions(state: ResearchState) -> list[ExportedVersion]:
    return [
        ExportedVersion(
            number=v.number,
            kind=v.kind.value,
            instructions=v.instructions.model_dump(mode="json", exclude_none=True)
            if v.instructions
            else None,
            part=v.part,
            created_at=v.created_at,
            report=v.report,
            cited_source_ids=v.cited_source_ids,
            finding_ids=list(v.finding_ids),
            changes=v.changes.model_dump(mode="json") if v.changes else None,
            cost=v.cost.model_dump(mode="json"),
        )
        for v in state.versions
    ]


def to_model(state: ResearchState, *, now: datetime, version: int | None = None) -> ResearchExport:
    numbers = {source.id: n for n, source in enumerate(cited(state), start=1)}
    answered = source_numbers(state)  # as the follow-ups cite them
    usage = state.llm_usage.total
    return ResearchExport(
        research_id=state.id,
        question=state.query,
        status=state.status.value,
        mode=state.mode.value,
        llm=f"{state.llm_provider}:{state.llm_model}",
        created_at=state.created_at,
        completed_at=state.completed_at,
        exported_at=now,
        report=with_cost_footer(state) if state.report is not None else None,
        sources=[
            ExportedSource(
                id=s.id,
                number=numbers.get(s.id),
                title=s.title,
                url=s.url,
                doi=source_doi(s),
                provider=s.provider,
                quality=s.quality.value,
                snippet=s.snippet,
                authors=list(s.publication.authors) if s.publication else [],
                year=s.publication.year if s.publication else None,
                venue=s.publication.venue if s.publication else None,
            )
            for s in state.sources
        ],
        findings=[
            ExportedFinding(
                id=f.id,
                content=f.content,
                confidence=f.confidence.value,
                category=f.category,
                source_ids=list(f.source_ids),
            )
            for f in state.findings
        ],
        claim_checks=[
            ExportedClaimCheck(
                sentence=c.sentence,
                verdict=c.verdict.value,
                reason=c.reason,
                source_ids=list(c.source_ids),
                quotes=[ExportedQuote(**q.model_dump()) for q in c.quotes],
                repaired_from=list(c.repaired_from),
            )
            for c in state.claim_checks
        ],
        follow_ups=[
            ExportedFollowUp(
                id=f.id,
                question=f.question,
                answer=f.answer,
                answerable=f.answerable,
                reason=f.reason,
                sources=[
                    ExportedFollowUpSource(source_id=sid, number=answered[sid])
                    for sid in f.source_ids
                    if sid in answered
                ],
                quotes=[ExportedFollowUpQuote(**q.model_dump()) for q in f.quotes],
                verdicts=dict(f.verdicts),
                gap_id=f.gap_id,
                asked_at=f.asked_at,
            )
            for f in state.follow_ups
        ],
        usage=ExportedUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            llm_calls=usage.calls,
            search_calls=state.search_calls,
            cost_usd=round(usage.cost_usd, 6),
            unpriced_calls=usage.unpriced_calls,
        ),
        output_schema=state.options.output_schema,
        answer=answer.model_dump(mode="json") if (answer := state.structured_answer) else None,
        version=version,
        versions=exported_versions(state),
    )
