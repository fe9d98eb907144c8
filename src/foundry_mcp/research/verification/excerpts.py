"""The excerpts the fact-checker reads for a claim: the cited source's sentences that say it.

A claim is a sentence of the report, usually drawn from one or two sentences of a source. The
fact-checker reads what the analyst read: what it was sent of a source's page (each reading's
passages, when the run knows them: ``ResearchState.pages_sent``; else the whole page) and the
sentences of its search snippet the page lacks (an extractor can lose a sentence the search
engine kept). Each cited source's sentences are scored against the claim (BM25 over the
source's sentences, so a word the whole page repeats, such as its subject, weighs little);
the best one is shown with ``CONTEXT_SENTENCES`` on each side (a pronoun or a figure's subject
is often in the sentence before; never from across a gap in what was read), and a second match
only when it holds words of the claim the first lacks (a claim drawn from two places of a
page). Neighbouring matches are shown as one excerpt. A source no sentence of which shares a
word with the claim shows its opening passage, so the fact-checker still sees what it is about.
A claim the source holds word for word (a sentence the writer took as it stood) is shown on its
own line, wherever it stands on the page and whatever the sentence splitter makes of a table
row, a list item or the line after a code block; within a paragraph, with a few words before
it and the rest of its sentence.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence

from foundry_mcp.context.reading.passages import (
    PASSAGE_MAX_CHARS,
    PassageIndex,
    content_words,
    cut_words,
    split_passages,
    split_sentences,
)
from foundry_mcp.context.reading.selection import ELISION
from foundry_mcp.research.models import EvidenceQuote, Source
from foundry_mcp.research.prompts.analyzer import snippet_lacking
from foundry_mcp.research.verification.claims import split_claims
from foundry_mcp.research.verification.quotes import quotes_for

EXCERPT_CHARS_PER_CLAIM = 1500
MIN_EXCERPT_CHARS = 120
PASSAGES_PER_SOURCE = 2  # matches shown a source at most (each with its context)
CONTEXT_SENTENCES = 1  # sentences shown on each side of a match
VERBATIM_MIN_WORDS = 6  # a claim this long found word for word is shown where it stands
VERBATIM_MARGIN = 80  # characters shown on either side of it within a long line, at most
_SENTENCE_STOP = re.compile(r"[.!?](?=[\s)\]]|$)")
_MARKUP = "`*_"  # stripped from a claim's words, allowed around them on the page
_SEPARATORS = _MARKUP + "|"  # allowed between two words, besides spaces


class ExcerptSelector:
    """Chooses, for a claim, short excerpts of the sources it cites; sources indexed once."""

    def __init__(
        self,
        sources: Mapping[str, Source],
        *,
        per_source: int = PASSAGES_PER_SOURCE,
        max_chars: int = EXCERPT_CHARS_PER_CLAIM,
        read: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """``read``: what the analyst was sent of some of the pages, by source id (one text
        a reading); a claim is matched against those sentences of them, not the whole page."""
        self._sources = sources
        self._read = read or {}
        self._per_source = per_source
        self._max_chars = max_chars
        self._passages: dict[str, PassageIndex] = {}
        self._sentences: dict[str, PassageIndex] = {}
        # Where each stretch of a source's sentences begins (a run of passages the analyst was
        # sent, or the page, then the snippet's): a match's context stays within its stretch.
        self._stretches: dict[str, list[int]] = {}
        self._snippets: dict[str, list[str]] = {}
        # The excerpts chosen for each (claim, cited sources), and the quotes of each choice,
        # for a claim checked again or chosen ahead (``prepare``).
        self._chosen: dict[tuple[str, tuple[str, ...]], list[tuple[str, str]]] = {}
        self._quoted: dict[tuple[tuple[str, str], ...], list[EvidenceQuote]] = {}

    def _page(self, source_id: str) -> str:
        source = self._sources.get(source_id)
        return (source.content or "").strip() if source else ""

    def _snippet(self, source_id: str) -> list[str]:
        """The sentences of the source's snippet its page text lacks (found once)."""
        found = self._snippets.get(source_id)
        if found is None:
            source = self._sources.get(source_id)
            found = snippet_lacking(source, self._page(source_id)) if source else []
            self._snippets[source_id] = found
        return found

    def _text(self, source_id: str) -> str:
        """Everything the analyst could read of the source: its page, then what only the
        snippet says."""
        return "\n\n".join(
            part for part in (self._page(source_id), *self._snippet(source_id)) if part
        )

    def _passage_index(self, source_id: str) -> PassageIndex:
        index = self._passages.get(source_id)
        if index is None:
            index = self._passages[source_id] = PassageIndex.build(self._text(source_id))
        return index

    def _sentence_index(self, source_id: str) -> PassageIndex:
        index = self._sentences.get(source_id)
        if index is None:
            read = self._read.get(source_id)
            texts = [run for text in read for run in text.split(ELISION)] if read else []
            sentences: list[str] = []
            starts: list[int] = []
            for text in texts or [self._page(source_id)]:
                starts.append(len(sentences))
                sentences += sentences_of(text)
            starts.append(len(sentences))
            self._stretches[source_id] = starts
            index = PassageIndex.from_passages(sentences + self._snippet(source_id))
            self._sentences[source_id] = index
        return index

    def index(self, source_ids: Sequence[str]) -> None:
        """Index the sentences of ``source_ids`` now (it takes a few milliseconds a long page;
        the synthesizer does it in a thread while the writers' calls are in flight)."""
        for source_id in source_ids:
            self._sentence_index(source_id)

    def prepare(self, written: str) -> None:
        """Choose now the excerpts of the claims of ``written`` (a part of a report, once it is
        written), and their quotes, so that the draft's verification finds them: the
        synthesizer does it in a thread while the other parts' writers are still out."""
        for claim in split_claims(written).claims:
            known = [sid for sid in claim.source_ids if sid in self._sources]
            if known:
                self.quotes(self.excerpts(claim.text, known))

    def quotes(self, excerpts: Sequence[tuple[str, str]]) -> list[EvidenceQuote]:
        """The ``(source id, excerpt)`` pairs as quotes of the sources' stored text
        (:func:`~.quotes.quotes_for`)."""
        key = tuple(excerpts)
        quoted = self._quoted.get(key)
        if quoted is None:
            quoted = self._quoted[key] = quotes_for(self._sources, excerpts)
        return list(quoted)

    def best_passage(self, source_id: str, claim: str) -> str | None:
        """The passage of ``source_id`` that shares most with ``claim``, if any does."""
        passages = self._passage_index(source_id).best(content_words(claim), 1)
        return passages[0] if passages else None

    def matches(self, source_id: str, claim: str) -> list[str]:
        """The excerpts of one source for ``claim``, best first (see the module)."""
        verbatim = self._verbatim(source_id, claim)
        if verbatim is not None:
            return [verbatim]
        index = self._sentence_index(source_id)
        if not index.passages:
            return []
        query = content_words(claim)
        scores = index.scores(query)
        ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        hits = _adding([i for i in ranked[: self._per_source] if scores[i] > 0], index, query)
        if not hits:
            return split_passages(self._text(source_id))[:1]
        starts = [*self._stretches[source_id], len(index.passages)]
        spans: list[list[int]] = []  # [first, last, stretch]
        for hit in hits:
            # The context of a match stays within its stretch of text (see ``_stretches``).
            stretch = bisect_right(starts, hit) - 1
            first, last = starts[stretch], starts[stretch + 1] - 1
            start, end = max(first, hit - CONTEXT_SENTENCES), min(last, hit + CONTEXT_SENTENCES)
            near = next(
                (s for s in spans if s[2] == stretch and start <= s[1] + 1 and end >= s[0] - 1),
                None,
            )
            if near is None:
                spans.append([start, end, stretch])
            else:
                near[0], near[1] = min(near[0], start), max(near[1], end)
        return [" ".join(index.passages[start : end + 1]) for start, end, _ in spans]

    def _verbatim(self, source_id: str, claim: str) -> str | None:
        """The line of the source's page (or snippet) that holds ``claim`` word for word, if one
        does: a sentence read from a table row, a list item or the line after a code block is
        shown as it stands, whatever the sentence splitter makes of its surroundings."""
        core = " ".join(claim.rstrip(" .;:!?").split())
        words = core.split()
        if len(words) < VERBATIM_MIN_WORDS:
            return None
        longest = max(words, key=len).strip("`*_")
        for text in (self._page(source_id), " ".join(self._snippet(source_id))):
            if longest not in text:  # cheap: most claims are not the page's own words
                continue
            found = _find_words(text, core, words)
            if found is None:
                continue
            first, last = found
            start = text.rfind("\n", 0, first) + 1
            end = text.find("\n", last)
            end = len(text) if end < 0 else end
            if end - start > last - first + 2 * VERBATIM_MARGIN:
                # A long line (a paragraph): a few words before (a subject or a pronoun's), and
                # the rest of the sentence after (a qualifier the claim may have dropped), not
                # the next sentence.
                start = _word_start(text, max(start, first - VERBATIM_MARGIN))
                end = _sentence_end(text, last, min(end, last + VERBATIM_MARGIN))
            return " ".join(text[start:end].split())
        return None

    def excerpts(self, claim: str, source_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(source id, excerpt)`` pairs for ``claim``, at most ``max_chars`` characters in all.

        Every cited source first gets its best excerpt (cut to an equal share of the budget),
        then the remaining budget goes to each source's further excerpts.
        """
        key = (claim, tuple(source_ids))
        chosen = self._chosen.get(key)
        if chosen is None:
            chosen = self._chosen[key] = self._choose(claim, source_ids)
        return list(chosen)

    def _choose(self, claim: str, source_ids: Sequence[str]) -> list[tuple[str, str]]:
        ranked = [(sid, self.matches(sid, claim)) for sid in source_ids]
        ranked = [(sid, excerpts) for sid, excerpts in ranked if excerpts]
        if not ranked:
            return []
        share = max(MIN_EXCERPT_CHARS, self._max_chars // len(ranked))
        chosen: dict[str, list[str]] = {sid: [] for sid, _ in ranked}
        used = 0
        for rank in range(self._per_source):
            for sid, excerpts in ranked:
                if rank >= len(excerpts):
                    continue
                room = self._max_chars - used
                if rank == 0:
                    room = min(room, share)
                if room < MIN_EXCERPT_CHARS:
                    continue
                text = _truncate(excerpts[rank], room)
                chosen[sid].append(text)
                used += len(text)
        return [(sid, text) for sid, _ in ranked for text in chosen[sid]]


def sentences_of(text: str) -> list[str]:
    """``text``'s sentences in order (a very long one cut at word boundaries)."""
    return [
        piece
        for paragraph in re.split(r"\n\s*\n", text)
        for sentence in split_sentences(paragraph)
        for piece in cut_words(sentence, PASSAGE_MAX_CHARS)
    ]


def _adding(hits: list[int], index: PassageIndex, claim_words: list[str]) -> list[int]:
    """``hits`` (best first) without those that share no claim word the ones before lack."""
    wanted = set(claim_words)
    seen: set[str] = set()
    kept = []
    for number, hit in enumerate(hits):
        words = wanted & index.words_of(hit)
        if number == 0 or words - seen:
            kept.append(hit)
            seen |= words
    return kept


def _find_words(text: str, core: str, words: list[str]) -> tuple[int, int] | None:
    """Where ``text`` holds ``core`` (its ``words``): as it stands, or with other spacing and
    the markup its words were stripped of (code spans, emphasis, table bars) around them."""
    at = text.find(core)
    if at >= 0:
        return at, at + len(core)
    # Searched only around where its longest word stands: a long page is not scanned whole
    # for every claim (the words, their markup and spacing stay within ``reach`` of it).
    anchor = max(words, key=len).strip("`*_")
    place = text.find(anchor)
    if place < 0:
        return None
    bare = [word.strip("`*_") for word in words]
    reach = 2 * len(core) + 64
    while place >= 0:
        found = _words_at(text, bare, max(0, place - reach), place + len(anchor) + reach)
        if found is not None:
            return found
        place = text.find(anchor, place + 1)
    return None


def _words_at(text: str, bare: list[str], start: int, end: int) -> tuple[int, int] | None:
    """The first place between ``start`` and ``end`` where ``text`` holds the ``bare`` words in
    order, one or more spaces or markup characters (`` ` * _ | ``) between two and markup
    around them: what the regular expression ``[`*_]*w1[\\s`*_|]+w2…[`*_]*`` finds, without
    compiling one for every claim."""
    end = min(end, len(text))
    first = bare[0]
    at = text.find(first, start, end)
    while at >= 0:
        last = _rest_at(text, bare, at + len(first), end)
        if last is not None:
            while at > start and text[at - 1] in _MARKUP:
                at -= 1
            while last < end and text[last] in _MARKUP:
                last += 1
            return at, last
        at = text.find(first, at + 1, end)
    return None


def _rest_at(text: str, bare: list[str], position: int, end: int) -> int | None:
    """Where the words after the first end when the first ends at ``position``: each after a
    run of separators, the longest run tried first (as a greedy expression backtracks)."""
    if len(bare) == 1:
        return position
    tried = [_places(text, bare[1], position, end)]
    while tried:
        number = len(tried)  # the word being placed
        place = next(tried[-1], None)
        if place is None:
            tried.pop()
            continue
        after = place + len(bare[number])
        if number + 1 == len(bare):
            return after
        tried.append(_places(text, bare[number + 1], after, end))
    return None


def _places(text: str, word: str, position: int, end: int) -> Iterator[int]:
    """Where ``word`` may start after the separators that follow ``position``, latest first."""
    run = position
    while run < end and (text[run].isspace() or text[run] in _SEPARATORS):
        run += 1
    return (
        place
        for place in range(run, position, -1)
        if place + len(word) <= end and text.startswith(word, place)
    )


def _sentence_end(text: str, index: int, limit: int) -> int:
    """The end of the sentence going on at ``index`` (its full stop kept), or the end of the
    last word before ``limit``."""
    stop = _SENTENCE_STOP.search(text, index, limit)
    return stop.end() if stop is not None else _word_end(text, limit)


def _word_start(text: str, index: int) -> int:
    """``index`` moved forward to the start of a word (a cut never splits one)."""
    if index == 0 or text[index - 1].isspace():
        return index
    space = text.find(" ", index)
    return index if space < 0 else space + 1


def _word_end(text: str, index: int) -> int:
    """``index`` moved back to the end of a word."""
    if index >= len(text) or text[index].isspace():
        return index
    space = text.rfind(" ", 0, index)
    return index if space < 0 else space


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 2)
    return text[: cut if cut > 0 else limit - 2].rstrip() + " …"
