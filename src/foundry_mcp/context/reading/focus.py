"""Query-focused reading: a source's text within its share of the budget, each sentence once.

Every source of an analysis round has a share of the round's budget
(:func:`foundry_mcp.research.workflow.reading.shares.page_shares`). A text that fits its share
is read whole: focusing never drops text the budget has room for. A longer text loses, in this
order:

* **Repeats**: a sentence the analyst was already given in this research by another source
  (site boilerplate, a syndicated paragraph, a quotation or stock sentence served by two
  searches). The :class:`RepeatLedger` remembers who gave each first, counting only what was
  actually sent: a sentence a source's passage selection then left out was not read, and stays
  readable from the next source that has it. Short sentences are never treated as repeats, so a common phrase cannot
  hide a source's own content, unless every long sentence of their paragraph was a repeat (the
  rest of a cookie notice goes with it).
* **Its least relevant passages**: the passages are ranked by BM25 against the question and the
  sub-query that found the source (not the words that frame a question, such as "compare":
  :data:`FRAMING_WORDS`) and kept best first until the share is used
  (:func:`~foundry_mcp.context.reading.selection.select_passages`). A word the whole page repeats, such
  as its subject, weighs little but still counts, and a passage at 95% of a page ranks as high
  as one at 5%.

What is kept stays in order, every omitted run marked ``[…]``. The degradation ladder acts
afterwards, only when a call's batch still does not fit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from foundry_mcp.context.reading.passages import (
    content_words,
    split_passages_with_breaks,
    split_sentences,
    stem,
)
from foundry_mcp.context.reading.selection import ELISION, select_passages
from foundry_mcp.context.tokens import TokenCounter

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
    selected: bool = False  # its most relevant passages were chosen to fit its share

    @property
    def narrowed(self) -> bool:
        return self.passages_kept < self.passages_total


@dataclass
class RepeatLedger:
    """Which source first gave each (long enough) sentence to the analyst in one research."""

    first_reader: dict[str, str] = field(default_factory=dict)  # sentence key -> source id

    def readable(self, source_id: str, sentences: list[str]) -> list[bool]:
        """For each sentence, whether ``source_id`` may read it: short, not read yet, or read
        first from this source (not another's repeat)."""
        return [
            len(sentence) < REPEAT_MIN_CHARS
            or self.first_reader.get(sentence_key(sentence), source_id) == source_id
            for sentence in sentences
        ]

    def repeats(self, source_id: str, text: str) -> bool:
        """Whether ``text`` holds long sentences and every one of them is another source's
        repeat (so reading it from ``source_id`` would add nothing)."""
        long_ones = [s for p in paragraphs_of(text) for s in p if len(s) >= REPEAT_MIN_CHARS]
        return bool(long_ones) and not any(self.readable(source_id, long_ones))

    def forget(self, source_ids: Iterable[str]) -> None:
        """Forget the sentences first read from these sources (their reading is done again)."""
        gone = set(source_ids)
        self.first_reader = {k: s for k, s in self.first_reader.items() if s not in gone}

    def claim_text(self, source_id: str, text: str) -> None:
        """Make ``source_id`` the first reader of every long sentence of ``text`` not yet read:
        call it with what was sent to the analyst, nothing more."""
        for sentences in paragraphs_of(text):
            for sentence in sentences:
                if len(sentence) >= REPEAT_MIN_CHARS:
                    self.first_reader.setdefault(sentence_key(sentence), source_id)


def paragraphs_of(text: str) -> list[list[str]]:
    """``text``'s paragraphs, each as its sentences (empty paragraphs left out)."""
    paragraphs = [split_sentences(p) for p in re.split(r"\n\s*\n", text)]
    return [p for p in paragraphs if p]


def sentence_key(sentence: str) -> str:
    """A sentence's identity: its words, case and spacing aside."""
    return spaced_sentence_key(" ".join(sentence.split()))


def spaced_sentence_key(sentence: str) -> str:
    """:func:`sentence_key` of a sentence whose spacing is already one space (as
    :func:`.passages.split_sentences` gives it), without spacing it again."""
    return hashlib.blake2b(sentence.lower().encode(), digest_size=12).hexdigest()


def focus(
    text: str,
    query_terms: list[str],
    counter: TokenCounter,
    *,
    source_id: str,
    share: int,
    ledger: RepeatLedger | None = None,
) -> Focused:
    """``text`` whole when it fits ``share`` tokens; else without repeats and, when still too
    long, its most relevant passages within ``share`` (see the module)."""
    text = text.strip()
    if not text:
        return Focused("", 0, 0, 0)
    if counter.count(text) <= share:
        if ledger is not None:  # read whole: later sources repeating it lose those sentences
            ledger.claim_text(source_id, text)
        count = len(split_passages_with_breaks(text))
        return Focused(text, count, count, 0)
    repeats = 0
    if ledger is not None:
        text, repeats = _without_repeats(text, source_id, ledger)
    total = len(split_passages_with_breaks(text))
    if counter.count(text) <= share:
        focused = Focused(text, total, total, repeats)
    else:
        selection = select_passages(text, query_terms, share, counter)
        kept, total = selection.passages_kept, selection.passages_total
        focused = Focused(selection.text, kept, total, repeats, selected=True)
    if ledger is not None:  # what is sent, and only that, has now been read from this source
        ledger.claim_text(source_id, focused.text)
    return focused


def _without_repeats(text: str, source_id: str, ledger: RepeatLedger) -> tuple[str, int]:
    """``text`` without the sentences another source gave first, and how many were left out.

    A run of left-out sentences becomes ``[…]``; a paragraph left out whole becomes a ``[…]``
    paragraph. When nothing at all is left, the opening paragraph stays as a pointer.
    """
    paragraphs = paragraphs_of(text)
    repeats = 0
    parts: list[str] = []
    for sentences in paragraphs:
        allowed = ledger.readable(source_id, sentences)
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


def focus_terms(*queries: str | None) -> list[str]:
    """The content words a source is focused on: the question's and the sub-query's, without
    the words that frame a question (:data:`FRAMING_WORDS`)."""
    words = content_words(" ".join(q for q in queries if q))
    return [word for word in words if word not in FRAMING_WORDS]
