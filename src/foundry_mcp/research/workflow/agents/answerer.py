"""The sub-question answerer: each sub-question's own cited answer (seed 000, phase 5).

It is the writer of a sub-question's researcher in hierarchical mode. The answer (direct answer,
evidence, citations, caveats, confidence) is kept as structured data on the researcher's state
for the meta-synthesis; a markdown rendering becomes the researcher's report. When the model's
answer cannot be read, or the call fails, the answer is built from the findings, with a note.
"""

from __future__ import annotations

import re
from collections import Counter

from pydantic import Field, field_validator

from foundry_mcp.context.errors import ContextExceededError
from foundry_mcp.errors import ProviderError
from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    AgentRole,
    Confidence,
    Finding,
    ReportMetadata,
    ResearchState,
    Source,
    SubQuestionSynthesis,
    SynthesizerOutput,
)
from foundry_mcp.research.models.base import _Model
from foundry_mcp.research.prompts.answerer import answerer_prompts
from foundry_mcp.research.workflow.fitting.findings import fit_findings
from foundry_mcp.research.workflow.fitting.fitter import Fitting

LEGACY_MAX_TOKENS = 2048
FALLBACK_EVIDENCE = 5
_CITATION = re.compile(r"\[(src-[0-9a-f]{8})\]")


class _Draft(_Model):
    direct_answer: str = ""
    evidence: list[str] = Field(default_factory=list)
    caveats: list[str] = Field(default_factory=list)
    confidence: Confidence = Confidence.MEDIUM

    @field_validator("evidence", "caveats", mode="before")
    @classmethod
    def _lines(cls, value: object) -> object:
        if isinstance(value, str):
            return [line.strip(" -*") for line in value.splitlines() if line.strip(" -*")]
        return value if isinstance(value, list) else []

    @field_validator("confidence", mode="before")
    @classmethod
    def _lenient_confidence(cls, value: object) -> object:
        text = str(value or "").strip().lower()
        return text if text in ("low", "medium", "high") else "medium"


async def answer_sub_question(
    llm: ResearchLLM, state: ResearchState, guidance: str | None
) -> SynthesizerOutput:
    """Answer the researcher's sub-question from its findings; see the module."""
    if not state.findings:
        answer = SubQuestionSynthesis(
            direct_answer="The research found no evidence that answers this sub-question.",
            caveats=["No finding was extracted from the sources searched for it."],
            confidence=Confidence.LOW,
            fallback="no findings",
        )
        return _finish(state, answer)
    cited = {sid for f in state.findings for sid in f.source_ids}
    sources = [s for s in state.sources if s.id in cited]
    fitting = await Fitting.open(llm, state, "synthesis")
    shown: set[str] = set()
    written_from: list[int] = []  # how many findings the last prompt held, when not all

    def build(scale: float) -> tuple[str, str]:
        findings: list[Finding] = list(state.findings)
        listed: list[Source] = sources
        if fitting.enabled:
            try:
                fitted = fit_findings(
                    fitting, findings, sources, [], [], scale=scale, record=scale >= 1.0
                )
            except ContextExceededError:
                # The report's sections state every finding of the sub-question: its answer
                # may rest on the strongest of them, whatever allow_content_dropping.
                fitted = fit_findings(
                    fitting,
                    findings,
                    sources,
                    [],
                    [],
                    scale=scale,
                    record=False,
                    allow_dropping=True,
                )
                written_from[:] = [len(fitted.findings)]
            findings, listed = fitted.findings, fitted.sources
        shown.clear()
        shown.update(s.id for s in listed)
        return answerer_prompts(
            state.query, state.parent_query or state.query, findings, listed, guidance
        )

    system, user = build(1.0)
    try:
        draft = await ask_json(
            fitting.json_ask("synthesis", LEGACY_MAX_TOKENS, build),
            system,
            user,
            _Draft,
            state=state,
            agent=AgentRole.SYNTHESIZER,
        )
    except ProviderError as exc:
        if exc.kind == "budget":
            raise
        return _finish(state, _from_findings(state, f"the answer could not be written: {exc}"))
    if draft is None or not draft.direct_answer.strip():
        return _finish(state, _from_findings(state, "the model's answer could not be read"))
    if written_from:
        state.warn(
            f"The answer to the sub-question '{state.query[:120]}' was written from "
            f"{written_from[0]} of its {len(state.findings)} findings, all the model's window "
            "holds; the report's sections state every finding."
        )
    direct = _keep_citations(draft.direct_answer, shown)
    evidence = [line for e in draft.evidence if (line := _keep_citations(e, shown))]
    citations = list(dict.fromkeys(_CITATION.findall(" ".join([direct, *evidence]))))
    answer = SubQuestionSynthesis(
        direct_answer=direct,
        evidence=evidence,
        citations=citations,
        caveats=[c.strip() for c in draft.caveats if c.strip()],
        confidence=draft.confidence,
    )
    return _finish(state, answer)


def _keep_citations(text: str, citable: set[str]) -> str:
    """``text`` without citations of sources the answerer was not shown."""
    kept = _CITATION.sub(lambda m: m.group(0) if m.group(1) in citable else "", text)
    return " ".join(kept.split())


def _from_findings(state: ResearchState, reason: str) -> SubQuestionSynthesis:
    """The answer made of the strongest findings themselves, when no model answer is usable."""
    state.record_fallback(
        AgentRole.SYNTHESIZER,
        f"The answer to the sub-question '{state.query[:120]}' was built from its findings: "
        f"{reason}.",
    )
    rank = {Confidence.CONFIRMED: 0, Confidence.HIGH: 1, Confidence.MEDIUM: 2}
    strongest = sorted(state.findings, key=lambda f: rank.get(f.confidence, 3))
    evidence = [
        f"{f.content.strip()} {''.join(f'[{sid}]' for sid in f.source_ids)}"
        for f in strongest[:FALLBACK_EVIDENCE]
    ]
    levels = Counter(f.confidence for f in state.findings)
    confidence = (
        Confidence.HIGH
        if levels[Confidence.HIGH] > len(state.findings) / 2
        else (Confidence.MEDIUM)
    )
    return SubQuestionSynthesis(
        direct_answer="The findings below bear on this sub-question; they were not synthesised.",
        evidence=evidence,
        citations=list(
            dict.fromkeys(sid for f in strongest[:FALLBACK_EVIDENCE] for sid in f.source_ids)
        ),
        caveats=[f"No written answer: {reason}."],
        confidence=confidence,
        fallback=reason,
    )


def _finish(state: ResearchState, answer: SubQuestionSynthesis) -> SynthesizerOutput:
    state.answer = answer
    lines = [f"### {state.query.strip()}", "", answer.direct_answer]
    if answer.evidence:
        lines += ["", "Evidence:", *[f"- {line}" for line in answer.evidence]]
    if answer.caveats:
        lines += ["", "Caveats:", *[f"- {line}" for line in answer.caveats]]
    lines += ["", f"Confidence: {answer.confidence.value}"]
    report = "\n".join(lines) + "\n"
    metadata = ReportMetadata(
        word_count=len(report.split()),
        citations_count=len(_CITATION.findall(report)),
        sources_cited=len(answer.citations),
        sources_examined=len(state.sources),
        cited_source_ids=answer.citations,
    )
    return SynthesizerOutput(report=report, report_metadata=metadata)
