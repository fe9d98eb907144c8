"""Asking the fact-checker: batches of claims with their excerpts, and the verdicts.

Only :func:`verify_draft` talks to the model; reading its answer is plain functions (the
excerpts are chosen by :mod:`foundry_mcp.research.verification.excerpts`).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from foundry_mcp.errors import ProviderError
from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.llm.fanout import fan_out
from foundry_mcp.research.llm.jsonparse import read_answer
from foundry_mcp.research.models import (
    AgentRole,
    ResearchState,
    Verdict,
    VerificationSummary,
)
from foundry_mcp.research.prompts.verifier import ClaimEvidence, verifier_prompts

log = logging.getLogger(__name__)

BATCH_SIZE = 8  # claims per fact-checker call, when calls need not be spread over slots
BATCH_MAX = 12  # claims per call at most, to save a wave of calls
BATCH_MIN = 4  # claims per call at least, when spreading them over the slots
VERIFIER_MAX_TOKENS = 2048
NOT_IN_TIME = "Not checked: the deadline came before the fact-checker answered."


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
    answer = read_answer(text, _JudgeAnswer).value
    return None if answer is None else judged_verdicts(answer, count)


def judged_verdicts(answer: _JudgeAnswer, count: int) -> dict[int, tuple[Verdict, str]]:
    """Verdicts by claim number (1..``count``) of a judge's answer: those naming a claim asked
    about and a verdict, the first for each claim."""
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
    late: int = 0  # claims whose answer had not come when the checks had to end

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
    end_by: float = math.inf,
) -> Judged:
    """Ask the fact-checker about each ``(claim text, excerpts)``, in batches spread over
    ``state.limits.max_concurrent`` concurrent calls (see :func:`spread`).

    A provider error stops the calls not yet made; their claims get no verdict. So does
    ``end_by`` (a time on anyio's clock, a deadline's): the calls still out then are cancelled
    and their claims counted :attr:`Judged.late`.
    """
    judged = Judged([(None, NOT_IN_TIME) for _ in items])
    waiting = set(range(len(items)))
    semaphore = anyio.Semaphore(max(1, state.limits.max_concurrent))

    async def ask(system: str, user: str) -> str:
        summary.llm_calls += 1  # a repair request is a call too
        return await llm.ask(
            "verification", system, user, json_mode=True, max_tokens=VERIFIER_MAX_TOKENS
        )

    async def judge(batch: list[int]) -> None:
        async with semaphore:
            if judged.stopped:
                waiting.difference_update(batch)
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
            try:
                answer = await ask_json(
                    ask, system, user, _JudgeAnswer, state=state, agent=AgentRole.SYNTHESIZER
                )
            except ProviderError as exc:
                log.warning("citation verification stopped: %s", exc.message)
                judged.stopped = judged.stopped or exc.message
                waiting.difference_update(batch)
                for i in batch:
                    judged.answers[i] = (
                        None,
                        "Not checked: the fact-checker could not be reached.",
                    )
                return
        waiting.difference_update(batch)
        if answer is None:
            judged.unreadable += len(batch)
            for i in batch:
                judged.answers[i] = (None, "The fact-checker's answer could not be read.")
            return
        verdicts = judged_verdicts(answer, len(batch))
        for n, i in enumerate(batch, start=1):
            judged.answers[i] = verdicts.get(n, (None, "The fact-checker gave no verdict on it."))

    with anyio.CancelScope(deadline=end_by):
        await fan_out(
            judge, spread(list(range(len(items))), state.limits.max_concurrent), in_turn=True
        )
    judged.late = len(waiting)
    return judged
