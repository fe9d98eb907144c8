"""What an analyst's prompts carried of the pages: page text sent, and the distinct text of it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from .brain import SOURCE_TEXT_RE

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def page_text_sent(prompts: Iterable[str]) -> tuple[int, int]:
    """The characters of page text in ``prompts`` (each source block's ``Content:``, sentence
    by sentence, without the ``[…]`` marks): all told, and distinct (a sentence a page holds
    twice, such as a code fence, counts as often as one block of that source holds it)."""
    sent = 0
    most: Counter[tuple[str, str]] = Counter()
    for prompt in prompts:
        for source_id, block in SOURCE_TEXT_RE.findall(prompt):
            content = block.split("Content:", 1)[1] if "Content:" in block else ""
            lines = Counter(
                sentence
                for line in content.replace("[…]", "\n").splitlines()
                for sentence in _SENTENCE_END.split(" ".join(line.split()))
            )
            lines.pop("", None)
            for text, times in lines.items():
                sent += len(text) * times
                most[(source_id, text)] = max(most[(source_id, text)], times)
    return sent, sum(len(text) * times for (_, text), times in most.items())
