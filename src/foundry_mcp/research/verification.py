"""Checking every cited sentence of a report against the text of the sources it cites.

The writer cites ``[src-...]`` ids; asking it for citations does not make them true. After the
draft is written, each body sentence that carries a citation becomes a *claim*. For each claim
the passages of its cited sources that share the most content words with it are selected, and
a fact-checker model judges, a batch of claims per call, whether those excerpts back it:

- ``supported``: the sentence stays as written;
- ``partial``: the sentence stays, marked ``*(partly supported)*`` right after its words (before
  its closing punctuation and citations);
- ``unsupported``: the sentence is removed from the report (a table row loses its line);
- ``unverified``: the judge could not be asked (claim cap, provider error) or gave no readable
  verdict; the sentence stays as written.

A claim that cites only ids the research does not know is ``unsupported`` without asking the
model. Splitting the draft, selecting excerpts, applying verdicts and writing the Evidence
Quality section are plain functions; only :func:`verify_draft` talks to the model.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from foundry_mcp.context.passages import PASSAGE_MAX_CHARS as PASSAGE_MAX_CHARS
from foundry_mcp.context.passages import PASSAGE_MIN_CHARS as PASSAGE_MIN_CHARS
from foundry_mcp.context.passages import PassageIndex
from foundry_mcp.context.passages import content_words as content_words
from foundry_mcp.context.passages import split_passages as split_passages
from foundry_mcp.errors import ProviderError
from foundry_mcp.research.models import (
    ClaimCheck,
    ResearchState,
    Source,
    Verdict,
    VerificationSummary,
)
from foundry_mcp.research.prompts.verifier import ClaimEvidence, verifier_prompts
from foundry_mcp.research.workflow.calls import ResearchLLM
from foundry_mcp.research.workflow.fanout import fan_out
from foundry_mcp.research.workflow.jsonparse import parse_handoff

log = logging.getLogger(__name__)

BATCH_SIZE = 8  # claims per fact-checker call
VERIFIER_MAX_TOKENS = 2048
PASSAGES_PER_SOURCE = 2
EXCERPT_CHARS_PER_CLAIM = 1500
MIN_EXCERPT_CHARS = 120
MIN_SENTENCE_WORDS = 4  # shorter uncited lines (labels, lead-ins) are not counted
REMOVED_CLAIM_CHARS = 150
REASON_CHARS = 120
PARTIAL_MARK = "*(partly supported)*"
EVIDENCE_HEADING = "## Evidence Quality"

# --------------------------------------------------------------------------- splitting

# A bracket of one or more source ids, as the writer is told to cite: "[src-1a2b3c4d]".
CITATION = re.compile(r"\[\s*(src-[\w-]+(?:\s*[,;]\s*src-[\w-]+)*)\s*\]")
_SOURCE_ID = re.compile(r"src-[\w-]+")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})(?:\s|$)")
_SOURCES_HEADING = re.compile(
    r"^\s{0,3}#{1,6}\s*(?:sources|references|bibliography|citations|works cited|source list)"
    r"\s*:?\s*#*\s*$",
    re.IGNORECASE,
)
_RULE = re.compile(r"^\s{0,3}([-*_])(?:\s*\1){2,}\s*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_LIST_MARKER = re.compile(r"\s*(?:[-*+]|\d{1,3}[.)])\s+")  # used with match(line, pos)
_QUOTE_MARKER = re.compile(r"^\s*(?:>\s?)+")
_EMPTY_LINE_LEFT = re.compile(r"^\s*(?:>\s?)*(?:[-*+]|\d{1,3}[.)])?\s*$")
# The end of a sentence: terminal punctuation, closing quotes, any citations after it, then a
# blank and something that starts a sentence.
_SENTENCE_END = re.compile(
    r"[.!?…]+[\"'”’)\]]*(?:[ \t]*\[\s*src-[^\[\]\n]*\])*(?=\s+[\"'“‘(\[*_]*[A-Z0-9])"
)
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")
# A period after one of these (or after a single capital, an initial) ends no sentence.
_ABBREVIATIONS_TEXT = """
e.g i.e vs cf al dr mr mrs ms prof fig figs no nos vol approx inc ltd co corp jr sr st
u.s u.k e.u ca eq sec ch pp p.a
"""
_ABBREVIATIONS = frozenset(_ABBREVIATIONS_TEXT.split())
_LINK = re.compile(r"\[([^\[\]]+)\]\([^()\s]+\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")


@dataclass(frozen=True)
class Claim:
    """A sentence of the draft that cites at least one source."""

    number: int  # 1-based, in order of the draft
    sentence: str  # exactly as in the draft, citations included
    text: str  # one line without citations or markup: what the fact-checker reads
    source_ids: tuple[str, ...]
    start: int  # the sentence is draft[start:end]
    end: int
    table_row: bool = False  # removing a table row removes its line


@dataclass
class DraftClaims:
    """The claims of a draft and how many body sentences cite nothing."""

    claims: list[Claim] = field(default_factory=list)
    uncited_sentences: int = 0


def split_claims(draft: str) -> DraftClaims:
    """The cited sentences of ``draft`` and a count of its uncited ones.

    Body text only: headings, fenced code, horizontal rules, table separator lines and a
    sources/references section the writer added are skipped. A list item, a quote line and a
    table row each start a new block; a table row is one sentence. Uncited sentences shorter
    than ``MIN_SENTENCE_WORDS`` words, lead-ins ending in a colon, and uncited table rows are
    not counted.
    """
    result = DraftClaims()
    for start, end, row in _blocks(draft):
        spans = [(start, end)] if row else _sentence_spans(draft, start, end)
        for s, e in spans:
            sentence = draft[s:e]
            ids = tuple(dict.fromkeys(_SOURCE_ID.findall(" ".join(CITATION.findall(sentence)))))
            text = claim_text(sentence)
            if ids:
                if not text:
                    continue  # a bare citation with no words to check
                result.claims.append(
                    Claim(
                        number=len(result.claims) + 1,
                        sentence=sentence,
                        text=text,
                        source_ids=ids,
                        start=s,
                        end=e,
                        table_row=row,
                    )
                )
            elif not row and len(text.split()) >= MIN_SENTENCE_WORDS and not text.endswith(":"):
                result.uncited_sentences += 1
    return result


def claim_text(sentence: str) -> str:
    """A sentence without its citations and markdown markup, on one line."""
    text = CITATION.sub("", sentence)
    text = _LINK.sub(r"\1", text)
    text = _EMPHASIS.sub("", text)
    text = re.sub(r"\s*\|\s*", " | ", text).strip(" |")
    text = " ".join(text.split())
    return re.sub(r"\s+([.,;:!?])", r"\1", text)


def _blocks(draft: str) -> list[tuple[int, int, bool]]:
    """``(start, end, is_table_row)`` of each run of body text in ``draft``."""
    blocks: list[tuple[int, int, bool]] = []
    current: list[int] | None = None  # [start, end] of an open paragraph or list item
    fence: str | None = None
    skip_level = 0  # inside a sources section the writer wrote, at this heading level
    offset = 0

    def close() -> None:
        nonlocal current
        if current is not None:
            blocks.append((current[0], current[1], False))
            current = None

    for raw in draft.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        line_start, line_end = offset, offset + len(line)
        offset += len(raw)
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        fenced = _FENCE.match(line)
        if fenced:
            close()
            fence = fenced.group(1)
            continue
        heading = _HEADING.match(line)
        if heading:
            close()
            level = len(heading.group(1))
            if skip_level and level <= skip_level:
                skip_level = 0
            if _SOURCES_HEADING.match(line):
                skip_level = level
            continue
        if skip_level or not line.strip() or _RULE.match(line):
            close()
            continue
        if _TABLE_SEPARATOR.match(line) and "-" in line:
            close()
            continue
        stripped = line.strip()
        if stripped.startswith("|"):
            close()
            inner = stripped.strip("|").strip()
            if inner:
                first = line_start + line.index(inner)
                blocks.append((first, first + len(inner), True))
            continue
        quote = _QUOTE_MARKER.match(line)
        prefix = quote.end() if quote else 0
        item = _LIST_MARKER.match(line, prefix)
        if item:
            close()
            current = [line_start + item.end(), line_end]
        elif quote:
            close()
            current = [line_start + prefix, line_end]
            close()  # a quote line stands alone
        elif current is not None:
            current[1] = line_end  # a wrapped line continues the paragraph or item
        else:
            current = [line_start + len(line) - len(line.lstrip()), line_end]
    close()
    return blocks


def _sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The sentences of ``text[start:end]`` as absolute, whitespace-trimmed spans."""
    spans: list[tuple[int, int]] = []
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        word = _WORD_BEFORE.search(text[max(cursor, match.start() - 40) : match.start()])
        if word:
            token = word.group(1)
            if token.lower().rstrip(".") in _ABBREVIATIONS or (len(token) == 1 and token.isupper()):
                continue
        spans.append((cursor, match.end()))
        cursor = match.end()
    spans.append((cursor, end))
    trimmed = []
    for s, e in spans:
        segment = text[s:e]
        lead = len(segment) - len(segment.lstrip())
        trail = len(segment) - len(segment.rstrip())
        if e - trail > s + lead:
            trimmed.append((s + lead, e - trail))
    return trimmed


# --------------------------------------------------------------------------- excerpts

# Passages and BM25 live in foundry_mcp.context.passages (shared with passage selection).


class ExcerptSelector:
    """Chooses, for a claim, short excerpts of the sources it cites; sources indexed once."""

    def __init__(
        self,
        sources: Mapping[str, Source],
        *,
        per_source: int = PASSAGES_PER_SOURCE,
        max_chars: int = EXCERPT_CHARS_PER_CLAIM,
    ) -> None:
        self._sources = sources
        self._per_source = per_source
        self._max_chars = max_chars
        self._indexes: dict[str, PassageIndex] = {}

    def _index(self, source_id: str) -> PassageIndex:
        index = self._indexes.get(source_id)
        if index is None:
            source = self._sources.get(source_id)
            text = (source.content or source.snippet or "") if source else ""
            index = self._indexes[source_id] = PassageIndex.build(text.strip())
        return index

    def excerpts(self, claim: str, source_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(source id, excerpt)`` pairs for ``claim``, at most ``max_chars`` characters in all.

        Every cited source first gets its best passage (cut to an equal share of the budget),
        then the remaining budget goes to each source's second-best passage.
        """
        query = content_words(claim)
        ranked = [(sid, self._index(sid).best(query, self._per_source)) for sid in source_ids]
        ranked = [(sid, passages) for sid, passages in ranked if passages]
        if not ranked:
            return []
        share = max(MIN_EXCERPT_CHARS, self._max_chars // len(ranked))
        chosen: dict[str, list[str]] = {sid: [] for sid, _ in ranked}
        used = 0
        for rank in range(self._per_source):
            for sid, passages in ranked:
                if rank >= len(passages):
                    continue
                room = self._max_chars - used
                if rank == 0:
                    room = min(room, share)
                if room < MIN_EXCERPT_CHARS:
                    continue
                text = _truncate(passages[rank], room)
                chosen[sid].append(text)
                used += len(text)
        return [(sid, text) for sid, _ in ranked for text in chosen[sid]]


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 2)
    return text[: cut if cut > 0 else limit - 2].rstrip() + " …"


# --------------------------------------------------------------------------- verdicts


def apply_verdicts(draft: str, claims: Sequence[Claim], verdicts: Sequence[Verdict]) -> str:
    """``draft`` with unsupported claims removed and partial ones marked ``PARTIAL_MARK``.

    ``verdicts[i]`` is the verdict on ``claims[i]``; supported and unverified claims stay as
    written. A line left with nothing but a list or quote marker goes too.
    """
    if len(claims) != len(verdicts):
        raise ValueError("one verdict per claim is needed")
    text = draft
    for claim, verdict in sorted(zip(claims, verdicts, strict=True), key=lambda p: -p[0].start):
        if verdict is Verdict.UNSUPPORTED:
            text = _remove(text, claim)
        elif verdict is Verdict.PARTIAL:
            text = text[: claim.start] + mark_partial(claim.sentence) + text[claim.end :]
    return re.sub(r"\n{3,}", "\n\n", text)


def mark_partial(sentence: str) -> str:
    """``sentence`` with ``PARTIAL_MARK`` after its words, before punctuation and citations."""
    body = sentence
    while True:
        stripped = body.rstrip(" \t\n.!?…;:,")
        citation = re.search(r"\[\s*src-[^\[\]]*\]$", stripped)
        if citation is None:
            body = stripped
            break
        body = stripped[: citation.start()]
    body = body.rstrip()
    return f"{body} {PARTIAL_MARK}{sentence[len(body) :]}"


def _remove(text: str, claim: Claim) -> str:
    line_start = text.rfind("\n", 0, claim.start) + 1
    line_end = text.find("\n", claim.end)
    line_end = len(text) if line_end < 0 else line_end
    if claim.table_row:
        return text[:line_start] + text[line_end + 1 :]
    start, end = claim.start, claim.end
    while end < line_end and text[end] in " \t":
        end += 1
    if end == line_end:  # last sentence on its line: take the blanks before it instead
        while start > line_start and text[start - 1] in " \t":
            start -= 1
    text = text[:start] + text[end:]
    line_end -= end - start
    if _EMPTY_LINE_LEFT.match(text[line_start:line_end]):
        text = text[:line_start] + text[line_end + 1 :]
    return text


# --------------------------------------------------------------------------- the judge


class _JudgedClaim(BaseModel):
    model_config = ConfigDict(extra="ignore")

    claim: Any = None
    verdict: Any = None
    reason: Any = ""


class _JudgeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    verdicts: list[_JudgedClaim] = Field(default_factory=list)


def read_verdict(value: Any) -> Verdict | None:
    """The verdict a judge wrote, leniently read; None when it names none."""
    word = " ".join(str(value or "").lower().replace("_", " ").replace("-", " ").split())
    if "partial" in word or "partly" in word:
        return Verdict.PARTIAL
    if word.startswith(("unsupport", "not support", "contradict", "refute", "false")):
        return Verdict.UNSUPPORTED
    if word.startswith(("support", "true", "confirm")):
        return Verdict.SUPPORTED
    return None


def read_judge_answer(text: str, count: int) -> dict[int, tuple[Verdict, str]] | None:
    """Verdicts by claim number (1..``count``) from the judge's answer; None if unreadable."""
    answer = parse_handoff(text, _JudgeAnswer)
    if answer is None:
        return None
    verdicts: dict[int, tuple[Verdict, str]] = {}
    for item in answer.verdicts:
        number = re.search(r"\d+", str(item.claim))
        verdict = read_verdict(item.verdict)
        if number is None or verdict is None:
            continue
        n = int(number.group())
        if 1 <= n <= count and n not in verdicts:
            verdicts[n] = (verdict, " ".join(str(item.reason or "").split()))
    return verdicts


def batches(items: Sequence[int], size: int = BATCH_SIZE) -> list[list[int]]:
    """``items`` in consecutive groups of at most ``size``."""
    return [list(items[i : i + size]) for i in range(0, len(items), max(1, size))]


@dataclass
class VerifiedDraft:
    """The draft after verification, the verdict on each claim and their counts."""

    markdown: str
    summary: VerificationSummary
    checks: list[ClaimCheck]


async def verify_draft(
    llm: ResearchLLM, state: ResearchState, draft: str, sources: Mapping[str, Source]
) -> VerifiedDraft:
    """Judge every cited sentence of ``draft`` against ``sources`` and apply the verdicts.

    Replaces ``state.claim_checks`` with one check per claim. At most
    ``state.options.max_verified_claims`` claims are sent to the judge, ``BATCH_SIZE`` per call,
    at most ``state.limits.max_concurrent`` calls at a time. A provider error leaves the claims
    not yet judged unverified and adds a warning; it never loses the report.
    """
    split = split_claims(draft)
    claims = split.claims
    checks = [ClaimCheck(sentence=c.text, source_ids=list(c.source_ids)) for c in claims]
    selector = ExcerptSelector(sources)
    evidence: dict[int, list[tuple[str, str]]] = {}
    to_judge: list[int] = []
    cap = max(0, state.options.max_verified_claims)
    for i, claim in enumerate(claims):
        known = [sid for sid in claim.source_ids if sid in sources]
        if not known:
            checks[i].verdict = Verdict.UNSUPPORTED
            checks[i].reason = "It cites no source the research gathered."
            continue
        excerpts = selector.excerpts(claim.text, known)
        if not excerpts:
            checks[i].reason = "The cited sources have no text to check it against."
        elif len(to_judge) >= cap:
            checks[i].reason = f"Not checked: only the first {cap} cited sentences are checked."
        else:
            evidence[i] = excerpts
            to_judge.append(i)

    summary = VerificationSummary(uncited_sentences=split.uncited_sentences)
    semaphore = anyio.Semaphore(max(1, state.limits.max_concurrent))
    stopped: list[str] = []  # the provider error that stopped verification, if any
    unreadable = [0]

    async def judge(batch: list[int]) -> None:
        async with semaphore:
            if stopped:
                for i in batch:
                    checks[i].reason = "Not checked: the fact-checker could not be reached."
                return
            numbered = [
                ClaimEvidence(number=n, text=claims[i].text, excerpts=evidence[i])
                for n, i in enumerate(batch, start=1)
            ]
            system, user = verifier_prompts(state.query, numbered)
            summary.llm_calls += 1
            try:
                text = await llm.ask(
                    "verification", system, user, json_mode=True, max_tokens=VERIFIER_MAX_TOKENS
                )
            except ProviderError as exc:
                log.warning("citation verification stopped: %s", exc.message)
                stopped.append(exc.message)
                for i in batch:
                    checks[i].reason = "Not checked: the fact-checker could not be reached."
                return
        answer = read_judge_answer(text, len(batch))
        if answer is None:
            unreadable[0] += len(batch)
            for i in batch:
                checks[i].reason = "The fact-checker's answer could not be read."
            return
        for n, i in enumerate(batch, start=1):
            if n in answer:
                checks[i].verdict, checks[i].reason = answer[n]
            else:
                checks[i].reason = "The fact-checker gave no verdict on it."

    await fan_out(judge, batches(to_judge))
    if stopped:
        state.warn(
            f"Citation verification stopped after a provider error ({stopped[0]}); "
            "the claims not yet checked are kept unverified."
        )
    if unreadable[0]:
        state.warn(
            f"A fact-check answer could not be read; {unreadable[0]} claim(s) were left unverified."
        )

    verdicts = [check.verdict for check in checks]
    counts = Counter(verdicts)
    summary.claims_checked = len(checks)
    summary.supported = counts[Verdict.SUPPORTED]
    summary.partial = counts[Verdict.PARTIAL]
    summary.unsupported = counts[Verdict.UNSUPPORTED]
    summary.unverified = counts[Verdict.UNVERIFIED]
    summary.removed = counts[Verdict.UNSUPPORTED]
    state.claim_checks = checks
    return VerifiedDraft(
        markdown=apply_verdicts(draft, claims, verdicts), summary=summary, checks=checks
    )


# --------------------------------------------------------------------------- the section


def evidence_quality_section(
    summary: VerificationSummary | None,
    checks: Sequence[ClaimCheck],
    *,
    sources_cited: int,
    sources_examined: int,
    confidence: Mapping[str, int],
    uncited_sentences: int,
    failed_searches: tuple[int, int] = (0, 0),
) -> str:
    """The ``## Evidence Quality`` section: how far the report's claims rest on its sources.

    ``summary`` is None when citations were not verified; the section then says so.
    ``failed_searches`` is (failed, total) sub-queries, reported when any failed.
    """
    lines = [EVIDENCE_HEADING, ""]
    if failed_searches[0]:
        lines.append(
            f"- Searches that failed: {failed_searches[0]} of {failed_searches[1]} sub-queries; "
            "the report rests only on what the other searches found."
        )
    if summary is None:
        lines.append(
            "- Citations were not verified: the cited sentences were not checked against the "
            "text of their sources."
        )
    else:
        lines.append(
            f"- Cited sentences checked against their sources: {summary.claims_checked} "
            f"({summary.supported} supported, {summary.partial} partly supported, "
            f"{summary.unsupported} unsupported, {summary.unverified} unverified)"
        )
        lines.append(f"- Unsupported sentences removed from the report: {summary.removed}")
    lines.append(f"- Sentences without a citation: {uncited_sentences}")
    lines.append(f"- Sources cited: {sources_cited} of {sources_examined} examined")
    lines.append(
        "- Findings by confidence: "
        + ", ".join(f"{confidence.get(level, 0)} {level}" for level in ("high", "medium", "low"))
    )
    if summary is not None and summary.partial:
        lines += ["", f"Sentences marked {PARTIAL_MARK} are only partly backed by their sources."]
    if summary is not None and summary.unverified:
        lines += ["", "Unverified sentences are kept as written but were not confirmed."]
    removed = [c for c in checks if c.verdict is Verdict.UNSUPPORTED]
    if removed:
        lines += ["", "Removed because their cited sources do not support them:", ""]
        for check in removed:
            entry = f'- "{_plain(check.sentence, REMOVED_CLAIM_CHARS)}"'
            if check.reason:
                entry += f" ({_plain(check.reason, REASON_CHARS)})"
            lines.append(entry)
    return "\n".join(lines) + "\n"


def _plain(text: str, limit: int) -> str:
    """One line without source ids or brackets that could read as citations, at most ``limit``."""
    text = _SOURCE_ID.sub("a cited source", text)
    text = " ".join(text.replace("[", "(").replace("]", ")").split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text
