"""Pages of the research list: the first ``limit`` rows, and a cursor for the rest."""

from __future__ import annotations

import base64
import json
from datetime import datetime

from foundry_mcp.errors import InputError
from foundry_mcp.research.store.records import ResearchSummary


def page(items: list[ResearchSummary], limit: int) -> tuple[list[ResearchSummary], str | None]:
    """The first ``limit`` of ``items`` (``limit + 1`` were read, newest first) and the next
    page's cursor, when there is a next page."""
    if len(items) <= limit:
        return items, None
    kept = items[:limit]
    return kept, encode_cursor(kept[-1].created_at, kept[-1].research_id)


def like_pattern(word: str) -> str:
    """``word`` for a LIKE pattern with ``\\`` as its escape: ``%`` and ``_`` match themselves."""
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def encode_cursor(created_at: str, research_id: str) -> str:
    raw = json.dumps([created_at, research_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    """``(created_at, research_id)`` of the last row of the previous page; ``InputError`` for
    anything that is not a cursor this store handed out."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, research_id = json.loads(base64.urlsafe_b64decode(padded))
        datetime.fromisoformat(str(created_at))
        return str(created_at), str(research_id)
    except (ValueError, TypeError):
        raise not_a_cursor("deep-research-list") from None


def not_a_cursor(action: str) -> InputError:
    """The error for a ``cursor`` that ``action`` did not hand out."""
    return InputError(
        f"cursor is not a cursor returned by {action}.",
        remediation="Pass next_cursor from the previous page unchanged, or omit cursor.",
        details={"field": "cursor"},
    )
