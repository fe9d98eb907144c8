"""Reading a report in pieces: its summary and fixed-size pages."""

from __future__ import annotations

import re
from typing import Any

SUMMARY_MAX_CHARS = 2000
_SUMMARY_HEADING = re.compile(
    r"^#{1,3}\s*(executive summary|summary|tl;?dr|overview)\s*$", re.IGNORECASE | re.MULTILINE
)
_ANY_HEADING = re.compile(r"^#{1,6}\s", re.MULTILINE)


def report_summary(report: str) -> str:
    """The executive summary section, else the first paragraph, at most 2,000 characters."""
    match = _SUMMARY_HEADING.search(report)
    if match:
        rest = report[match.end() :]
        following = _ANY_HEADING.search(rest)
        text = rest[: following.start()] if following else rest
    else:
        paragraphs = [
            p for p in report.split("\n\n") if p.strip() and not p.lstrip().startswith("#")
        ]
        text = paragraphs[0] if paragraphs else ""
    text = text.strip()
    if len(text) > SUMMARY_MAX_CHARS:
        text = text[: SUMMARY_MAX_CHARS - 1].rstrip() + "…"
    return text


def report_page(report: str, offset: int, max_chars: int) -> dict[str, Any]:
    """Characters ``[offset, offset + max_chars)`` of the report and where the next page starts.

    A page ends at a line break when one is near, so pages do not cut lines in half.
    """
    total = len(report)
    start = min(offset, total)
    end = min(total, start + max_chars)
    if end < total:
        newline = report.rfind("\n", start + max_chars // 2, end)
        if newline > start:
            end = newline + 1
    return {
        "report": report[start:end],
        "offset": start,
        "next_offset": end if end < total else None,
        "total_chars": total,
        "truncated": end < total,
    }
