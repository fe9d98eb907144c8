"""Query-focused passage selection: the parts of a long text that bear on the question.

The text is cut into passages (a few sentences each, see :mod:`foundry_mcp.context.reading.passages`)
and each passage is scored with BM25 against the query: the research question plus the
sub-query that found the source. Passages are taken best first until the token budget is
spent, then put back in their original order; every run of omitted text is marked ``[…]``.
The opening passage gets a small bonus: it usually says what the document is about.
"""

from __future__ import annotations

from dataclasses import dataclass

from foundry_mcp.context.reading.passages import (
    PassageIndex,
    content_words,
    split_passages_with_breaks,
)
from foundry_mcp.context.tokens import TokenCounter

ELISION = "[…]"
OPENING_BONUS = 0.25  # added to the first passage's score, as a share of the best score


@dataclass(frozen=True)
class Selection:
    """The selected text, its size, and how much of the original it kept."""

    text: str
    tokens: int
    passages_kept: int
    passages_total: int

    @property
    def elided(self) -> bool:
        return self.passages_kept < self.passages_total


def query_terms(*queries: str | None) -> list[str]:
    """The content words of the research question and sub-query, for BM25."""
    return content_words(" ".join(q for q in queries if q))


def select_passages(
    text: str, query: str | list[str], budget_tokens: int, counter: TokenCounter
) -> Selection:
    """At most ``budget_tokens`` of ``text``: its most relevant passages in their order.

    A text that fits is returned whole. When not even the best passage fits, it is cut at a
    word boundary to the budget.
    """
    text = text.strip()
    total = counter.count(text)
    if total <= budget_tokens or not text:
        return Selection(text, total, 1, 1)
    pieces = split_passages_with_breaks(text)
    passages = [p for p, _ in pieces]
    terms = query if isinstance(query, list) else content_words(query)
    scores = PassageIndex.from_passages(passages).scores(terms)
    if scores:
        scores[0] += OPENING_BONUS * max(max(scores), 1.0)
    ranked = sorted(range(len(passages)), key=lambda i: (-scores[i], i))
    sizes = [counter.count(p) for p in passages]
    marker = counter.count(f"\n{ELISION}\n")
    chosen: list[int] = []
    used = 0
    for index in ranked:
        # A kept passage may open a gap: count one marker and a separator per passage.
        cost = sizes[index] + marker + 1
        if used + cost <= budget_tokens:
            chosen.append(index)
            used += cost
    while chosen:
        body = assemble(pieces, sorted(chosen))
        tokens = counter.count(body)
        if tokens <= budget_tokens:
            return Selection(body, tokens, len(chosen), len(passages))
        chosen.pop()  # the least relevant one goes
    best = ranked[0]
    cut = _cut_to_tokens(passages[best], budget_tokens - 2 * marker - 1, counter)
    body = assemble([(cut, False), *pieces[best + 1 :]], [0], first=best == 0)
    return Selection(body, counter.count(body), 1, len(passages))


def assemble(
    pieces: list[tuple[str, bool]], indexes: list[int], *, first: bool | None = None
) -> str:
    """The passages at ``indexes`` (sorted) in order, with ``[…]`` for every omitted run.

    ``pieces`` are ``(passage, ends a paragraph)`` pairs as
    :func:`~foundry_mcp.context.reading.passages.split_passages_with_breaks` returns them.
    """
    parts: list[str] = []
    previous = -1
    for index in indexes:
        passage, ends_paragraph = pieces[index]
        opened_gap = index != previous + 1 if first is None else not first
        if opened_gap:
            parts.append(f"\n{ELISION}\n")
        parts.append(passage + ("\n\n" if ends_paragraph else " "))
        previous = index
    if previous != len(pieces) - 1:
        parts.append(f"\n{ELISION}\n")
    return _tidy("".join(parts))


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines()]
    out: list[str] = []
    for line in lines:
        if not line and out and not out[-1]:
            continue
        out.append(line)
    return "\n".join(out)


def _cut_to_tokens(text: str, budget: int, counter: TokenCounter) -> str:
    """The longest word-boundary prefix of ``text`` within ``budget`` tokens."""
    if budget <= 0:
        return ""
    if counter.count(text) <= budget:
        return text
    low, high = 0, len(text)
    while low < high:  # binary search on characters, snapped to spaces
        middle = (low + high + 1) // 2
        if counter.count(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    cut = text.rfind(" ", 0, low)
    return text[: cut if cut > 0 else low].rstrip()


def truncate_to_tokens(text: str, budget: int, counter: TokenCounter, marker: str) -> str:
    """``text`` cut at a word boundary so that it and ``marker`` fit ``budget`` tokens."""
    if counter.count(text) <= budget:
        return text
    room = budget - counter.count(" " + marker)
    return (_cut_to_tokens(text, room, counter) + " " + marker).strip()
