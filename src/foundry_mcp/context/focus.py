"""Query-focused reading: the passages of a source that bear on the question, each read once.

Before a source is fitted into an analysis call its text is cut into passages
(:mod:`foundry_mcp.context.passages`) and two kinds are set aside:

* **Repeats**: a paragraph (a long one: a passage of it) the analyst was already given in this
  research by another source (site boilerplate, a syndicated paragraph, a quotation served by
  two searches). The :class:`RepeatLedger` remembers who read each first; short ones are never
  treated as repeats, so a common phrase cannot hide a source's own content.
* **Off-topic passages of a long text**: a text longer than ``FOCUS_MIN_TOKENS`` keeps the
  passages that share at least one content word with the question or the sub-query, plus its
  opening passage (it says what the document is about). A relevance score would rank the
  rest, but a cut by score loses facts: a passage about one item of a comparison scores low
  against a question naming four. A short text is read whole.

What is kept stays in order, every omitted run marked ``[…]``. Focusing never depends on a
budget: fitting a batch into a call (the degradation ladder) happens afterwards, only when the
focused text does not fit.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from foundry_mcp.context.passages import (
    PASSAGE_MAX_CHARS,
    content_words,
    split_passages,
    split_passages_with_breaks,
)
from foundry_mcp.context.selection import ELISION, assemble
from foundry_mcp.context.tokens import TokenCounter

FOCUS_MIN_TOKENS = 1_500  # texts up to this size are read whole (repeats aside)
REPEAT_MIN_CHARS = 120  # shorter passages are never dropped as repeats


@dataclass(frozen=True)
class Focused:
    """A source's text as the analyst will read it."""

    text: str
    passages_kept: int
    passages_total: int
    repeats: int  # passages left out because another source already gave them

    @property
    def narrowed(self) -> bool:
        return self.passages_kept < self.passages_total


@dataclass
class RepeatLedger:
    """Which source first gave each (long enough) passage to the analyst in one research."""

    first_reader: dict[str, str] = field(default_factory=dict)  # passage key -> source id

    def claim(self, source_id: str, passages: list[str]) -> list[bool]:
        """For each passage, whether ``source_id`` may read it (it is not another's repeat).

        The source becomes the first reader of every passage it may read.
        """
        allowed: list[bool] = []
        for passage in passages:
            if len(passage) < REPEAT_MIN_CHARS:
                allowed.append(True)
                continue
            key = passage_key(passage)
            owner = self.first_reader.setdefault(key, source_id)
            allowed.append(owner == source_id)
        return allowed


def passage_key(passage: str) -> str:
    """A passage's identity: its words, case and spacing aside."""
    normal = " ".join(passage.lower().split())
    return hashlib.blake2b(normal.encode(), digest_size=12).hexdigest()


def focus(
    text: str,
    query_terms: list[str],
    counter: TokenCounter,
    *,
    source_id: str,
    ledger: RepeatLedger | None = None,
) -> Focused:
    """``text`` without repeats and, when long, without its off-topic passages (see module)."""
    text = text.strip()
    if not text:
        return Focused("", 0, 0, 0)
    units = repeat_units(text)
    allowed = ledger.claim(source_id, units) if ledger is not None else [True] * len(units)
    repeats = allowed.count(False)
    if repeats:
        text = _without_repeats(units, allowed)
    pieces = split_passages_with_breaks(text)
    if counter.count(text) <= FOCUS_MIN_TOKENS:
        return Focused(text, len(pieces), len(pieces), repeats)
    passages = [p for p, _ in pieces]
    kept = _on_topic(passages, query_terms)
    if len(kept) == len(pieces):
        return Focused(text, len(pieces), len(pieces), repeats)
    return Focused(assemble(pieces, kept), len(kept), len(pieces), repeats)


def repeat_units(text: str) -> list[str]:
    """What may repeat across sources: paragraphs, a long paragraph in passages."""
    units: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        if len(paragraph) <= 2 * PASSAGE_MAX_CHARS:
            units.append(paragraph)
        else:
            units.extend(split_passages(paragraph))
    return units


def _without_repeats(units: list[str], allowed: list[bool]) -> str:
    """The units a source may read, in order, ``[…]`` where repeats were left out."""
    if not any(allowed):  # every passage was read elsewhere: the opening stays as a pointer
        allowed = [True, *allowed[1:]]
    parts: list[str] = []
    for unit, ok in zip(units, allowed, strict=True):
        if ok:
            parts.append(unit)
        elif not parts or parts[-1] != ELISION:
            parts.append(ELISION)
    return "\n\n".join(parts)


def _on_topic(passages: list[str], query_terms: list[str]) -> list[int]:
    """The passages that share a content word with the question, and the opening one."""
    terms = set(query_terms)
    candidates = [i for i, p in enumerate(passages) if p != ELISION]
    if not terms or not candidates:
        return list(range(len(passages)))
    kept = [i for i in candidates if terms.intersection(content_words(passages[i]))]
    if not kept:
        return list(range(len(passages)))  # nothing matches the question at all: do not guess
    return sorted({candidates[0], *kept})


def focus_terms(*queries: str | None) -> list[str]:
    """The content words a source is focused on: the question and the sub-query."""
    return content_words(" ".join(q for q in queries if q))
