"""Passages and BM25: the lexical retrieval shared by citation checks and passage selection.

A text is cut into passages of a few sentences; each passage's content words (lower-cased,
crudely stemmed, stop words removed) are indexed, and BM25 scores passages against a query.
Citation verification (:mod:`foundry_mcp.research.verification`) uses it to find the excerpts
that bear on a claim; passage selection (:mod:`foundry_mcp.context.reading.selection`) uses it to keep
the parts of a long source that bear on the research question.
"""

from __future__ import annotations

import functools
import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

# A passage ends at the first paragraph end past PASSAGE_MIN_CHARS: a paragraph is its author's
# unit of topic, and a passage running on into the next paragraph would carry a change of topic
# (on a broad page, from the question to another use of its subject) into one block of text.
PASSAGE_MIN_CHARS = 200
PASSAGE_MAX_CHARS = 600

TOKEN_RE = re.compile(r"[a-z0-9]+")  # a word of lower-cased text
_STOP_WORDS_TEXT = """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each either else
    few for from further had has have having he her here hers him his how however i if in into
    is it its itself just may me might more most much must my no nor not now of off on once
    only or other our ours out over own per same she should so some such than that the their
    theirs them then there these they this those through thus to too under until up upon us
    very via was we were what when where whether which while who whom whose why will with
    within without would yet you your
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
# A sentence ends at the space after a full stop, a question or an exclamation mark, before a
# capital or a digit (a quotation mark or a bracket may come between). Applied to text whose
# spacing is one space, so the scan looks for spaces.
_SENTENCE_BREAK = re.compile(r" (?<=[.!?] )(?=[\"'“(\[]*[A-Z0-9])")
# What opens a sentence after a full stop (the lookahead of _SENTENCE_BREAK, at a piece's start).
_OPENS_SENTENCE = re.compile(r"[\"'“(\[]*[A-Z0-9]")


def content_words(text: str) -> list[str]:
    """Lower-cased, stemmed words of ``text`` without stop words (numbers are kept)."""
    return [stem(token) for token in TOKEN_RE.findall(text.lower()) if _is_content_word(token)]


def _is_content_word(word: str) -> bool:
    """Not a stop word, and longer than a letter (a lone digit counts)."""
    return word not in STOP_WORDS and (len(word) > 1 or word.isdigit())


class _Stems(dict[str, str]):
    """Words and their stems ("" for a stop word), each word stemmed when first looked up."""

    def __missing__(self, word: str) -> str:
        found = self[word] = stem(word) if _is_content_word(word) else ""
        return found


class Stemmer:
    """The content words of many texts (see :func:`content_words`), each distinct word stemmed
    once: the words are found at C speed, and a long page's vocabulary is small beside it."""

    def __init__(self) -> None:
        self._stem_of = _Stems()

    def content_words(self, text: str) -> list[str]:
        """``text``'s content words, stemmed, in order."""
        return [
            found
            for found in map(self._stem_of.__getitem__, TOKEN_RE.findall(text.lower()))
            if found
        ]

    def distinct(self, lower: str) -> tuple[str, ...]:
        """The distinct content words of lower-case ``lower``, stemmed (in no particular
        order)."""
        found = set(map(self._stem_of.__getitem__, TOKEN_RE.findall(lower)))
        found.discard("")
        return tuple(found)


@functools.lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """A crude suffix stripper, so that "indexes", "indexing" and "index" meet."""
    if word.isdigit():
        return word
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + replacement
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def split_sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph, its spacing normalised."""
    return [s for s in _SENTENCE_BREAK.split(" ".join(paragraph.split())) if s]


def split_passages(
    text: str, min_chars: int = PASSAGE_MIN_CHARS, max_chars: int = PASSAGE_MAX_CHARS
) -> list[str]:
    """``text`` cut into passages of about ``min_chars``-``max_chars`` characters.

    Passages end at sentence boundaries, and at a paragraph end once they are ``min_chars``
    long; a single sentence longer than ``max_chars`` is cut at word boundaries.
    """
    return [passage for passage, _ in split_passages_with_breaks(text, min_chars, max_chars)]


def split_passages_with_breaks(
    text: str, min_chars: int = PASSAGE_MIN_CHARS, max_chars: int = PASSAGE_MAX_CHARS
) -> list[tuple[str, bool]]:
    """Like :func:`split_passages`, with whether each passage ends a paragraph."""
    return [
        (" ".join(pieces), ends) for pieces, ends in _passage_pieces(text, min_chars, max_chars)
    ]


def split_passages_with_sentences(
    text: str, min_chars: int = PASSAGE_MIN_CHARS, max_chars: int = PASSAGE_MAX_CHARS
) -> list[tuple[str, bool, list[str]]]:
    """Like :func:`split_passages_with_breaks`, with each passage's sentences as
    :func:`split_sentences` would give them, without splitting the passage again."""
    return [
        (" ".join(pieces), ends, _sentences_of(pieces))
        for pieces, ends in _passage_pieces(text, min_chars, max_chars)
    ]


def _passage_pieces(text: str, min_chars: int, max_chars: int) -> Iterator[tuple[list[str], bool]]:
    """The pieces of each passage (its sentences, and pieces of one longer than
    ``max_chars``), and whether it ends a paragraph; a passage is its pieces joined by spaces."""
    pieces: list[str] = []
    size = -1  # of the passage so far: its pieces and a space between each two
    for paragraph in re.split(r"\n\s*\n", text):
        for sentence in split_sentences(paragraph):
            for piece in cut_words(sentence, max_chars):
                if pieces and size + 1 + len(piece) > max_chars:
                    yield pieces, False
                    pieces, size = [], -1
                pieces.append(piece)
                size += 1 + len(piece)
        if size >= min_chars:
            yield pieces, True
            pieces, size = [], -1
    if pieces:
        yield pieces, True


def _sentences_of(pieces: list[str]) -> list[str]:
    """The sentences of the passage ``pieces`` make: a sentence ends between two pieces where
    :data:`_SENTENCE_BREAK` would cut the passage (a piece is part of one sentence, and a
    paragraph's last sentence may run on into the next paragraph's first, as they do once the
    passage joins them)."""
    sentences = [pieces[0]]
    for piece in pieces[1:]:
        if sentences[-1][-1] in ".!?" and _OPENS_SENTENCE.match(piece):
            sentences.append(piece)
        else:
            sentences[-1] += " " + piece
    return sentences


def cut_words(text: str, max_chars: int) -> list[str]:
    """``text`` in pieces of at most ``max_chars``, cut at spaces where possible: between two
    rows of a table (``| … | | … |``, as a table reads once its lines are joined) when one
    ends in the second half of the piece, so a row is not cut in two."""
    pieces: list[str] = []
    while len(text) > max_chars:
        row_end = text.rfind("| |", max_chars // 2, max_chars)
        cut = row_end + 1 if row_end > 0 else text.rfind(" ", 0, max_chars)
        cut = cut if cut > 0 else max_chars
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


@dataclass
class PassageIndex:
    """Passages with the term statistics BM25 needs, and each term's postings.

    A research keeps an index of every source it checks, and a full garbage collection walks
    every container the collector tracks, on the event loop. Here that is a few references per
    term (the postings of a term are one array), not one per posting: the indexes of 72
    documentation pages added 49 ms to every full collection as lists of tuples, 0.9 ms now
    (``benchmarks/latency/gc_pause.py``).
    """

    passages: tuple[str, ...]
    document_frequency: dict[str, int]
    average_length: float
    lengths: array[int] = field(default_factory=lambda: array("l"))
    # Per term, its passages and counts in turn: passage, tf, passage, tf, ...
    postings: dict[str, array[int]] = field(default_factory=dict)

    @classmethod
    def build(cls, text: str) -> PassageIndex:
        return cls.from_passages(split_passages(text))

    @classmethod
    def from_passages(cls, passages: Sequence[str]) -> PassageIndex:
        stemmer = Stemmer()
        words = [stemmer.content_words(p) for p in passages]
        postings: dict[str, array[int]] = {}
        for number, passage_words in enumerate(words):
            for term, tf in Counter(passage_words).items():
                found = postings.get(term)
                if found is None:
                    found = postings[term] = array("l")
                found.append(number)
                found.append(tf)
        frequency = {term: len(found) // 2 for term, found in postings.items()}
        lengths = array("l", (len(w) for w in words))
        average = sum(lengths) / len(lengths) if lengths else 0.0
        return cls(tuple(passages), frequency, average or 1.0, lengths, postings)

    def words_of(self, number: int) -> set[str]:
        """The content words of passage ``number``."""
        return set(content_words(self.passages[number]))

    def scores(self, query: Iterable[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
        """The BM25 score of every passage for the (unique) ``query`` terms."""
        n = len(self.passages)
        result = [0.0] * n
        for term in set(query):
            matches = self.postings.get(term)
            if not matches:
                continue
            frequency = self.document_frequency[term]
            weight = math.log(1 + (n - frequency + 0.5) / (frequency + 0.5))
            pairs = iter(matches)
            for number, tf in zip(pairs, pairs, strict=True):
                norm = k1 * (1 - b + b * self.lengths[number] / self.average_length)
                result[number] += weight * tf * (k1 + 1) / (tf + norm)
        return result

    def best(self, query: Sequence[str], count: int) -> list[str]:
        """The ``count`` passages that share most with ``query``, best first.

        When no passage shares a word with the query, the opening passage is given so the
        reader still sees what the text is about.
        """
        if not self.passages:
            return []
        scores = self.scores(query)
        ranked = sorted(range(len(self.passages)), key=lambda i: (-scores[i], i))
        chosen = [i for i in ranked[:count] if scores[i] > 0]
        return [self.passages[i] for i in chosen or [0]]
