"""Asking the fact-checker: excerpts of the cited sources, batches of claims, their verdicts.

Only :func:`verify_draft` talks to the model; choosing excerpts and reading its answer are
plain functions.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from foundry_mcp.context.passages import PassageIndex, content_words
from foundry_mcp.errors import ProviderError
from foundry_mcp.research.models import (
    ClaimCheck,
    ResearchState,
    Source,
    Verdict,
    VerificationSummary,
)
from foundry_mcp.research.prompts.verifier import ClaimEvidence, verifier_prompts
from foundry_mcp.research.verification.claims import apply_verdicts, split_claims
from foundry_mcp.research.verification.quotes import quotes_for
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
            text = (source.content or source.snippet or "") if source else ""
            index = self._indexes[source_id] = PassageIndex.build(text.strip())
        return index

    def excerpts(self, claim: str, source_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(source id, excerpt)`` pairs for ``claim``, at most ``max_chars`` characters in all.

        Every cited source first gets its best passage (cut to an equal share of the budget),
        then the remaining budget goes to each source's second-best passage.
        """
        query = content_words(claim)
        ranked = [(sid, self._index(sid).best(query, self._per_source)) for sid in source_ids]
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
class VerifiedDraft:
    """The draft after verification, the verdict on each claim and their counts."""

    markdown: str
    summary: VerificationSummary
    checks: list[ClaimCheck]


async def verify_draft(
    llm: ResearchLLM, state: ResearchState, draft: str, sources: Mapping[str, Source]
) -> VerifiedDraft:
    """Judge every cited sentence of ``draft`` against ``sources`` and apply the verdicts.

    Replaces ``state.claim_checks`` with one check per claim. At most
    ``state.options.max_verified_claims`` claims are sent to the judge, in batches spread over
    ``state.limits.max_concurrent`` concurrent calls (see :func:`spread`). A provider error leaves the claims
    not yet judged unverified and adds a warning; it never loses the report.
    """
    split = split_claims(draft)
    claims = split.claims
    checks = [ClaimCheck(sentence=c.text, source_ids=list(c.source_ids)) for c in claims]
    selector = ExcerptSelector(sources)
    evidence: dict[int, list[tuple[str, str]]] = {}
    to_judge: list[int] = []
    cap = max(0, state.options.max_verified_claims)
    for i, claim in enumerate(claims):
        known = [sid for sid in claim.source_ids if sid in sources]
        if not known:
            checks[i].verdict = Verdict.UNSUPPORTED
            checks[i].reason = "It cites no source the research gathered."
            continue
        excerpts = selector.excerpts(claim.text, known)
        checks[i].quotes = quotes_for(sources, excerpts)
        if not excerpts:
            checks[i].reason = "The cited sources have no text to check it against."
        elif len(to_judge) >= cap:
            checks[i].reason = f"Not checked: only the first {cap} cited sentences are checked."
        else:
            evidence[i] = excerpts
            to_judge.append(i)

    summary = VerificationSummary(uncited_sentences=split.uncited_sentences)
    semaphore = anyio.Semaphore(max(1, state.limits.max_concurrent))
    stopped: list[str] = []  # the provider error that stopped verification, if any
    unreadable = [0]

    async def judge(batch: list[int]) -> None:
        async with semaphore:
            if stopped:
                for i in batch:
                    checks[i].reason = "Not checked: the fact-checker could not be reached."
                return
            numbered = [
                ClaimEvidence(number=n, text=claims[i].text, excerpts=evidence[i])
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
                stopped.append(exc.message)
                for i in batch:
                    checks[i].reason = "Not checked: the fact-checker could not be reached."
                return
        answer = read_judge_answer(text, len(batch))
        if answer is None:
            unreadable[0] += len(batch)
            for i in batch:
                checks[i].reason = "The fact-checker's answer could not be read."
            return
        for n, i in enumerate(batch, start=1):
            if n in answer:
                checks[i].verdict, checks[i].reason = answer[n]
            else:
                checks[i].reason = "The fact-checker gave no verdict on it."

    await fan_out(judge, spread(to_judge, state.limits.max_concurrent))
    if stopped:
        state.warn(
            f"Citation verification stopped after a provider error ({stopped[0]}); "
            "the claims not yet checked are kept unverified."
        )
    if unreadable[0]:
        state.warn(
            f"A fact-check answer could not be read; {unreadable[0]} claim(s) were left unverified."
        )

    verdicts = [check.verdict for check in checks]
    counts = Counter(verdicts)
    summary.claims_checked = len(checks)
    summary.supported = counts[Verdict.SUPPORTED]
    summary.partial = counts[Verdict.PARTIAL]
    summary.unsupported = counts[Verdict.UNSUPPORTED]
    summary.unverified = counts[Verdict.UNVERIFIED]
    summary.removed = counts[Verdict.UNSUPPORTED]
    state.claim_checks = checks
    return VerifiedDraft(
        markdown=apply_verdicts(draft, claims, verdicts), summary=summary, checks=checks
    )
