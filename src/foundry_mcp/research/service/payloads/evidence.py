"""The evidence of a report: each cited sentence with its verdict, its sources as numbered in
the report, and the quotes the fact-checker saw (spans of the sources' stored text)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from foundry_mcp.research.models import ClaimCheck, ResearchState, Source


def claim_payload(
    check: ClaimCheck, numbers: Mapping[str, int], by_id: Mapping[str, Source]
) -> dict[str, Any]:
    """One checked sentence as ``deep-research-report`` with ``evidence=true`` returns it;
    ``numbers`` are the sources' numbers in the report, ``by_id`` the research's sources."""

    def cited(source_id: str) -> dict[str, Any]:
        source = by_id.get(source_id)
        return {
            "number": numbers.get(source_id),
            "source_id": source_id,
            "title": source.title if source else None,
            "url": source.url if source else None,
        }

    return {
        "sentence": check.sentence,
        "verdict": check.verdict.value,
        "reason": check.reason,
        "sources": [cited(sid) for sid in check.source_ids],
        "quotes": [
            {"number": numbers.get(q.source_id), **q.model_dump(mode="json")} for q in check.quotes
        ],
    }


def evidence_page(state: ResearchState, offset: int, max_chars: int) -> dict[str, Any]:
    """The checked sentences from number ``offset`` on, as many as fit ``max_chars`` of JSON
    (at least one), and where the next page starts (None at the end)."""
    checks = state.claim_checks
    numbers, by_id = state.citation_numbers(), state.source_by_id()
    claims: list[dict[str, Any]] = []
    used = 0
    index = offset
    while index < len(checks):
        claim = claim_payload(checks[index], numbers, by_id)
        size = len(json.dumps(claim, ensure_ascii=False))
        if claims and used + size > max_chars:
            break
        claims.append(claim)
        used += size
        index += 1
    return {
        "claims": claims,
        "offset": offset,
        "next_offset": index if index < len(checks) else None,
        "total_claims": len(checks),
    }


def all_claims(state: ResearchState) -> str:
    """Every checked sentence with its quotes, as JSON (the ``claims`` resource)."""
    numbers, by_id = state.citation_numbers(), state.source_by_id()
    claims = [claim_payload(check, numbers, by_id) for check in state.claim_checks]
    return json.dumps({"research_id": state.id, "claims": claims}, ensure_ascii=False, indent=1)
