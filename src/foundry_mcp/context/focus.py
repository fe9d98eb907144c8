"""Query-focused reading: the passages of a source that bear on the question, each read once.

Before a source is fitted into an analysis call its text is cut into passages
(:mod:`foundry_mcp.context.passages`) and two kinds are set aside:

* **Repeats**: a sentence the analyst was already given in this research by another source
  (site boilerplate, a syndicated paragraph, a quotation or stock sentence served by two
  searches). The :class:`RepeatLedger` remembers who read each first. Short sentences are never
  treated as repeats, so a common phrase cannot hide a source's own content, unless every long
  sentence of their paragraph was a repeat (the rest of a cookie notice goes with it).
* **Off-topic passages of a long text**: a text longer than ``FOCUS_MIN_TOKENS`` keeps the
  passages that share content words with the question or the sub-query (not the words that
  frame a question, such as "compare": :data:`FRAMING_WORDS`), plus its opening
  passage (it says what the document is about). Words found in more than half of the text's
  passages are its subject (Redis on a page about Redis) and do not count alone: on a broad
  page, the sections about other uses of Redis name Redis but nothing else of a question about
  Redis for session caching, and are set aside (:func:`bearing`). A single passage between two
  kept ones is kept too. A relevance score would rank the rest, but a cut by score loses
  facts: a passage about one item of a comparison scores low against a question naming four.
  A short text is read whole.

What is kept stays in order, every omitted run marked ``[…]``. Focusing never depends on a
budget: fitting a batch into a call (the degradation ladder) happens afterwards, only when the
focused text does not fit.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

from foundry_mcp.context.passages import (
    content_words,
    split_passages_with_breaks,
    split_sentences,
    stem,
)
from foundry_mcp.context.selection import ELISION, assemble
from foundry_mcp.context.tokens import TokenCounter

FOCUS_MIN_TOKENS = 1_500  # texts up to this size are read whole (repeats aside)
REPEAT_MIN_CHARS = 80  # shorter sentences are never dropped as repeats on their own
# Words that say what to do with a question's subject, not what the subject is: "Compare A, B
# and C for X" asks about A, B, C and X. A passage of a page about A that shares only "compared"
# with the question ("Compared with Z, A suits job queues better") is not about it.
FRAMING_WORDS = frozenset(
    stem(word)
    for word in (
        "compare",
        "comparison",
        "contrast",
        "versus",
        "vs",
        "difference",
        "explain",
        "describe",
        "overview",
        "discuss",
        "evaluate",
        "assess",
    )
)


@dataclass(frozen=True)
class Focused:
    """A source's text as the analyst will read it."""

    text: str
    passages_kept: int
    passages_total: int
    repeats: int  # sentences left out because another source already gave them

    @property
    def narrowed(self) -> bool:
        return self.passages_kept < self.passages_total


@dataclass
class RepeatLedger:
    """Which source first gave each (long enough) sentence to the analyst in one research."""

    first_reader: dict[str, str] = field(default_factory=dict)  # sentence key -> source id

    def claim(self, source_id: str, sentences: list[str]) -> list[bool]:
        """For each sentence, whether ``source_id`` may read it (it is not another's repeat).

        The source becomes the first reader of every long sentence it may read.
        """
        allowed: list[bool] = []
        for sentence in sentences:
            if len(sentence) < REPEAT_MIN_CHARS:
                allowed.append(True)
                continue
            owner = self.first_reader.setdefault(sentence_key(sentence), source_id)
            allowed.append(owner == source_id)
        return allowed


def sentence_key(sentence: str) -> str:
    """A sentence's identity: its words, case and spacing aside."""
    normal = " ".join(sentence.lower().split())
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
    repeats = 0
    if ledger is not None:
        text, repeats = _without_repeats(text, source_id, ledger)
    pieces = split_passages_with_breaks(text)
    if counter.count(text) <= FOCUS_MIN_TOKENS:
        return Focused(text, len(pieces), len(pieces), repeats)
    passages = [p for p, _ in pieces]
    kept = _on_topic(passages, query_terms)
    if len(kept) == len(pieces):
        return Focused(text, len(pieces), len(pieces), repeats)
    return Focused(assemble(pieces, kept), len(kept), len(pieces), repeats)


def _without_repeats(text: str, source_id: str, ledger: RepeatLedger) -> tuple[str, int]:
    """``text`` without the sentences another source gave first, and how many were left out.

    A run of left-out sentences becomes ``[…]``; a paragraph left out whole becomes a ``[…]``
    paragraph. When nothing at all is left, the opening paragraph stays as a pointer.
    """
    paragraphs = [split_sentences(p) for p in re.split(r"\n\s*\n", text)]
    paragraphs = [p for p in paragraphs if p]
    repeats = 0
    parts: list[str] = []
    for sentences in paragraphs:
        allowed = ledger.claim(source_id, sentences)
        long_ones = [
            ok for s, ok in zip(sentences, allowed, strict=True) if len(s) >= REPEAT_MIN_CHARS
        ]
        if long_ones and not any(long_ones):
            allowed = [False] * len(sentences)  # its short sentences go with it
        repeats += allowed.count(False)
        if not any(allowed):
            if not parts or parts[-1] != ELISION:
                parts.append(ELISION)
            continue
        parts.append(_kept_sentences(sentences, allowed))
    if repeats == 0:
        return text, 0
    if all(part == ELISION for part in parts):
        return " ".join(paragraphs[0]), repeats
    return "\n\n".join(parts), repeats


def _kept_sentences(sentences: list[str], allowed: list[bool]) -> str:
    kept: list[str] = []
    for sentence, ok in zip(sentences, allowed, strict=True):
        if ok:
            kept.append(sentence)
        elif not kept or kept[-1] != ELISION:
            kept.append(ELISION)
    return " ".join(kept)


def _on_topic(passages: list[str], query_terms: list[str]) -> list[int]:
    """The passages that bear on the question (see :func:`bearing`), the opening one, and any
    single passage between two kept ones (a section's thread is not cut)."""
    terms = set(query_terms)
    candidates = [i for i, p in enumerate(passages) if p != ELISION]
    if not terms or not candidates:
        return list(range(len(passages)))
    kept = bearing([terms.intersection(content_words(passages[i])) for i in candidates])
    if not any(kept):
        return list(range(len(passages)))  # nothing stands out from the page: do not guess
    for k in range(1, len(candidates) - 1):
        if kept[k - 1] and kept[k + 1]:
            kept[k] = True
    return sorted({candidates[0], *(i for i, ok in zip(candidates, kept, strict=True) if ok)})


def bearing(shared: list[set[str]]) -> list[bool]:
    """Which passages bear on the question, given the question words each shares.

    A word in more than half of a text's passages is its subject (a product's name on its own
    page); a passage whose question words are only such words, and no more of them than the
    least related passage that shares any, is the page talking about its subject in general.
    Every other passage that shares a question word bears on the question: it has a word the
    page does not repeat everywhere, or more of the question than the page's baseline.
    """
    frequency = Counter(term for words in shared for term in words)
    pervasive = {term for term, n in frequency.items() if 2 * n > len(shared)}
    baseline = min((len(words) for words in shared if words), default=0)
    return [bool(words) and (len(words) > baseline or bool(words - pervasive)) for words in shared]


def focus_terms(*queries: str | None) -> list[str]:
    """The content words a source is focused on: the question's and the sub-query's, without
    the words that frame a question (:data:`FRAMING_WORDS`)."""
    words = content_words(" ".join(q for q in queries if q))
    return [word for word in words if word not in FRAMING_WORDS]
