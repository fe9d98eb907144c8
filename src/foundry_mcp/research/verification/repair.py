"""Citation repair: a claim its cited sources do not back may be true of another source.

Writers sometimes cite the wrong id for a true sentence. Before such a claim is removed, the
other gathered sources are searched for it: each one's passage sharing most of the claim's
content words is found, and the ``REPAIR_CANDIDATES`` sources whose best passage holds at least
``MIN_SHARED`` of those words are judged, one claim-and-source pair each, in one spread of
fact-checker calls. The first candidate judged ``supported`` becomes the claim's citation: its
sentence is rewritten to cite it, the check records what it cited before, and a
``citation_repaired`` event says so. A claim no candidate supports stays unsupported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from foundry_mcp.context.reading.passages import content_words
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    ClaimCheck,
    ResearchState,
    Source,
    Verdict,
    VerificationSummary,
)
from foundry_mcp.research.verification.claims import CITATION, Claim
from foundry_mcp.research.verification.excerpts import ExcerptSelector
from foundry_mcp.research.verification.judge import judge_claims
from foundry_mcp.research.verification.quotes import quotes_for

REPAIR_CANDIDATES = 2  # other sources judged for one claim
MIN_SHARED = 0.6  # share of the claim's content words a candidate's best passage must hold


async def repair_citations(
    llm: ResearchLLM,
    state: ResearchState,
    claims: Sequence[Claim],
    checks: list[ClaimCheck],
    summary: VerificationSummary,
    end_by: float = math.inf,
) -> dict[int, str]:
    """Repair the citations of the unsupported claims that another source backs (judged by
    ``end_by``, on anyio's clock; a candidate not judged by then repairs nothing).

    Updates their checks (verdict, sources, quotes, ``repaired_from``) and returns the new
    sentence of each repaired claim by its index.
    """
    unsupported = [i for i, check in enumerate(checks) if check.verdict is Verdict.UNSUPPORTED]
    if not unsupported:
        return {}
    pool = {s.id: s for s in state.sources if s.content or s.snippet}
    selector = ExcerptSelector(pool)
    trials: list[tuple[int, str, list[tuple[str, str]]]] = []  # (claim, source, excerpts)
    for i in unsupported:
        for source_id in candidates(claims[i].text, set(claims[i].source_ids), pool, selector):
            excerpts = selector.excerpts(claims[i].text, [source_id])
            if excerpts:
                trials.append((i, source_id, excerpts))
    if not trials:
        return {}
    judged = await judge_claims(
        llm, state, [(claims[i].text, excerpts) for i, _, excerpts in trials], summary, end_by
    )
    replacements: dict[int, str] = {}
    for (i, source_id, excerpts), (verdict, reason) in zip(trials, judged.answers, strict=True):
        if i in replacements or verdict is not Verdict.SUPPORTED:
            continue
        check = checks[i]
        check.repaired_from = list(check.source_ids)
        check.source_ids = [source_id]
        check.verdict = Verdict.SUPPORTED
        check.reason = reason or "Another gathered source supports it."
        check.quotes = quotes_for(pool, excerpts)
        replacements[i] = recite(claims[i].sentence, source_id)
        state.emit(
            "citation_repaired",
            {
                "sentence": claims[i].text[:300],
                "cited": check.repaired_from,
                "now_cites": source_id,
            },
        )
    return replacements


def candidates(
    claim: str, cited: set[str], pool: Mapping[str, Source], selector: ExcerptSelector
) -> list[str]:
    """Up to ``REPAIR_CANDIDATES`` other sources whose best passage holds most of the claim's
    content words (at least ``MIN_SHARED`` of them), best first."""
    words = set(content_words(claim))
    if not words:
        return []
    scored = []
    for source_id in pool:
        if source_id in cited:
            continue
        best = selector.best_passage(source_id, claim)
        if not best:
            continue
        shared = len(words & set(content_words(best))) / len(words)
        if shared >= MIN_SHARED:
            scored.append((-shared, source_id))
    return [source_id for _, source_id in sorted(scored)[:REPAIR_CANDIDATES]]


def recite(sentence: str, source_id: str) -> str:
    """``sentence`` citing ``source_id`` where it cited others (its first citation replaced,
    the rest removed)."""
    replaced = False

    def swap(_: re.Match[str]) -> str:
        nonlocal replaced
        if replaced:
            return ""
        replaced = True
        return f"[{source_id}]"

    text = CITATION.sub(swap, sentence)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)
    return re.sub(r"[ \t]{2,}", " ", text)
