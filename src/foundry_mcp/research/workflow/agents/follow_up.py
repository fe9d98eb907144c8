"""The follow-up answerer: a further question on a completed research, answered from what it
saved, without a new search.

The passages of the research's sources that bear most on the question (across its pages,
within :data:`READING_TOKENS`, by :func:`~foundry_mcp.context.reading.across.read_within`, as a
research's reading chooses them, but recorded nowhere: see
:mod:`foundry_mcp.research.workflow.reading`) and the findings that share its words are shown
to the model, each source under its number in the report (sources the report does not cite
are numbered after its own, in the order they were gathered). The model answers citing those
numbers, or says the sources do not answer. The answer's cited sentences then go through the
research's citation checks (:func:`~foundry_mcp.research.verification.verify_draft`): an
unsupported sentence is removed, a partly supported one marked, and the quotes behind the
sentences left standing are the answer's evidence. An answer with no cited sentence left
standing answers nothing.

:func:`answer_follow_up` changes the state it is given (its claim checks, its usage): give it a
scratch copy of the research's.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial

import anyio
from pydantic import field_validator

from foundry_mcp.context.reading.across import Page
from foundry_mcp.context.reading.elsewhere import reading_processes
from foundry_mcp.context.reading.focus import focus_terms
from foundry_mcp.context.reading.passages import PassageIndex
from foundry_mcp.context.tokens import counter_for_model
from foundry_mcp.errors import ProviderError
from foundry_mcp.research.export.document import source_numbers
from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    AgentRole,
    ClaimCheck,
    Finding,
    FollowUp,
    FollowUpQuote,
    ResearchState,
    Verdict,
)
from foundry_mcp.research.models.base import _Model
from foundry_mcp.research.prompts.analyzer import source_text
from foundry_mcp.research.prompts.follow_up import ShownSource, follow_up_prompts
from foundry_mcp.research.verification import CITATION, verify_draft

PURPOSE = "synthesis:follow_up"  # written like the report, by the synthesis providers
READING_TOKENS = 6_000  # of page text shown with the question
MAX_FINDINGS = 12  # findings shown, those sharing most words with the question
MAX_ANSWER_TOKENS = 1_500
MIN_CHECKED_CLAIMS = 20  # an answer's sentences are checked whatever the research's own cap
NOT_ANSWERED = "The sources this research saved do not answer this question."

# A bracket of source numbers, as the answer cites them: "[2]", "[1, 3]".
_NUMBERED = re.compile(r"(?P<space>[ \t]*)\[\s*(?P<numbers>\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\s*\]")
_SOURCE_ID = re.compile(r"src-[\w-]+")
_CITED_IDS = re.compile(r"(?P<space>[ \t]*)" + CITATION.pattern)


class _Answer(_Model):
    answerable: bool = True
    answer: str = ""
    reason: str = ""

    @field_validator("answerable", mode="before")
    @classmethod
    def _lenient_flag(cls, value: object) -> bool:
        if isinstance(value, str):
            return value.strip().lower() not in ("false", "no", "0", "")
        return bool(value)

    @field_validator("answer", "reason", mode="before")
    @classmethod
    def _text(cls, value: object) -> str:
        return value.strip() if isinstance(value, str) else ""


async def answer_follow_up(llm: ResearchLLM, state: ResearchState, question: str) -> FollowUp:
    """``question`` answered from ``state``'s sources (their page text loaded); see the module.

    ``ProviderError`` when the model cannot be reached or its answer cannot be read.
    """
    numbers = source_numbers(state)
    model = llm.model_for(PURPOSE)[1]
    shown, findings = await anyio.to_thread.run_sync(_reading, state, question, numbers, model)
    if not shown and not findings:
        return FollowUp(
            question=question,
            answer=NOT_ANSWERED,
            answerable=False,
            reason="The research saved no source text to answer from.",
        )
    system, user = follow_up_prompts(state.query, question, findings, numbers, shown)
    draft = await ask_json(
        partial(llm.ask, PURPOSE, json_mode=True, max_tokens=MAX_ANSWER_TOKENS),
        system,
        user,
        _Answer,
        state=state,
        agent=AgentRole.SYNTHESIZER,
    )
    if draft is None:
        raise ProviderError(
            "The model's answer to the follow-up question could not be read.",
            provider=llm.model_for(PURPOSE)[0],
            retryable=True,
            remediation="Ask the question again; a rephrased question may help.",
        )
    ids = {n: source_id for source_id, n in numbers.items()}
    state.options.max_verified_claims = max(state.options.max_verified_claims, MIN_CHECKED_CLAIMS)
    verified = await verify_draft(llm, state, with_ids(draft.answer, ids), state.source_by_id())
    answer = with_numbers(verified.markdown, numbers).strip()
    source_ids = cited_ids(verified.markdown)
    standing = [c for c in verified.checks if c.verdict is not Verdict.UNSUPPORTED]
    answerable, reason = draft.answerable, draft.reason
    if answerable and not standing:
        answerable = False
        reason = (
            "None of the answer's cited sentences is backed by the sources' text."
            if verified.checks
            else "The answer cited no source."
        )
        answer, source_ids = f"{NOT_ANSWERED} {reason}", []
    return FollowUp(
        question=question,
        answer=answer or NOT_ANSWERED,
        answerable=answerable,
        source_ids=source_ids,
        quotes=quotes(verified.checks, numbers),
        verdicts=verdicts(verified.checks),
        reason=reason,
    )


def _reading(
    state: ResearchState, question: str, numbers: Mapping[str, int], model: str
) -> tuple[list[ShownSource], list[Finding]]:
    """The passages shown, by source in number order, and the findings shown. The question's
    words weigh twice the research question's (a follow-up is read for its own words, and for
    the research's subject where it names nothing the pages say). CPU work: off the loop."""
    counter = counter_for_model(model)
    terms = focus_terms(question, question, state.query)
    readable = sorted((s for s in state.sources if source_text(s)), key=lambda s: numbers[s.id])
    pages = [Page(s.id, source_text(s)) for s in readable]
    chosen = reading_processes().read_within(pages, terms, READING_TOKENS, counter)
    shown = [
        ShownSource(numbers[source.id], source.title, source.url, selection.text)
        for source, selection in zip(readable, chosen, strict=True)
        if selection.text
    ]
    return shown, relevant_findings(state.findings, focus_terms(question))


def relevant_findings(findings: Sequence[Finding], terms: Sequence[str]) -> list[Finding]:
    """At most :data:`MAX_FINDINGS` of ``findings`` sharing words with ``terms``, best first."""
    if not findings or not terms:
        return []
    scores = PassageIndex.from_passages([f.content for f in findings]).scores(terms)
    ranked = sorted(range(len(findings)), key=lambda i: (-scores[i], i))
    return [findings[i] for i in ranked[:MAX_FINDINGS] if scores[i] > 0]


def with_ids(answer: str, ids: Mapping[int, str]) -> str:
    """``answer`` with its number citations as the source ids the checks read: "[2]" becomes
    "[src-...]"; a number that names no source is dropped, as the report drops an unknown id."""

    def replace(match: re.Match[str]) -> str:
        found = [ids[int(n)] for n in re.findall(r"\d+", match.group("numbers")) if int(n) in ids]
        known = list(dict.fromkeys(found))
        return f"{match.group('space')}[{', '.join(known)}]" if known else ""

    return _NUMBERED.sub(replace, answer)


def with_numbers(answer: str, numbers: Mapping[str, int]) -> str:
    """``answer`` with its source-id citations as the numbers the reader sees: "[1][3]"."""

    def replace(match: re.Match[str]) -> str:
        found = [numbers[s] for s in _SOURCE_ID.findall(match.group(2)) if s in numbers]
        refs = "".join(f"[{n}]" for n in dict.fromkeys(found))
        return match.group("space") + refs if refs else ""

    return _CITED_IDS.sub(replace, answer)


def cited_ids(answer: str) -> list[str]:
    """The source ids an answer citing ids cites, in the order first cited."""
    return list(dict.fromkeys(_SOURCE_ID.findall(" ".join(CITATION.findall(answer)))))


def quotes(checks: Sequence[ClaimCheck], numbers: Mapping[str, int]) -> list[FollowUpQuote]:
    """The passages behind the answer's supported and partly supported sentences, each once."""
    found: dict[tuple[str, str], FollowUpQuote] = {}
    for check in checks:
        if check.verdict not in (Verdict.SUPPORTED, Verdict.PARTIAL):
            continue
        for quote in check.quotes:
            if quote.source_id in numbers:
                found.setdefault(
                    (quote.source_id, quote.text),
                    FollowUpQuote(
                        source_id=quote.source_id,
                        number=numbers[quote.source_id],
                        quote=quote.text,
                    ),
                )
    return list(found.values())


def verdicts(checks: Sequence[ClaimCheck]) -> dict[str, int]:
    """How many of the answer's cited sentences got each verdict."""
    counts = Counter(check.verdict for check in checks)
    return {verdict.value: counts[verdict] for verdict in Verdict}
