"""The answer structurer: the research's answer as JSON in the caller's ``output_schema``.

One call writes the answer from the research's findings (the most confident first, within
:data:`MAX_FINDINGS`), each value citing the sources of the findings that state it; one more
call repairs an answer that does not validate against the schema with nulls allowed at its
leaves. Each value is then fact-checked as a sentence of the report is: a claim naming the
value in its context ("requests — licence: Apache-2.0") is judged against excerpts of its
sources. A value its sources do not state becomes null, with the reason under ``unknown``; a
value kept carries, by JSON pointer, its sources' numbers in the report and a verbatim quote.
Nothing is invented to fill the shape: a value no finding states stays null.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
from pydantic import Field, field_validator

from foundry_mcp.errors import ProviderError
from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    AgentRole,
    Confidence,
    EvidenceQuote,
    Finding,
    ResearchState,
    Source,
    StructuredAnswer,
    ValueSource,
    Verdict,
    VerificationSummary,
)
from foundry_mcp.research.models.base import _Model
from foundry_mcp.research.prompts.structurer import repair_prompts, structurer_prompts
from foundry_mcp.research.verification.excerpts import ExcerptSelector
from foundry_mcp.research.verification.judge import judge_claims
from foundry_mcp.research.verification.quotes import quotes_for
from foundry_mcp.research.workflow.deadline.ceiling import TimeCeiling
from foundry_mcp.research.workflow.report.answer_check import answer_errors, check_answer
from foundry_mcp.research.workflow.report.answer_schema import nullable
from foundry_mcp.research.workflow.report.json_pointers import (
    get_at,
    leaves,
    set_at,
    to_pointer,
    tokens_of,
)

PURPOSE = "synthesis"  # written like the report, by the synthesis providers
MAX_ANSWER_TOKENS = 4_000
MAX_FINDINGS = 80  # the most confident findings shown
MAX_FINDING_CHARS = 1_000  # of one finding's text
QUOTE_CHARS = 300
CONTEXT_VALUES = 3  # sibling strings naming what a value is about, in its claim
CONTEXT_CHARS = 80  # of each
NO_SOURCE = "no source cited"
NOT_STATED = "no finding states it"
_CONFIDENCE_RANK = {
    Confidence.CONFIRMED: 0,
    Confidence.HIGH: 1,
    Confidence.MEDIUM: 2,
    Confidence.LOW: 3,
    Confidence.SPECULATION: 4,
}
_KEPT = (Verdict.SUPPORTED, Verdict.PARTIAL)


class _Draft(_Model):
    """The model's answer as the prompt asks for it, leniently read."""

    answer: Any = None
    sources: dict[str, list[str]] = Field(default_factory=dict)
    unknown: dict[str, str] = Field(default_factory=dict)

    @field_validator("sources", mode="before")
    @classmethod
    def _cited(cls, value: object) -> dict[str, list[str]]:
        if not isinstance(value, dict):
            return {}
        cited: dict[str, list[str]] = {}
        for pointer, ids in value.items():
            listed = [ids] if isinstance(ids, str) else ids if isinstance(ids, list) else []
            cited[_pointer(str(pointer))] = [str(i).strip() for i in listed if i]
        return cited

    @field_validator("unknown", mode="before")
    @classmethod
    def _reasons(cls, value: object) -> dict[str, str]:
        if not isinstance(value, dict):
            return {}
        return {_pointer(str(k)): " ".join(str(v or "").split()) for k, v in value.items()}


@dataclass
class _Value:
    """One non-null value to check: its pointer, claim, cited sources and evidence."""

    pointer: str
    value: Any
    claim: str
    source_ids: list[str]
    excerpts: list[tuple[str, str]]
    quotes: list[EvidenceQuote]


async def shape_answer(
    llm: ResearchLLM, state: ResearchState, *, end_by: float = math.inf
) -> StructuredAnswer:
    """The answer of ``state`` (its sources' text loaded) in ``state.options.output_schema``;
    also set as ``state.structured_answer``. See the module. A provider error gives an answer
    without data and a warning; only cancellation is raised. ``end_by`` (anyio's clock) ends
    the fact-checks, the values not judged by then kept unverified."""
    schema = state.options.output_schema
    if schema is None:
        return StructuredAnswer(errors=["The research was not given an output_schema."])
    findings = chosen_findings(state.findings)
    try:
        draft = await _write(llm, state, schema, findings)
    except ProviderError as exc:
        return _failed(state, f"The structured answer could not be written: {exc.message}")
    if draft is None:
        return _failed(state, "The model's structured answer could not be read as JSON.")
    answer = await _check(llm, state, draft, end_by)
    fit = await check_answer(answer.data, schema)  # off the loop, bounded
    answer.strict_valid, answer.valid, answer.errors = fit.strict_valid, fit.valid, fit.errors
    if fit.note:
        state.warn(fit.note)
    state.structured_answer = answer
    state.emit(
        "structured_answer",
        {"valid": answer.valid, "checked": answer.checked, "removed": answer.removed},
    )
    return answer


async def shape_answer_in_time(llm: ResearchLLM, state: ResearchState) -> StructuredAnswer:
    """:func:`shape_answer` within the research's ``max_time_s``: its value checks end with
    the report's deadline (those not judged by then kept unverified), and an answer not
    written by the deadline itself is left out, saying so, rather than overrun it."""
    ceiling = TimeCeiling.start(state, llm)
    with anyio.move_on_after(ceiling.left()) as shaping:
        return await shape_answer(llm, state, end_by=ceiling.finish_by())
    assert shaping.cancelled_caught
    return _failed(
        state,
        f"max_time_s ({ceiling.max_time_s:g} s) ran out before the answer in the output_schema's "
        "shape was written; the report is complete. Give a larger max_time_s for both.",
    )


def chosen_findings(findings: Sequence[Finding]) -> list[Finding]:
    """At most :data:`MAX_FINDINGS` findings citing a source, the most confident first (in
    their order otherwise), each cut to :data:`MAX_FINDING_CHARS`."""
    cited = [f for f in findings if f.source_ids]
    ranked = sorted(cited, key=lambda f: _CONFIDENCE_RANK.get(f.confidence, 5))[:MAX_FINDINGS]
    return [
        f.model_copy(update={"content": _cut_words(f.content, MAX_FINDING_CHARS)})
        if len(f.content) > MAX_FINDING_CHARS
        else f
        for f in ranked
    ]


async def _write(
    llm: ResearchLLM, state: ResearchState, schema: dict[str, Any], findings: list[Finding]
) -> _Draft | None:
    """The model's answer, asked again once (the first prompt, the answer and the errors shown)
    when it cannot be read or does not validate with nulls allowed: the repaired one unless it
    is worse, None when neither can be read. A provider error on the first call is raised; on
    the repair call, the first answer is kept."""
    system, user = structurer_prompts(state.query, schema, findings)
    lenient = nullable(schema)
    return await ask_json(
        partial(llm.ask, PURPOSE, json_mode=True, max_tokens=MAX_ANSWER_TOKENS),
        system,
        user,
        _Draft,
        state=state,
        agent=AgentRole.SYNTHESIZER,
        check=lambda draft: answer_errors(draft.answer, lenient),
        repair=partial(repair_prompts, state.query, schema, findings),
    )


async def _check(
    llm: ResearchLLM, state: ResearchState, draft: _Draft, end_by: float
) -> StructuredAnswer:
    """``draft``'s values fact-checked against their sources; see the module."""
    data = draft.answer
    sources = state.source_by_id()
    values = (
        await anyio.to_thread.run_sync(_evidence, data, draft.sources, sources)
        if isinstance(data, dict | list)
        else []
    )
    answer = StructuredAnswer(data=data)
    cap = max(0, state.options.max_verified_claims)
    to_judge = [v for v in values if v.source_ids and v.excerpts][:cap]
    judged = await judge_claims(
        llm, state, [(v.claim, v.excerpts) for v in to_judge], VerificationSummary(), end_by
    )
    judged.warn(state)
    verdicts = {v.pointer: result for v, result in zip(to_judge, judged.answers, strict=True)}
    numbers = state.citation_numbers()
    unverified = 0
    for value in values:
        if not value.source_ids:
            set_at(data, value.pointer, None)
            answer.unknown[value.pointer] = NO_SOURCE
            continue
        verdict, reason = verdicts.get(value.pointer, (None, ""))
        if verdict is Verdict.UNSUPPORTED:
            set_at(data, value.pointer, None)
            answer.unknown[value.pointer] = " ".join(
                f"its sources do not state it: {reason}".rstrip(": ").split()
            )
            answer.removed += 1
            continue
        if verdict is None:
            unverified += 1
        answer.citations[value.pointer] = [
            _cited(sources[sid], value, numbers, (verdict or Verdict.UNVERIFIED).value)
            for sid in _stating(value)
        ]
    answer.checked = len(to_judge)
    answer.supported = sum(1 for verdict, _ in judged.answers if verdict in _KEPT)
    for pointer, leaf in leaves(data) if values else []:
        if leaf is None and pointer not in answer.unknown:
            answer.unknown[pointer] = draft.unknown.get(pointer) or NOT_STATED
    if unverified:
        state.warn(
            f"{unverified} value(s) of the structured answer were not fact-checked (no source "
            "text, the check cap, or the fact-checker unavailable); they are kept, marked "
            "unverified."
        )
    return answer


def _evidence(
    data: Any, cited: Mapping[str, list[str]], sources: Mapping[str, Source]
) -> list[_Value]:
    """Every non-null value of ``data`` with its claim, its known cited sources and their
    excerpts and quotes. CPU work (the sources' sentences are indexed): off the loop."""
    selector = ExcerptSelector(sources)
    values = []
    for pointer, value in leaves(data):
        if value is None:
            continue
        known = list(dict.fromkeys(sid for sid in cited.get(pointer, []) if sid in sources))
        claim = claim_text(data, pointer, value)
        excerpts = selector.excerpts(claim, known) if known else []
        values.append(_Value(pointer, value, claim, known, excerpts, quotes_for(sources, excerpts)))
    return values


def claim_text(data: Any, pointer: str, value: Any) -> str:
    """The value at ``pointer`` as a claim the fact-checker can judge: its key and the value,
    after the strings of the object it belongs to, which name what it is about (none for a
    value of the root object): "requests — licence: Apache-2.0"."""
    tokens = tokens_of(pointer)
    containers = [get_at(data, to_pointer(tokens[:end])) for end in range(len(tokens))]
    keys = [t for t, held in zip(tokens, containers, strict=True) if isinstance(held, dict)]
    key = (keys[-1] if keys else "value").replace("_", " ")
    said = json.dumps(value) if isinstance(value, bool) else str(value)
    # The nearest object holding the value (beyond the arrays it is in), unless the root.
    owner = next(
        (end for end in range(len(tokens) - 1, 0, -1) if isinstance(containers[end], dict)), 0
    )
    context: list[str] = []
    if owner:
        context = [
            _cut_words(" ".join(item.split()), CONTEXT_CHARS)
            for name, item in containers[owner].items()
            if name != tokens[owner] and isinstance(item, str) and item.strip()
        ][:CONTEXT_VALUES]
    return f"{', '.join(context)} — {key}: {said}" if context else f"{key}: {said}"


def _stating(value: _Value) -> list[str]:
    """The cited sources whose quotes state the value word for word, when some do (a model
    cites every source of the finding it took a value from; not each states each value);
    else all of them, as the fact-checker judged them together."""
    said = re.compile(rf"(?<![\w.-]){re.escape(str(value.value))}(?![\w-]|\.\d)", re.IGNORECASE)
    stating = [
        sid
        for sid in value.source_ids
        if any(q.source_id == sid and said.search(q.text) for q in value.quotes)
    ]
    return stating or value.source_ids


def _cited(source: Source, value: _Value, numbers: Mapping[str, int], verdict: str) -> ValueSource:
    return ValueSource(
        number=numbers.get(source.id),
        source_id=source.id,
        url=source.url,
        title=source.title,
        quote=best_quote([q for q in value.quotes if q.source_id == source.id], value.value),
        verdict=verdict,
    )


def best_quote(quotes: Sequence[EvidenceQuote], value: Any) -> str:
    """The first quote stating ``value`` (else the first), at most :data:`QUOTE_CHARS` long
    around the value, verbatim (cut at word boundaries only)."""
    if not quotes:
        return ""
    said = str(value).lower()
    quote = next((q.text for q in quotes if said in q.text.lower()), quotes[0].text)
    if len(quote) <= QUOTE_CHARS:
        return quote
    at = max(0, quote.lower().find(said))
    start = max(0, min(at - QUOTE_CHARS // 3, len(quote) - QUOTE_CHARS))
    end = start + QUOTE_CHARS
    if start > 0 and 0 <= (space := quote.find(" ", start)) < at:
        start = space + 1
    if end < len(quote) and (space := quote.rfind(" ", start, end)) > max(start, at):
        end = space
    return quote[start:end].strip()


def _failed(state: ResearchState, message: str) -> StructuredAnswer:
    state.warn(message)
    answer = StructuredAnswer(errors=[message])
    state.structured_answer = answer
    return answer


def _pointer(text: str) -> str:
    """A JSON pointer as a model may write it ("#/rows/0", "rows/0") in RFC 6901 form."""
    text = text.strip().removeprefix("#")
    return text if not text or text.startswith("/") else f"/{text}"


def _cut_words(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 2)
    return text[: cut if cut > 0 else limit - 2].rstrip() + " …"
