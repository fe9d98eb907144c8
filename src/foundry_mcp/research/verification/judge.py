"""Asking the fact-checker: excerpts of the cited sources, batches of claims, their verdicts.

Only :func:`verify_draft` talks to the model; choosing excerpts and reading its answer are
plain functions.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from foundry_mcp.context.passages import PassageIndex, content_words
from foundry_mcp.errors import ProviderError
from foundry_mcp.research.models import (
    ResearchState,
    Source,
    Verdict,
    VerificationSummary,
)
from foundry_mcp.research.prompts.verifier import ClaimEvidence, verifier_prompts
from foundry_mcp.research.verification.quotes import stored_text
from foundry_mcp.research.workflow.calls import ResearchLLM
from foundry_mcp.research.workflow.fanout import fan_out
from foundry_mcp.research.workflow.jsonparse import parse_handoff

log = logging.getLogger(__name__)

BATCH_SIZE = 8  # claims per fact-checker call, when calls need not be spread over slots
BATCH_MAX = 12  # claims per call at most, to save a wave of calls
BATCH_MIN = 4  # claims per call at least, when spreading them over the slots
VERIFIER_MAX_TOKENS = 2048
PASSAGES_PER_SOURCE = 2
EXCERPT_CHARS_PER_CLAIM = 1500
MIN_EXCERPT_CHARS = 120

# --------------------------------------------------------------------------- excerpts

# Passages and BM25 live in foundry_mcp.context.passages (shared with passage selection).


class ExcerptSelector:
    """Chooses, for a claim, short excerpts of the sources it cites; sources indexed once."""

    def __init__(
        self,
        sources: Mapping[str, Source],
        *,
        per_source: int = PASSAGES_PER_SOURCE,
        max_chars: int = EXCERPT_CHARS_PER_CLAIM,
    ) -> None:
        self._sources = sources
        self._per_source = per_source
        self._max_chars = max_chars
        self._indexes: dict[str, PassageIndex] = {}

    def _index(self, source_id: str) -> PassageIndex:
        index = self._indexes.get(source_id)
        if index is None:
            source = self._sources.get(source_id)
            text = stored_text(source)[0] if source else ""  # where quotes are taken from
            index = self._indexes[source_id] = PassageIndex.build(text.strip())
        return index

    def best_passage(self, source_id: str, claim: str) -> str | None:
        """The passage of ``source_id`` that shares most with ``claim``, if any does."""
        passages = self._index(source_id).best(content_words(claim), 1)
        return passages[0] if passages else None

    def excerpts(self, claim: str, source_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(source id, excerpt)`` pairs for ``claim``, at most ``max_chars`` characters in all.

        Every cited source first gets its best passage (cut to an equal share of the budget),
        then the remaining budget goes to each source's next passages, each only when it holds
        words of the claim that the source's better passages lack (a claim drawn from two
        places of a page); a passage that adds nothing to the check is not shown.
        """
        query = content_words(claim)
        ranked = [
            (sid, _adding(self._index(sid).best(query, self._per_source), query))
            for sid in source_ids
        ]
        ranked = [(sid, passages) for sid, passages in ranked if passages]
        if not ranked:
            return []
        share = max(MIN_EXCERPT_CHARS, self._max_chars // len(ranked))
        chosen: dict[str, list[str]] = {sid: [] for sid, _ in ranked}
        used = 0
        for rank in range(self._per_source):
            for sid, passages in ranked:
                if rank >= len(passages):
                    continue
                room = self._max_chars - used
                if rank == 0:
                    room = min(room, share)
                if room < MIN_EXCERPT_CHARS:
                    continue
                text = _truncate(passages[rank], room)
                chosen[sid].append(text)
                used += len(text)
        return [(sid, text) for sid, _ in ranked for text in chosen[sid]]


def _adding(passages: list[str], claim_words: list[str]) -> list[str]:
    """``passages`` (best first) without those that share no claim word the ones before lack."""
    wanted = set(claim_words)
    seen: set[str] = set()
    kept = []
    for number, passage in enumerate(passages):
        words = wanted.intersection(content_words(passage))
        if number == 0 or words - seen:
            kept.append(passage)
            seen |= words
    return kept


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 2)
    return text[: cut if cut > 0 else limit - 2].rstrip() + " …"


# --------------------------------------------------------------------------- the judge


class _JudgedClaim(BaseModel):
    model_config = ConfigDict(extra="ignore")

    claim: Any = None
    verdict: Any = None
    reason: Any = ""


class _JudgeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    verdicts: list[_JudgedClaim] = Field(default_factory=list)


def read_verdict(value: Any) -> Verdict | None:
    """The verdict a judge wrote, leniently read; None when it names none."""
    word = " ".join(str(value or "").lower().replace("_", " ").replace("-", " ").split())
    if "partial" in word or "partly" in word:
        return Verdict.PARTIAL
    if word.startswith(("unsupport", "not support", "contradict", "refute", "false")):
        return Verdict.UNSUPPORTED
    if word.startswith(("support", "true", "confirm")):
        return Verdict.SUPPORTED
    return None


def read_judge_answer(text: str, count: int) -> dict[int, tuple[Verdict, str]] | None:
    """Verdicts by claim number (1..``count``) from the judge's answer; None if unreadable."""
    answer = parse_handoff(text, _JudgeAnswer)
    if answer is None:
        return None
    verdicts: dict[int, tuple[Verdict, str]] = {}
    for item in answer.verdicts:
        number = re.search(r"\d+", str(item.claim))
        verdict = read_verdict(item.verdict)
        if number is None or verdict is None:
            continue
        n = int(number.group())
        if 1 <= n <= count and n not in verdicts:
            verdicts[n] = (verdict, " ".join(str(item.reason or "").split()))
    return verdicts


def batches(items: Sequence[int], size: int = BATCH_SIZE) -> list[list[int]]:
    """``items`` in consecutive groups of at most ``size``."""
    return [list(items[i : i + size]) for i in range(0, len(items), max(1, size))]


def spread(items: Sequence[int], slots: int) -> list[list[int]]:
    """``items`` in consecutive batches that keep ``slots`` concurrent calls evenly busy.

    As few waves of ``slots`` calls as batches of at most ``BATCH_MAX`` allow, the batches
    within one claim of each other (a judge's answer grows with its claims), none under
    ``BATCH_MIN`` claims unless there are fewer: 33 claims on 4 slots are calls of 9, 8, 8
    and 8, not four of 8 and then one of 1.
    """
    count = len(items)
    if count == 0:
        return []
    slots = max(1, slots)
    waves = math.ceil(count / (slots * BATCH_MAX))
    calls = max(1, min(math.ceil(count / BATCH_MIN), waves * slots))
    size, larger = divmod(count, calls)  # the first ``larger`` batches carry one more
    result, start = [], 0
    for n in range(calls):
        end = start + size + (1 if n < larger else 0)
        result.append(list(items[start:end]))
        start = end
    return result


@dataclass
class Judged:
    """The fact-checker's answers, one ``(verdict or None, reason)`` per claim asked about."""

    answers: list[tuple[Verdict | None, str]]
    stopped: str | None = None  # the provider error that stopped the checks, if any
    unreadable: int = 0  # claims whose answer could not be read

    def warn(self, state: ResearchState) -> None:
        if self.stopped:
            state.warn(
                f"Citation verification stopped after a provider error ({self.stopped}); "
                "the claims not yet checked are kept unverified."
            )
        if self.unreadable:
            state.warn(
                f"A fact-check answer could not be read; {self.unreadable} claim(s) were left "
                "unverified."
            )


async def judge_claims(
    llm: ResearchLLM,
    state: ResearchState,
    items: Sequence[tuple[str, list[tuple[str, str]]]],
    summary: VerificationSummary,
) -> Judged:
    """Ask the fact-checker about each ``(claim text, excerpts)``, in batches spread over
    ``state.limits.max_concurrent`` concurrent calls (see :func:`spread`).

    A provider error stops the calls not yet made; their claims get no verdict.
    """
    judged = Judged([(None, "") for _ in items])
    semaphore = anyio.Semaphore(max(1, state.limits.max_concurrent))

    async def judge(batch: list[int]) -> None:
        async with semaphore:
            if judged.stopped:
                for i in batch:
                    judged.answers[i] = (
                        None,
                        "Not checked: the fact-checker could not be reached.",
                    )
                return
            numbered = [
                ClaimEvidence(number=n, text=items[i][0], excerpts=items[i][1])
                for n, i in enumerate(batch, start=1)
            ]
            system, user = verifier_prompts(state.query, numbered)
            summary.llm_calls += 1
            try:
                text = await llm.ask(
                    "verification", system, user, json_mode=True, max_tokens=VERIFIER_MAX_TOKENS
                )
            except ProviderError as exc:
                log.warning("citation verification stopped: %s", exc.message)
                judged.stopped = judged.stopped or exc.message
                for i in batch:
                    judged.answers[i] = (
                        None,
                        "Not checked: the fact-checker could not be reached.",
                    )
                return
        answer = read_judge_answer(text, len(batch))
        if answer is None:
            judged.unreadable += len(batch)
            for i in batch:
                judged.answers[i] = (None, "The fact-checker's answer could not be read.")
            return
        for n, i in enumerate(batch, start=1):
            judged.answers[i] = answer.get(n, (None, "The fact-checker gave no verdict on it."))

    await fan_out(judge, spread(list(range(len(items))), state.limits.max_concurrent))
    return judged
