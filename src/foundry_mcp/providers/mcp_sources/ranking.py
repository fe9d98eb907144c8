"""How well an item of an MCP source answers a query, judged here without a model.

Words are compared lower-cased, split at punctuation (paths at ``/ . _ -``), without common
function words and a plural's ``s``. An item's name scores the query words it shares; its text
scores the most query words found close together (within :data:`WINDOW` words), so a long page
that mentions every word somewhere ranks below the paragraph that holds them together.
"""

from __future__ import annotations

import re
from collections import Counter

WINDOW = 40  # words: about a paragraph
STOP_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "does",
        "did",
        "how",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "from",
        "this",
        "that",
        "these",
        "those",
        "into",
        "about",
        "than",
        "then",
        "them",
        "they",
        "their",
        "there",
        "its",
        "our",
        "your",
        "you",
        "not",
        "but",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "any",
        "all",
        "each",
        "per",
        "via",
    ]
)


def words(text: str) -> set[str]:
    """The words of ``text`` worth matching (see the module)."""
    return set(_tokens(text))


def shared(name: str, wanted: set[str]) -> int:
    """How many of the query's words ``name`` holds."""
    return len(words(name) & wanted)


def closest(text: str, wanted: set[str]) -> int:
    """The most query words any :data:`WINDOW` consecutive words of ``text`` hold."""
    tokens = [token if token in wanted else "" for token in _tokens(text)]
    window: Counter[str] = Counter()
    best = 0
    for index, token in enumerate(tokens):
        window[token] += 1
        if index >= WINDOW:
            leaving = tokens[index - WINDOW]
            window[leaving] -= 1
            if not window[leaving]:
                del window[leaving]
        best = max(best, len(window) - ("" in window))
    return best


def _tokens(text: str) -> list[str]:
    found = re.findall(r"[a-z0-9]+", text.lower())
    return [_stem(word) for word in found if len(word) > 2 and word not in STOP_WORDS]


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
