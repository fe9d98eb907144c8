"""MCP's hints for each action of the ``research`` tool (read-only, destructive, idempotent):
published in the tool's ``_meta``, since MCP annotates whole tools only, and the tool's own
annotations, those of its least careful action.

Apart from the result models (:mod:`.data`): listing the tool needs the hints, not the models.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from mcp.types import ToolAnnotations


class ActionHints(NamedTuple):
    """MCP's tool hints for one action (destructive and idempotent matter only if not read-only)."""

    read_only: bool
    destructive: bool
    idempotent: bool


ACTION_HINTS: dict[str, ActionHints] = {
    "deep-research": ActionHints(read_only=False, destructive=False, idempotent=False),
    "deep-research-status": ActionHints(read_only=True, destructive=False, idempotent=True),
    "deep-research-report": ActionHints(read_only=True, destructive=False, idempotent=True),
    "deep-research-evidence": ActionHints(read_only=True, destructive=False, idempotent=True),
    "deep-research-list": ActionHints(read_only=True, destructive=False, idempotent=True),
    "deep-research-events": ActionHints(read_only=True, destructive=False, idempotent=True),
    # Partial results stay and the research can be resumed; cancelling again changes nothing.
    "deep-research-cancel": ActionHints(read_only=False, destructive=False, idempotent=True),
    "deep-research-resume": ActionHints(read_only=False, destructive=False, idempotent=False),
    # Each call keeps one more follow-up with the research (and spends LLM calls).
    "deep-research-ask": ActionHints(read_only=False, destructive=False, idempotent=False),
    # Each call makes one more version (and spends LLM calls and searches).
    "deep-research-revise": ActionHints(read_only=False, destructive=False, idempotent=False),
    "deep-research-versions": ActionHints(read_only=True, destructive=False, idempotent=True),
    "deep-research-delete": ActionHints(read_only=False, destructive=True, idempotent=True),
    "deep-research-restore": ActionHints(read_only=False, destructive=False, idempotent=True),
    # With path and overwrite=true it replaces a file.
    "deep-research-export": ActionHints(read_only=False, destructive=True, idempotent=True),
    "health": ActionHints(read_only=True, destructive=False, idempotent=True),
}

ACTIONS_META_KEY = "foundry-mcp/actions"


def tool_meta() -> dict[str, Any]:
    """The tool's ``_meta``: which actions only read, which destroy and which of the others
    may be repeated to the same effect (MCP annotates whole tools only)."""
    writing = {a: h for a, h in ACTION_HINTS.items() if not h.read_only}
    return {
        ACTIONS_META_KEY: {
            "readOnly": [a for a, h in ACTION_HINTS.items() if h.read_only],
            "destructive": [a for a, h in writing.items() if h.destructive],
            "idempotent": [a for a, h in writing.items() if h.idempotent],
        }
    }


def tool_annotations() -> ToolAnnotations:
    """The hints that hold for the tool as a whole: those of its least careful action."""
    hints = ACTION_HINTS.values()
    return ToolAnnotations(
        title="Deep research",
        read_only_hint=all(h.read_only for h in hints),
        destructive_hint=any(h.destructive for h in hints),
        idempotent_hint=all(h.idempotent for h in hints),
        open_world_hint=True,  # it searches the web and calls LLM providers
    )
