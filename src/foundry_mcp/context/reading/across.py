"""Reading several pages within one budget: the passages worth most per token, across pages.

A round of analysis reads many pages at once. Rather than give each page a share of the
budget, every passage not read before of every page is valued in one pool and passages are
taken by worth per token, best first, until the budget is spent: one long page cannot take the
budget of five short ones, and a short page leaves what it does not need to the others.

What a passage is worth is the sum of what its sentences are worth:

* A sentence is worth the terms of the question (and of all its parts) it holds, each weighted
  by how rare the term is among the passages (BM25's idf), so a word every passage repeats,
  such as the page's subject, counts for little; and by how often the question, its parts and
  the sub-queries name it, so the subject of the reading counts for more than a word one
  search phrasing added ("overview", "recent") or another part's name mentioned in passing.
* The more sentences taken hold a term, the less the next one holding it is worth
  (:data:`COVERAGE`): the reading covers every term of the question, not only the one most
  passages match.
* A sentence that states a figure (a number with a unit, a percentage, a count of things:
  :data:`FIGURE_RE`) and holds a term of the question is worth :data:`FIGURE_WEIGHT` times as
  much. A sentence is valued statement by statement (:func:`~.parsed.statements`): once a page's lines
  are joined, a heading, a code block and the list that follows read as one sentence, and a
  figure in the code would count with the heading's terms. For what documentation is asked about (how fast, how large, how many, since when) the
  decisive sentence is usually the one that gives the figure, while the sentences around it
  name the subject without saying anything new about it.
* A sentence is worth something once. Read from one passage, its copies elsewhere (navigation,
  boilerplate, stock sentences, a paragraph two pages share, or a sentence ``known`` from an
  earlier reading of the research) are worth nothing, so a passage of repeats is not read.

Worth is recomputed lazily as sentences are taken (it only ever falls). A passage worth nothing
is not read; when every passage fits the budget, every one is read (a short page whole, word
for word). What a page keeps is put back in its order, each omitted run marked ``[…]``. CPU work
over long pages: call it in a worker thread.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass, field

from foundry_mcp.context.reading.parsed import ParsedPage, parse_page
from foundry_mcp.context.reading.passages import split_passages_with_breaks
from foundry_mcp.context.reading.selection import ELISION, assemble
from foundry_mcp.context.tokens import TokenCounter

FIGURE_WEIGHT = 4.0
SENTENCE_ENDS = (".", "!", "?", ":", '"', ")", "```")
COVERAGE = 8  # sentences taken that hold a term before its weight halves


@dataclass(frozen=True)
class Page:
    """A page to read: its id, its text, and the passages of it read before."""

    id: str
    text: str
    read_before: frozenset[int] = frozenset()


@dataclass(frozen=True)
class PageSelection:
    """What of a page is read now: its text as the analyst gets it (empty: nothing new), the
    passages it holds, all of the page's passages, and the text's size."""

    id: str
    text: str
    chosen: tuple[int, ...]
    passages: int
    tokens: int

    def whole(self, read_before: frozenset[int] = frozenset()) -> bool:
        """Whether, with the passages read before, every passage of the page is read."""
        return len(read_before | set(self.chosen)) >= self.passages


@dataclass
class _Candidate:
    page: int
    passage: int
    text: str
    parsed: ParsedPage  # its page's parse (see :mod:`.parsed`)
    # its statements holding a term, each once: (key, question terms, figure weight)
    worthy: list[tuple[str, tuple[str, ...], float]] = field(default_factory=list)
    worth: float = 0.0  # what its worthy statements are worth before any is taken

    def statement_keys(self, known: Container[str]) -> Iterator[str]:
        """The keys of all its statements (a statement's key is its text), its sentences
        ``known`` left out."""
        page = self.parsed
        for sentence in page.sentences_of(self.passage):
            if not known or page.sentence_keys[sentence] not in known:
                for n in page.statements_of(sentence):
                    yield page.statement_texts[n]


def read_within(
    pages: Sequence[Page],
    terms: Sequence[str],
    budget: int,
    counter: TokenCounter,
    *,
    known: Container[str] = frozenset(),
    page_cap: int | None = None,
) -> list[PageSelection]:
    """The passages of ``pages`` to read within ``budget`` tokens, worth most per token first
    (see the module); ``known``: keys (:func:`~.focus.sentence_key`) of sentences read before in the
    research; ``page_cap``: at most this many tokens of any one page (what one call carries).
    One selection per page, in order."""
    parses = [parse_page(page.text.strip()) for page in pages]
    split = [list(parsed.passages) for parsed in parses]
    candidates = [
        _Candidate(number, i, text, parsed)
        for number, (page, parsed) in enumerate(zip(pages, parses, strict=True))
        for i, (text, _) in enumerate(parsed.passages)
        if i not in page.read_before
    ]
    marker = counter.count(f"\n{ELISION}\n") + 1
    chosen: dict[int, list[int]] = {number: [] for number in range(len(pages))}
    may_fit = sum(len(c.text) for c in candidates) <= 4 * budget  # then count to be sure
    copies: dict[int, list[int]] = {number: [] for number in range(len(pages))}
    if may_fit and _fits(candidates, budget, page_cap, marker, counter):
        kept = {id(candidate) for candidate in _without_copies(candidates, known)}
        for candidate in candidates:
            mine = chosen if id(candidate) in kept else copies
            mine[candidate.page].append(candidate.passage)
        return _selections(pages, split, chosen, copies, counter)
    weight = _value(candidates, terms, known)
    taken = _best_first(candidates, weight, budget, marker, counter, page_cap)
    for candidate in taken:
        chosen[candidate.page].append(candidate.passage)
    said = {key for candidate in taken for key in candidate.statement_keys(known)}
    for candidate in candidates:  # every sentence of it read from another passage
        if candidate.passage in chosen[candidate.page]:
            continue
        keys = candidate.statement_keys(known)
        first = next(keys, None)
        if first is not None and first in said and all(key in said for key in keys):
            copies[candidate.page].append(candidate.passage)
    return _selections(pages, split, chosen, copies, counter)


def _fits(
    candidates: list[_Candidate],
    budget: int,
    page_cap: int | None,
    marker: int,
    counter: TokenCounter,
) -> bool:
    """Whether every candidate can be read: within the budget and each page's cap."""
    by_page: Counter[int] = Counter()
    for candidate in candidates:
        by_page[candidate.page] += counter.count(candidate.text) + marker
    within_cap = page_cap is None or max(by_page.values(), default=0) <= page_cap
    return within_cap and sum(by_page.values()) <= budget


def _without_copies(candidates: list[_Candidate], known: Container[str]) -> list[_Candidate]:
    """``candidates`` less any passage that is, word for word, one before it, or whose every
    sentence is ``known``."""
    seen: set[str] = set()
    kept: list[_Candidate] = []
    for candidate in candidates:
        key = " ".join(candidate.text.lower().split())
        page = candidate.parsed
        keys = (
            [page.sentence_keys[s] for s in page.sentences_of(candidate.passage)] if known else []
        )
        if keys and all(sentence in known for sentence in keys):
            continue
        if key not in seen:
            seen.add(key)
            kept.append(candidate)
    return kept


def _value(
    candidates: list[_Candidate], terms: Sequence[str], known: Container[str]
) -> dict[str, float]:
    """Give each candidate its statements that hold a question term (key, terms, figure
    weight); the weight (idf) of each term. A sentence ``known`` is worth nothing, so it is
    left out."""
    asked = Counter(terms)
    wanted = frozenset(asked)
    split: list[list[tuple[int, frozenset[str]]]] = []  # per candidate: statements with terms
    frequency: Counter[str] = Counter()  # of the asked terms: in how many passages
    for candidate in candidates:
        page = candidate.parsed
        stems = page.statement_stems
        pieces: list[tuple[int, frozenset[str]]] = []
        present: set[str] = set()
        for sentence in page.sentences_of(candidate.passage):
            if known and page.sentence_keys[sentence] in known:
                continue
            for n in page.statements_of(sentence):
                held = wanted.intersection(stems[n])
                if held:
                    pieces.append((n, held))
                    present |= held
        frequency.update(present)
        split.append(pieces)
    total = len(candidates)
    weight = {
        term: math.log(1 + (total - df + 0.5) / (df + 0.5)) * times
        for term, times in asked.items()
        if (df := frequency.get(term, 0))
    }
    # Every term a statement holds has a weight (it is in a passage); many statements hold
    # the same terms, weighed once.
    weighed: dict[frozenset[str], tuple[tuple[str, ...], float]] = {}
    for candidate, pieces in zip(candidates, split, strict=True):
        page = candidate.parsed
        worthy: set[str] = set()
        for n, words in pieces:
            text = page.statement_texts[n]
            if text in worthy:  # a statement said twice is worth it once
                continue
            worthy.add(text)
            figure = FIGURE_WEIGHT if page.states_figure(n) else 1.0
            terms_and_worth = weighed.get(words)
            if terms_and_worth is None:
                ordered = tuple(sorted(words))
                terms_and_worth = weighed[words] = (ordered, sum(map(weight.__getitem__, ordered)))
            candidate.worthy.append((text, terms_and_worth[0], figure))
            candidate.worth += figure * terms_and_worth[1]
    return weight


def _best_first(
    candidates: list[_Candidate],
    weight: dict[str, float],
    budget: int,
    marker: int,
    counter: TokenCounter,
    page_cap: int | None = None,
) -> list[_Candidate]:
    """The candidates taken, by worth per character (lazily recomputed) within ``budget``
    and ``page_cap``."""
    cap = budget if page_cap is None else page_cap
    per_page: Counter[int] = Counter()
    taken: set[str] = set()
    covered: dict[str, int] = dict.fromkeys(weight, 0)  # sentences taken that hold each term
    # What a term adds to a sentence now: its weight, halved by every COVERAGE sentences taken
    # that hold it (kept up to date as sentences are taken).
    worth_of: dict[str, float] = dict(weight)

    def density(candidate: _Candidate) -> float:
        worth = 0.0
        for key, held, figure in candidate.worthy:
            if key not in taken:
                worth += figure * sum(map(worth_of.__getitem__, held))
        return worth / max(1, len(candidate.text))

    heap = [(-c.worth / max(1, len(c.text)), n) for n, c in enumerate(candidates)]  # density
    heapq.heapify(heap)
    picked: list[_Candidate] = []
    # The number of passages picked when a candidate's density in the heap was computed: it
    # holds as long as no passage has been picked since.
    computed = [0] * len(candidates)
    used = 0
    while heap and budget - used > marker:
        stale, number = heapq.heappop(heap)
        if stale >= 0:
            break  # the best left is worth nothing: nothing more is worth reading
        candidate = candidates[number]
        now = -stale if computed[number] == len(picked) else density(candidate)
        if now <= 0:
            continue  # all it says was read elsewhere
        if heap and now < -heap[0][0]:
            heapq.heappush(heap, (-now, number))  # fell behind another: look at that first
            computed[number] = len(picked)
            continue
        cost = counter.count(candidate.text) + marker
        if used + cost > budget or per_page[candidate.page] + cost > cap:
            continue
        used += cost
        per_page[candidate.page] += cost
        picked.append(candidate)
        for key, held, _ in candidate.worthy:
            if key not in taken:
                taken.add(key)
                for term in held:
                    covered[term] += 1
                    worth_of[term] = weight[term] / (1 + covered[term] / COVERAGE)
    ends = _sentence_ends(picked, candidates, budget - used, marker, counter, per_page, cap)
    return picked + ends


def _sentence_ends(
    picked: list[_Candidate],
    candidates: list[_Candidate],
    left: int,
    marker: int,
    counter: TokenCounter,
    per_page: Counter[int],
    cap: int,
) -> list[_Candidate]:
    """The passages that finish a sentence a picked passage leaves unfinished (a table or a
    list with no full stop, cut where a passage must end), as far as ``left`` allows."""
    at = {(c.page, c.passage): c for c in candidates}
    have = {(c.page, c.passage) for c in picked}
    more: list[_Candidate] = []
    for candidate in picked:
        following = at.get((candidate.page, candidate.passage + 1))
        if following is None or (following.page, following.passage) in have:
            continue
        if candidate.text.rstrip().endswith(SENTENCE_ENDS):
            continue
        cost = counter.count(following.text) + marker
        if cost <= left and per_page[following.page] + cost <= cap:
            left -= cost
            per_page[following.page] += cost
            have.add((following.page, following.passage))
            more.append(following)
    return more


def _selections(
    pages: Sequence[Page],
    split: list[list[tuple[str, bool]]],
    chosen: dict[int, list[int]],
    copies: dict[int, list[int]],
    counter: TokenCounter,
) -> list[PageSelection]:
    return [
        _selection(page, pieces, sorted(chosen[number]), copies[number], counter)
        for number, (page, pieces) in enumerate(zip(pages, split, strict=True))
    ]


def _selection(
    page: Page,
    pieces: list[tuple[str, bool]],
    chosen: list[int],
    copies: list[int],
    counter: TokenCounter,
) -> PageSelection:
    """What of ``page`` the analyst gets: ``chosen``; ``copies`` (passages whose every sentence
    it gets from another passage) count as read, not sent again."""
    if not chosen:  # nothing new: its copies count as read all the same
        return PageSelection(page.id, "", tuple(sorted(copies)), len(pieces), 0)
    whole = not page.read_before and not copies and len(chosen) == len(pieces)
    text = page.text.strip() if whole else assemble(pieces, chosen)
    read = tuple(sorted({*chosen, *copies}))
    return PageSelection(page.id, text, read, len(pieces), counter.count(text))


def read_in_order(
    pages: Sequence[Page], budget: int, counter: TokenCounter, *, page_cap: int | None = None
) -> list[PageSelection]:
    """Each page's passages not read before, from its beginning, within its share of ``budget``
    (what the pages before it left, shared among it and the rest) and ``page_cap``: a reading
    that values nothing, for when :func:`read_within` cannot be had in time
    (:mod:`.elsewhere`). One selection per page, in order."""
    marker = counter.count(f"\n{ELISION}\n") + 1
    selections: list[PageSelection] = []
    left = budget
    for number, page in enumerate(pages):
        share = left // (len(pages) - number)
        if page_cap is not None:
            share = min(share, page_cap)
        pieces = split_passages_with_breaks(page.text.strip())
        chosen: list[int] = []
        for i, (text, _) in enumerate(pieces):
            if i in page.read_before:
                continue
            cost = counter.count(text) + marker
            if cost > share:
                break
            share -= cost
            left -= cost
            chosen.append(i)
        selections.append(_selection(page, pieces, chosen, [], counter))
    return selections
