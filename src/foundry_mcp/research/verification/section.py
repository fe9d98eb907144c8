"""The report's Evidence Quality section: how far its claims rest on its sources."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from foundry_mcp.research.models import ClaimCheck, Verdict, VerificationSummary
from foundry_mcp.research.verification.claims import PARTIAL_MARK, SOURCE_ID

REMOVED_CLAIM_CHARS = 150
REASON_CHARS = 120
EVIDENCE_HEADING = "## Evidence Quality"


def evidence_quality_section(
    summary: VerificationSummary | None,
    checks: Sequence[ClaimCheck],
    *,
    sources_cited: int,
    sources_examined: int,
    confidence: Mapping[str, int],
    uncited_sentences: int,
    failed_searches: tuple[int, int] = (0, 0),
) -> str:
    """The ``## Evidence Quality`` section: how far the report's claims rest on its sources.

    ``summary`` is None when citations were not verified; the section then says so.
    ``failed_searches`` is (failed, total) sub-queries, reported when any failed.
    """
    lines = [EVIDENCE_HEADING, ""]
    if failed_searches[0]:
        lines.append(
            f"- Searches that failed: {failed_searches[0]} of {failed_searches[1]} sub-queries; "
            "the report rests only on what the other searches found."
        )
    if summary is None:
        lines.append(
            "- Citations were not verified: the cited sentences were not checked against the "
            "text of their sources."
        )
    else:
        lines.append(
            f"- Cited sentences checked against their sources: {summary.claims_checked} "
            f"({summary.supported} supported, {summary.partial} partly supported, "
            f"{summary.unsupported} unsupported, {summary.unverified} unverified)"
        )
        lines.append(f"- Unsupported sentences removed from the report: {summary.removed}")
        if summary.repaired:
            lines.append(
                f"- Citations repaired: {summary.repaired} (true sentences that cited a source "
                "which does not say them now cite one that does)"
            )
    lines.append(f"- Sentences without a citation: {uncited_sentences}")
    lines.append(f"- Sources cited: {sources_cited} of {sources_examined} examined")
    lines.append(
        "- Findings by confidence: "
        + ", ".join(f"{confidence.get(level, 0)} {level}" for level in ("high", "medium", "low"))
    )
    if summary is not None and summary.partial:
        lines += ["", f"Sentences marked {PARTIAL_MARK} are only partly backed by their sources."]
    if summary is not None and summary.unverified:
        lines += ["", "Unverified sentences are kept as written but were not confirmed."]
    repaired = [c for c in checks if c.repaired_from]
    if repaired:
        lines += ["", "Citations repaired (the sentence now cites the source that backs it):", ""]
        lines += [f'- "{_plain(check.sentence, REMOVED_CLAIM_CHARS)}"' for check in repaired]
    removed = [c for c in checks if c.verdict is Verdict.UNSUPPORTED]
    if removed:
        lines += ["", "Removed because their cited sources do not support them:", ""]
        for check in removed:
            entry = f'- "{_plain(check.sentence, REMOVED_CLAIM_CHARS)}"'
            if check.reason:
                entry += f" ({_plain(check.reason, REASON_CHARS)})"
            lines.append(entry)
    return "\n".join(lines) + "\n"


def _plain(text: str, limit: int) -> str:
    """One line without source ids or brackets that could read as citations, at most ``limit``."""
    text = SOURCE_ID.sub("a cited source", text)
    text = " ".join(text.replace("[", "(").replace("]", ")").split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text
