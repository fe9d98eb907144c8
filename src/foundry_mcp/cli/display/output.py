"""Who reads stdout: a person at a terminal gets tables and blocks, a pipe or a file gets JSON.

``--json`` asks for JSON on a terminal too. Whichever it is, the messages in a document (what to
do next, errors, warnings, fixes) are said in the terminal's words: commands and flags, not tool
calls (:mod:`foundry_mcp.cli.wording`), and every string is plain text
(:func:`foundry_mcp.plain.plain`): what a page, a model or an MCP source wrote reaches the
terminal without the control sequences it would obey. An error is said the same way
(:func:`fail`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from foundry_mcp.cli.wording import RESEARCH_ID, for_the_terminal
from foundry_mcp.errors import FoundryError
from foundry_mcp.plain import plain, plain_within

# The keys of a document whose values are messages to the user (at any depth).
MESSAGE_KEYS = frozenset(
    {
        "next_action",
        "error",
        "warning",
        "warnings",
        "remediation",
        "fix",
        "hint",
        "message",
        "problem",
        "problems",
        "note",
    }
)


def for_people(args: argparse.Namespace) -> bool:
    """True when stdout is a terminal and ``--json`` was not given."""
    return not getattr(args, "json", False) and sys.stdout.isatty()


def show(args: argparse.Namespace, document: Any, draw: Callable[[Any], None]) -> None:
    """``document`` drawn by ``draw`` for a person (:func:`for_people`), else as JSON; plain
    text either way."""
    if for_people(args):
        draw(plain_within(document))
    else:
        print_json(document)


def fail(exc: FoundryError, *, as_json: bool = False) -> int:
    """Report an error: its message and fix on stderr, and with ``--json`` also as one JSON
    document on stdout (``success: false``, the MCP envelope's error fields). Exit code 2.

    Both are said for the terminal (:mod:`foundry_mcp.cli.wording`): commands, not tool calls;
    and plain, as a message may quote what a provider or a page said.
    """
    named = RESEARCH_ID.search(exc.message)
    research_id = named.group(0) if named else None
    message = plain(for_the_terminal(exc.message, research_id))
    remediation = plain(for_the_terminal(exc.remediation, research_id))
    print(f"error: {message}", file=sys.stderr)
    print(f"  fix: {remediation}", file=sys.stderr)
    if as_json:
        details = {k: v for k, v in exc.details.items() if v is not None}
        print_json(
            {
                "success": False,
                "error": message,
                "error_code": exc.error_code,
                "error_type": exc.error_type,
                "remediation": remediation,
                **({"details": details} if details else {}),
            }
        )
    return 2


def print_json(payload: Any) -> None:
    """One JSON document on stdout, its strings plain (JSON escapes ESC, not C1 or bidi)."""
    print(json.dumps(plain_within(payload), indent=2, ensure_ascii=False))


def in_terminal_words(payload: Any, research_id: str | None = None) -> Any:
    """``payload`` with every message (a value under one of :data:`MESSAGE_KEYS`) said for the
    terminal; questions, titles and other data are left as they are."""
    if isinstance(payload, dict):
        return {
            key: (
                _said(value, research_id)
                if key in MESSAGE_KEYS
                else in_terminal_words(value, research_id)
            )
            for key, value in payload.items()
        }
    if isinstance(payload, list):
        return [in_terminal_words(item, research_id) for item in payload]
    return payload


def _said(value: Any, research_id: str | None) -> Any:
    if isinstance(value, str):
        return for_the_terminal(value, research_id)
    if isinstance(value, list):
        return [_said(item, research_id) for item in value]
    return in_terminal_words(value, research_id)
