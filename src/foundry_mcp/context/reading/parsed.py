"""A page's text parsed once for reading: its passages, their sentences, what each sentence says.

Reading pages (:func:`~foundry_mcp.context.reading.across.read_within`) values every sentence of
every passage by its identity (a sentence is read once), the stems of its content words (which
terms of the question it holds) and whether it states a figure. A research reads a page more
than once: a part's first round, then further passages of the pages that round read in part, a
follow-up question later. So a page's text is parsed once (:func:`parse_page`) and the parse is
kept in a cache bounded by the text it holds (:data:`CACHE_CHARS`); parsing is CPU work over
long pages, and it is what most of a research's own time was spent on.

A parse is a few flat tuples of strings and arrays of numbers, not an object per sentence: a
cache of long pages adds next to nothing to the time of a full garbage collection.
"""

from __future__ import annotations

import re
import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass

from foundry_mcp.context.reading.focus import spaced_sentence_key
from foundry_mcp.context.reading.passages import (
    Stemmer,
    split_passages_with_sentences,
)

CACHE_CHARS = 8_000_000  # characters of page text whose parses are kept (a parse is ~5x its text)

FIGURE_RE = re.compile(
    # "a digit not after a word or a dot", written digit first so the scan looks for digits
    r"\d(?<![\w.]\d)[\d,.]*\s?(?:%|per\s?cent\b|[x×](?!\w)|times\b"
    r"|(?:[kKMGT]i?)?B\b|bytes?\b|(?:[mµun]?s|secs?|seconds?|minutes?|hours?|days?)\b"
    r"|(?:thousand|million|billion)\b"
    r"|(?:operations|ops|requests|queries|calls|records|entries|rows|items|keys|cases"
    r"|connections|threads|processes|callers|users|lines|files|pages)\b)",
    re.IGNORECASE,
)
"""A figure: a number with a unit, a percentage, a count of things."""

_NOT_LOOKED_AT = 2

# Where a page's structure starts a new statement inside what reads as one sentence once its
# lines are joined: a heading, a code fence, a list item, a quoted block, a directive, a table row
# (the space between two cells' bars). A sentence's spacing is one space (``split_sentences``),
# so a break is a space, and what may follow one is looked at before the alternatives.
_STATEMENT_BREAK = re.compile(
    r" (?=[#`\-*+\d>.|])"
    r"(?=#{1,6}\s|```|[-*+]\s+\S|\d{1,2}[.)]\s+[A-Z`*]|>\s|\.\.\s+[\w-]+::|(?<=\|\s)\|)"
)
# What a statement break begins with: a sentence holding none of these is one statement.
_MAY_BREAK = re.compile(r" [#`\-*+\d>.|]")


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """A page's passages (text, whether it ends a paragraph), their sentences and statements.

    Flat, for the collector's sake: passage ``p``'s sentences are numbers
    ``sentences_of(p)``, sentence ``s``'s statements ``statements_of(s)``. A sentence has its
    key (:func:`~foundry_mcp.context.reading.focus.sentence_key`); a statement (see
    :func:`statements`) its lower-case text (its identity within a reading: spacing is already
    one space), the distinct stems of its content words and whether it states a figure
    (:data:`FIGURE_RE`).
    """

    passages: tuple[tuple[str, bool], ...]
    sentence_keys: tuple[str, ...]
    statement_texts: tuple[str, ...]
    statement_stems: tuple[tuple[str, ...], ...]
    figures: bytearray  # per statement: 1 states a figure, 0 not, 2 not looked at yet
    first_sentence: array[int]  # of each passage, and one past the last
    first_statement: array[int]  # of each sentence, and one past the last

    def sentences_of(self, passage: int) -> range:
        return range(self.first_sentence[passage], self.first_sentence[passage + 1])

    def statements_of(self, sentence: int) -> range:
        return range(self.first_statement[sentence], self.first_statement[sentence + 1])

    def states_figure(self, statement: int) -> bool:
        """Whether statement number ``statement`` states a figure (looked at once, when first
        asked: most statements hold no term of any question, and are never asked about)."""
        found = self.figures[statement]
        if found == _NOT_LOOKED_AT:
            found = self.figures[statement] = (
                FIGURE_RE.search(self.statement_texts[statement]) is not None
            )
        return bool(found)


def statements(sentence: str) -> list[str]:
    """``sentence`` (its spacing one space, as :func:`.passages.split_sentences` gives it) cut
    where the page's structure (see :data:`_STATEMENT_BREAK`) starts a new statement: a figure
    counts with the terms of its own statement, not with a heading's."""
    if not _MAY_BREAK.search(sentence):
        return [sentence]
    return [piece for piece in _STATEMENT_BREAK.split(sentence) if piece]


def parse_page(text: str) -> ParsedPage:
    """``text`` (a page's, stripped) parsed for reading: from the cache when it was parsed
    before. Safe to call from several threads."""
    return _CACHE.parse(text)


def parse_uncached(text: str) -> ParsedPage:
    """``text`` parsed for reading, without the cache."""
    split = split_passages_with_sentences(text)
    passages = tuple((passage, ends) for passage, ends, _ in split)
    stemmer = Stemmer()
    keys: list[str] = []
    texts: list[str] = []
    stemmed: list[tuple[str, ...]] = []
    first_sentence, first_statement = array("l"), array("l")
    for _, _, sentences in split:
        first_sentence.append(len(keys))
        for sentence in sentences:
            first_statement.append(len(texts))
            keys.append(spaced_sentence_key(sentence))
            for piece in statements(sentence):
                lower = piece.lower()
                texts.append(lower)
                stemmed.append(stemmer.distinct(lower))
    first_sentence.append(len(keys))
    first_statement.append(len(texts))
    return ParsedPage(
        passages,
        tuple(keys),
        tuple(texts),
        tuple(stemmed),
        bytearray([_NOT_LOOKED_AT]) * len(texts),
        first_sentence,
        first_statement,
    )


class _ParseCache:
    """Parses of page texts, the least recently used dropped past ``limit`` characters."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held: OrderedDict[str, ParsedPage] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def parse(self, text: str) -> ParsedPage:
        with self._lock:
            found = self._held.get(text)
            if found is not None:
                self._held.move_to_end(text)
                return found
        parsed = parse_uncached(text)  # outside the lock: other threads' pages meanwhile
        if len(text) > self.limit:
            return parsed
        with self._lock:
            if text not in self._held:
                self._held[text] = parsed
                self._chars += len(text)
                while self._chars > self.limit:
                    dropped, _ = self._held.popitem(last=False)
                    self._chars -= len(dropped)
        return parsed

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._chars = 0


_CACHE = _ParseCache(CACHE_CHARS)
