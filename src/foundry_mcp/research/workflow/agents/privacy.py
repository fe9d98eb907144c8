"""Private stays private: words only the user's own sources hold never reach a public search.

The user's own sources (their documents, their MCP servers) hold text that is theirs: a
codename, a client, an internal host name. A research reads them, and everything written after
(findings, gaps, a later round's follow-up queries, the planner's queries beside a sample of the
documents' names) may carry their words. So before a query goes to a public search service
(Tavily, Google, Semantic Scholar, the keyless engines), the words of it that only the user's
own sources hold are left out (:meth:`PrivateWords.redact`):

* a word is *distinctive* when a private text writes it as a name (a capital inside a
  sentence: ``Quillmoor``, ``AcmeCorp``) or an identifier (digits, dashes, dots or underscores
  inside it: ``db-prod-7``, ``PRJ_42``); common words are nobody's secret;
* it is *private* when a private text holds it distinctively and neither the question nor any
  public source the research found holds it at all.

A query left with nothing to search is not sent to public services. Each redaction is an event
(``query_redacted``, how many words), and the research warns once. The user's own sources are
searched with the whole query. ``[research] private_text_in_public_searches = true`` turns
this off (the words then go where the query goes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from foundry_mcp.research.models import ResearchState, Source

_WORD = re.compile(r"[^\W_](?:[\w.\-]*[^\W_])?")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*)$")
_MIN_CHARS = 3
WARNING = (
    "Words found only in your own documents or MCP sources were left out of the searches sent "
    "to public search services ([research] private_text_in_public_searches = false); your own "
    "sources were searched with them, and the report uses what they hold."
)


def _key(word: str) -> str:
    return word.lower().strip(".-")


def _distinctive(word: str, preceding: str) -> bool:
    """Whether ``word`` (after ``preceding`` text) reads as a name or an identifier."""
    if len(word) < _MIN_CHARS:
        return False
    inner = word[1:-1]
    if any(ch.isdigit() for ch in word) or any(ch in "._-" for ch in inner):
        return True
    if any(ch.isupper() for ch in word[1:]):  # camelCase, acronyms
        return True
    return word[0].isupper() and not _SENTENCE_START.search(preceding)


class PrivateWords:
    """The words of one research that only the user's own sources hold; see the module."""

    def __init__(self, question: str, own_providers: frozenset[str]) -> None:
        self.own_providers = own_providers
        self._public: set[str] = {_key(m.group()) for m in _WORD.finditer(question)}
        self._private: set[str] = set()
        self.redacted = 0  # queries sent to public services with words left out

    # ------------------------------------------------------------------ learning

    def learn(self, sources: Iterable[Source]) -> None:
        """Learn the words of found sources: private if one of the user's own found them."""
        for source in sources:
            texts = (source.title, source.snippet, source.content or "")
            if source.provider in self.own_providers:
                self.learn_private(texts)
            else:
                self.learn_public(texts)

    def learn_private(self, texts: Iterable[str]) -> None:
        """Learn private texts (what the user's own sources hold, their names included)."""
        for text in texts:
            for match in _WORD.finditer(text):
                word = match.group()
                if _distinctive(word, text[max(0, match.start() - 3) : match.start()]):
                    self._private.add(_key(word))

    def learn_public(self, texts: Iterable[str]) -> None:
        """Learn public texts: a word any of them holds is nobody's secret."""
        for text in texts:
            self._public.update(_key(m.group()) for m in _WORD.finditer(text))

    def remember(self, states: Iterable[ResearchState]) -> None:
        """Learn the sources of saved states (a resumed research's researchers)."""
        for state in states:
            self.learn(state.sources)

    # ------------------------------------------------------------------ queries

    def private_in(self, query: str) -> list[str]:
        """The words of ``query`` only the user's own sources hold."""
        return [
            m.group()
            for m in _WORD.finditer(query)
            if (key := _key(m.group())) in self._private and key not in self._public
        ]

    def redact(self, query: str) -> tuple[str, int]:
        """``query`` for a public service: without its private words (see the module), and
        how many were left out. An empty text: nothing of it may go out."""
        private = set(self.private_in(query))
        if not private:
            return query, 0
        kept = [m.group() for m in _WORD.finditer(query) if m.group() not in private]
        meaningful = [word for word in kept if len(word) >= _MIN_CHARS]
        self.redacted += 1
        text = " ".join(kept) if meaningful else ""
        return text, sum(1 for m in _WORD.finditer(query) if m.group() in private)


def guard_for(
    state: ResearchState, own_providers: frozenset[str], public: Sequence[str]
) -> PrivateWords | None:
    """The research's private words, learnt from what it found so far; None when nothing
    needs guarding (no own source or no public service searched, or the user allows it)."""
    if state.options.search.private_text_in_public or not own_providers or not public:
        return None
    words = PrivateWords(state.parent_query or state.query, own_providers)
    words.learn(state.sources)
    return words
