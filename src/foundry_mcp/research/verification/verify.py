"""Verifying a draft: its cited sentences judged against their sources, wrong citations
repaired, the verdicts applied (see the package's documentation)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import anyio

from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    ClaimCheck,
    ResearchState,
    Source,
    Verdict,
    VerificationSummary,
)
from foundry_mcp.research.verification.claims import DraftClaims, apply_verdicts, split_claims
from foundry_mcp.research.verification.excerpts import ExcerptSelector
from foundry_mcp.research.verification.judge import judge_claims
from foundry_mcp.research.verification.repair import repair_citations


@dataclass
class _Evidence:
    """A draft's claims, a check for each, and the excerpts of those to judge, by number."""

    split: DraftClaims
    checks: list[ClaimCheck]
    evidence: dict[int, list[tuple[str, str]]]
    to_judge: list[int]


@dataclass
class VerifiedDraft:
    """The draft after verification, the verdict on each claim and their counts."""

    markdown: str
    summary: VerificationSummary
    checks: list[ClaimCheck]
    asked: int = 0  # claims sent to the fact-checker
    late: int = 0  # of them, those it had not judged when the checks had to end


async def verify_draft(
    llm: ResearchLLM,
    state: ResearchState,
    draft: str,
    sources: Mapping[str, Source],
    selector: ExcerptSelector | None = None,
    cap: int | None = None,
    end_by: float = math.inf,
) -> VerifiedDraft:
    """Judge every cited sentence of ``draft`` against ``sources`` and apply the verdicts.

    Replaces ``state.claim_checks`` with one check per claim. At most
    ``state.options.max_verified_claims`` claims (or ``cap``, when lower: a deadline's) are
    sent to the judge, in batches spread over ``state.limits.max_concurrent`` concurrent calls
    (see :func:`spread`), and the checks end by ``end_by`` (anyio's clock: a deadline's), the
    claims not judged by then left unverified. A provider error leaves the claims not yet
    judged unverified and adds a warning; neither loses the report. ``selector`` (one whose
    sources' sentences are already indexed) is used for the excerpts when given.
    """
    configured = max(0, state.options.max_verified_claims)
    cap = configured if cap is None else min(configured, max(0, cap))
    # Choosing excerpts and finding their quotes is CPU work over every claim and the pages it
    # cites: done in a worker thread, the event loop keeps answering other calls meanwhile.
    gathered = await anyio.to_thread.run_sync(
        partial(_evidence, draft, sources, selector or ExcerptSelector(sources), cap)
    )
    split, claims, checks = gathered.split, gathered.split.claims, gathered.checks
    evidence, to_judge = gathered.evidence, gathered.to_judge

    summary = VerificationSummary(uncited_sentences=split.uncited_sentences)
    judged = await judge_claims(
        llm, state, [(claims[i].text, evidence[i]) for i in to_judge], summary, end_by
    )
    for i, (verdict, reason) in zip(to_judge, judged.answers, strict=True):
        if verdict is not None:
            checks[i].verdict = verdict
        checks[i].reason = reason
    judged.warn(state)
    replacements: dict[int, str] = {}
    if not judged.stopped and not judged.late:
        replacements = await repair_citations(llm, state, claims, checks, summary, end_by)

    verdicts = [check.verdict for check in checks]
    counts = Counter(verdicts)
    summary.claims_checked = len(checks)
    summary.supported = counts[Verdict.SUPPORTED]
    summary.partial = counts[Verdict.PARTIAL]
    summary.unsupported = counts[Verdict.UNSUPPORTED]
    summary.unverified = counts[Verdict.UNVERIFIED]
    summary.removed = counts[Verdict.UNSUPPORTED]
    summary.repaired = len(replacements)
    state.claim_checks = checks
    markdown = apply_verdicts(draft, claims, verdicts, replacements)
    return VerifiedDraft(markdown, summary, checks, asked=len(to_judge), late=judged.late)


def _evidence(
    draft: str, sources: Mapping[str, Source], selector: ExcerptSelector, cap: int
) -> _Evidence:
    """The claims of ``draft``, their excerpts and quotes; the first ``cap`` with excerpts are
    to be judged, the others get their reason now."""
    split = split_claims(draft)
    checks = [ClaimCheck(sentence=c.text, source_ids=list(c.source_ids)) for c in split.claims]
    gathered = _Evidence(split, checks, {}, [])
    for i, claim in enumerate(split.claims):
        known = [sid for sid in claim.source_ids if sid in sources]
        if not known:
            checks[i].verdict = Verdict.UNSUPPORTED
            checks[i].reason = "It cites no source the research gathered."
            continue
        excerpts = selector.excerpts(claim.text, known)
        checks[i].quotes = selector.quotes(excerpts)
        if not excerpts:
            checks[i].reason = "The cited sources have no text to check it against."
        elif len(gathered.to_judge) >= cap:
            checks[i].reason = f"Not checked: only the first {cap} cited sentences are checked."
        else:
            gathered.evidence[i] = excerpts
            gathered.to_judge.append(i)
    return gathered
