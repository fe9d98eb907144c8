"""The cited sentences of a draft: finding them, and rewriting the draft with their verdicts.

Body sentences that carry a ``[src-...]`` citation become :class:`Claim` spans of the draft;
:func:`apply_verdicts` removes the unsupported ones and marks the partly supported ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from foundry_mcp.research.models import Verdict

MIN_SENTENCE_WORDS = 4  # shorter uncited lines (labels, lead-ins) are not counted
PARTIAL_MARK = "*(partly supported)*"

# --------------------------------------------------------------------------- splitting

# A bracket of one or more source ids, as the writer is told to cite: "[src-1a2b3c4d]".
CITATION = re.compile(r"\[\s*(src-[\w-]+(?:\s*[,;]\s*src-[\w-]+)*)\s*\]")
SOURCE_ID = re.compile(r"src-[\w-]+")
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
            ids = tuple(dict.fromkeys(SOURCE_ID.findall(" ".join(CITATION.findall(sentence)))))
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


# --------------------------------------------------------------------------- verdicts


def apply_verdicts(
    draft: str,
    claims: Sequence[Claim],
    verdicts: Sequence[Verdict],
    replacements: Mapping[int, str] | None = None,
) -> str:
    """``draft`` with unsupported claims removed and partial ones marked ``PARTIAL_MARK``.

    ``verdicts[i]`` is the verdict on ``claims[i]``; supported and unverified claims stay as
    written, unless ``replacements`` gives claim ``i`` a new sentence (a repaired citation). A
    line left with nothing but a list or quote marker goes too.
    """
    if len(claims) != len(verdicts):
        raise ValueError("one verdict per claim is needed")
    replacements = replacements or {}
    text = draft
    ordered = sorted(enumerate(zip(claims, verdicts, strict=True)), key=lambda p: -p[1][0].start)
    for index, (claim, verdict) in ordered:
        if index in replacements:
            text = text[: claim.start] + replacements[index] + text[claim.end :]
        elif verdict is Verdict.UNSUPPORTED:
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
