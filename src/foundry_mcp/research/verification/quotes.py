"""The quotes behind a claim: the excerpts the fact-checker saw, as spans of stored source text.

Excerpts are built from passages whose spacing was normalised (and may end cut, with " …"), so
each is found again in the source's stored text by its words, whatever spacing separates them
there. The quote is then the stored text's own characters at that span: a reader (or a test)
can check it against the source without trusting the excerpt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from foundry_mcp.research.models import EvidenceQuote, Source

_CUT_MARK = " …"


def locate(stored: str, excerpt: str) -> tuple[int, int] | None:
    """The ``(start, end)`` of ``excerpt``'s words in ``stored``, or None when they are not
    there in that order (spacing between them may differ)."""
    words = excerpt.removesuffix(_CUT_MARK).split()
    if not words:
        return None
    plain = " ".join(words)
    at = stored.find(plain)  # most excerpts are spaced as the text they come from
    if at >= 0:
        return at, at + len(plain)
    pattern = r"\s+".join(re.escape(word) for word in words)
    match = re.search(pattern, stored)
    return (match.start(), match.end()) if match else None


def stored_texts(source: Source) -> list[tuple[str, str]]:
    """The stored texts the fact-checker's excerpts of ``source`` come from, with their field's
    name: the page's text, and its search snippet (which the analyst is shown too)."""
    texts = [(source.content or "", "content"), (source.snippet or "", "snippet")]
    return [(text, field) for text, field in texts if text.strip()]


def quotes_for(
    sources: Mapping[str, Source], excerpts: Sequence[tuple[str, str]]
) -> list[EvidenceQuote]:
    """The excerpts ``(source id, text)`` as quotes of their sources' stored text."""
    quotes = []
    for source_id, excerpt in excerpts:
        source = sources.get(source_id)
        if source is None:
            continue
        for stored, field in stored_texts(source):
            span = locate(stored, excerpt)
            if span is not None:
                start, end = span
                quotes.append(
                    EvidenceQuote(
                        source_id=source_id,
                        text=stored[start:end],
                        start=start,
                        end=end,
                        field=field,
                    )
                )
                break
    return quotes
