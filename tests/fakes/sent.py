"""What an analyst's prompts carried of the pages: page text sent, and the distinct text of it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

from .brain import SOURCE_TEXT_RE

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def page_text_sent(
    prompts: Iterable[str], pages: Mapping[str, str] | None = None
) -> tuple[int, int]:
    """The characters of page text in ``prompts`` (each source block's ``Content:``, sentence
    by sentence, without the ``[…]`` marks): all told, and distinct.

    Distinct text is each sentence of a source counted at most as often as its page holds it
    (``pages``: the page text by source id), so a sentence a page repeats in ten places, sent
    from two of them, is not counted as sent twice; for a source whose page is not given, as
    often as one prompt's block of it holds it.
    """
    sent: Counter[tuple[str, str]] = Counter()
    most: Counter[tuple[str, str]] = Counter()
    for prompt in prompts:
        for source_id, block in SOURCE_TEXT_RE.findall(prompt):
            content = block.split("Content:", 1)[1] if "Content:" in block else ""
            for text, times in Counter(_sentences(content)).items():
                sent[(source_id, text)] += times
                most[(source_id, text)] = max(most[(source_id, text)], times)
    held = {source_id: Counter(_sentences(text)) for source_id, text in (pages or {}).items()}
    distinct = 0
    for (source_id, text), times in sent.items():
        page = held.get(source_id)
        allowed = most[(source_id, text)] if page is None else max(1, page[text])
        distinct += len(text) * min(times, allowed)
    return sum(len(text) * times for (_, text), times in sent.items()), distinct


def _sentences(content: str) -> Iterator[str]:
    for line in content.replace("[…]", "\n").splitlines():
        for sentence in _SENTENCE_END.split(" ".join(line.split())):
            if sentence:
                yield sentence
