"""The degradation ladder: shortening one item to the size its level allows.

For an item at a level below FULL with a target of ``T`` tokens:

1. **Focus.** A long text is first reduced by query-focused passage selection to at most
   ``FOCUS_FACTOR * T`` tokens (and never more than ``FOCUS_MAX_TOKENS``): the summarizer reads
   the passages that bear on the question, in order, with ``[…]`` for what was left out.
2. **Extract or summarize.** A target above ``SUMMARY_MAX_TOKENS`` is met by selection alone:
   a summary that long costs more output tokens (and minutes) than it saves, and verbatim
   passages keep the source's own words for citation checks. A smaller target is met by a
   summary from the summarization chain (``summarization_provider`` then
   ``summarization_providers``; by default the research's own model), each call limited to
   ``summarization_timeout`` seconds. A provider that fails or times out hands over to the
   next; an answer far too long is asked again one level lower; a cached summary of the same
   input is reused.
3. **Marked truncation**, the last resort when every provider failed: the focused text cut to
   ``T`` tokens, ending with a marker that says so.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import anyio

from foundry_mcp.context.cache import SummaryCache, summary_key
from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.reading.selection import ELISION, select_passages, truncate_to_tokens
from foundry_mcp.context.tokens import TokenCounter
from foundry_mcp.errors import FoundryError

log = logging.getLogger(__name__)

SUMMARY_MAX_TOKENS = 2_000
FOCUS_FACTOR = 2.0
FOCUS_MAX_TOKENS = 12_000
LENGTH_TOLERANCE = 1.3  # a summary up to 30% (+16 tokens) over its target is accepted
CUT_TOLERANCE = 2.0  # up to twice the target it is cut to size; longer, it is asked again
TRUNCATION_MARK = "[… shortened without a summary]"


# Builds the (system, user) prompts asking for ``text`` at ``level`` in about ``words`` words:
# (question, title, text, level, words). The research layer hands its own in.
SummaryPrompts = Callable[[str, str, str, ContentLevel, int], tuple[str, str]]


class SummaryModel(Protocol):
    """One summarization provider: sends a prompt, returns the text (raises on failure)."""

    label: str

    async def summarize(self, system: str, user: str, max_tokens: int) -> str: ...


@dataclass(frozen=True)
class Degraded:
    """One item's text at its level, and how it was made."""

    text: str
    tokens: int
    level: ContentLevel
    method: str  # full | selection | summary | truncation | dropped
    summarizer: str | None = None
    cached: bool = False


class Ladder:
    """Shortens texts to levels; one per research phase (it holds the failure log)."""

    def __init__(
        self,
        counter: TokenCounter,
        models: Sequence[SummaryModel] = (),
        *,
        prompts: SummaryPrompts,
        prompt_version: str,
        cache: SummaryCache | None = None,
        timeout: float = 60.0,
        summary_max_tokens: int = SUMMARY_MAX_TOKENS,
        focus_max_tokens: int = FOCUS_MAX_TOKENS,
    ) -> None:
        self.counter = counter
        self.models = list(models)
        self.prompts = prompts
        self.prompt_version = prompt_version  # part of the cache key: new prompts, new summaries
        self.cache = cache
        self.timeout = timeout
        self.summary_max_tokens = summary_max_tokens
        self.focus_max_tokens = focus_max_tokens
        self.failures: list[str] = []  # "label: reason" of every failed summary call
        self.calls = 0

    def words_for(self, tokens: int) -> int:
        """About how many words make ``tokens`` with this counter."""
        per_token = 0.5 if self.counter.name == "estimate" else 0.7
        return max(5, int(tokens * per_token))

    async def degrade(
        self,
        text: str,
        level: ContentLevel,
        target: int,
        query: str | list[str],
        *,
        question: str = "",
        title: str = "",
    ) -> Degraded:
        """``text`` at ``level``, at most about ``target`` tokens."""
        text = text.strip()
        if level is ContentLevel.DROPPED or target <= 0:
            return Degraded("", 0, ContentLevel.DROPPED, "dropped")
        tokens = self.counter.count(text)
        if level is ContentLevel.FULL or tokens <= target:
            return Degraded(text, tokens, level, "full")
        if target > self.summary_max_tokens or not self.models:
            selected = select_passages(text, query, target, self.counter)
            return Degraded(selected.text, selected.tokens, level, "selection")
        focus_budget = min(tokens, max(target, math.ceil(FOCUS_FACTOR * target)))
        focus_budget = min(focus_budget, max(target, self.focus_max_tokens))
        focused = select_passages(text, query, focus_budget, self.counter).text
        summary = await self._summarize(focused, level, target, question, title)
        if summary is not None:
            return summary
        room = target - self.counter.count("\n" + TRUNCATION_MARK)
        cut = select_passages(focused, query, max(1, room), self.counter).text
        cut = truncate_to_tokens(cut, max(1, room), self.counter, ELISION)
        final = f"{cut}\n{TRUNCATION_MARK}"
        return Degraded(final, self.counter.count(final), level, "truncation")

    async def _summarize(
        self, focused: str, level: ContentLevel, target: int, question: str, title: str
    ) -> Degraded | None:
        key = summary_key(self.prompt_version, level.value, target, focused)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                text, provider = hit
                return Degraded(
                    text, self.counter.count(text), level, "summary", provider, cached=True
                )
        for model in self.models:
            asked: ContentLevel | None = level
            tries = 0
            while asked is not None and asked is not ContentLevel.DROPPED and tries < 2:
                tries += 1
                words = self.words_for(
                    target if asked is level else math.ceil(target * asked.ratio / level.ratio)
                )
                system, user = self.prompts(question, title, focused, asked, words)
                try:
                    self.calls += 1
                    with anyio.fail_after(self.timeout):
                        answer = await model.summarize(
                            system, user, min(4096, math.ceil(target * CUT_TOLERANCE) + 64)
                        )
                except TimeoutError:
                    self._failed(model.label, f"no answer within {self.timeout:g} s")
                    break
                except FoundryError as exc:
                    self._failed(model.label, exc.message)
                    break
                except Exception as exc:  # an SDK error the adapter did not map
                    self._failed(model.label, f"{type(exc).__name__}: {exc}")
                    break
                answer = answer.strip()
                tokens = self.counter.count(answer)
                if not answer:
                    self._failed(model.label, "empty answer")
                    break
                if tokens <= target * LENGTH_TOLERANCE + 16:
                    return self._keep(key, answer, tokens, level, model.label)
                if tokens <= target * CUT_TOLERANCE:
                    cut = truncate_to_tokens(answer, target, self.counter, "…")
                    return self._keep(key, cut, self.counter.count(cut), level, model.label)
                asked = asked.below()  # far too long: ask for the next rung down
            else:
                self._failed(model.label, "answers stayed far longer than asked")
        return None

    def _keep(self, key: str, text: str, tokens: int, level: ContentLevel, label: str) -> Degraded:
        if self.cache is not None:
            self.cache.put(key, text, tokens, label)
        return Degraded(text, tokens, level, "summary", label)

    def _failed(self, label: str, reason: str) -> None:
        log.info("summarization by %s failed: %s", label, reason)
        self.failures.append(f"{label}: {reason}")
