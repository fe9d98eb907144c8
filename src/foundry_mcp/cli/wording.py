"""The service's words, said for a terminal: commands instead of tool calls, the shell instead of
an MCP client's ``env`` block.

Errors, fixes and hints are written once, for the MCP tool (``action='deep-research-list'``,
``provider_id='openai:gpt-4.1'``, "in the MCP server's env block"). The terminal commands print
them through :func:`for_the_terminal`, which names the ``foundry-mcp`` command and option that
do the same, so a user of the command line is never told to call a tool they are not using.
"""

from __future__ import annotations

import re
from typing import Any

# Each action of the ``research`` tool and the command that does the same; the commands that
# take the research id as their argument.
ACTION_COMMANDS: dict[str, str] = {
    "deep-research": "research",
    "deep-research-status": "status",
    "deep-research-report": "report",
    "deep-research-list": "list",
    "deep-research-events": "events",
    "deep-research-cancel": "cancel",
    "deep-research-resume": "resume",
    "deep-research-ask": "ask",
    "deep-research-revise": "revise",
    "deep-research-versions": "versions",
    "deep-research-delete": "delete",
    "deep-research-restore": "restore",
    "deep-research-export": "export",
    "health": "doctor",
}
TAKES_AN_ID = frozenset(
    {
        "status",
        "watch",
        "report",
        "events",
        "cancel",
        "resume",
        "delete",
        "ask",
        "revise",
        "versions",
    }
)
# Tool parameters and the options of ``foundry-mcp research`` / ``resume`` that set them.
PARAMETER_OPTIONS: dict[str, str] = {
    "provider_id": "--provider",
    "model": "--model",
    "system_prompt": "--context",
    "max_iterations": "--max-iterations",
    "max_sub_queries": "--max-sub-queries",
    "max_sources_per_query": "--max-sources",
    "task_timeout": "--timeout",
    "reading_budget": "--reading-budget",
    "max_time_s": "--max-time",
    "language": "--language",
    "source_types": "--source-types",
    "preferred_sources": "--prefer",
    "effort": "--effort",
    "mode": "--mode",
    "max_concurrent": "--max-concurrent",
    "clarify": "--clarify",
    "review_plan": "--review-plan",
    "include_domains": "--include-domain",
    "exclude_domains": "--exclude-domain",
    "published_after": "--published-after",
    "published_before": "--published-before",
    "output_schema": "--schema",
    "plan": "--plan",
    "format": "--format",
    "path": "--out",
    "overwrite": "--overwrite",
    "version": "--version",
    "limit": "--limit",
    "completed_only": "--completed-only",
    "status": "--status",
    "query": "research",  # the question is the research command's argument
}
# Parameters that are flags on the command line: ``overwrite=true`` is ``--overwrite``.
FLAGS = frozenset({"overwrite", "completed_only", "review_plan"})
# Parameters named bare ("resume with max_iterations above 3"): none is also a [research] key.
_BARE = (
    "provider_id",
    "max_iterations",
    "max_sub_queries",
    "max_sources_per_query",
    "source_types",
    "preferred_sources",
    "reading_budget",
)

RESEARCH_ID = re.compile(r"\bdeepres-[0-9a-f]{12}\b")
_ACTION = re.compile(
    r"(?P<verb>\b(?:[Cc]all|[Uu]se)\s+)?"
    r"action=['\"](?P<action>[a-z-]+)['\"]"
    r"(?:,\s*research_id=['\"](?P<id>[^'\"]*)['\"])?"
    r"(?P<wait>(?:,\s*|\s+(?:with|and)\s+)wait=true)?"
)
_ASSIGNED = re.compile(
    r"\b(?P<name>" + "|".join(PARAMETER_OPTIONS) + r")="
    r"(?:'(?P<quoted>[^']*)'|(?P<list>\[[^\]]*\])|(?P<plain>[^\s,;)]+?))(?=[\s,;)]|\.(?:\s|$)|$)"
)
_BARE_NAME = re.compile(r"(?<!\] )(?<![\w.-])(?P<name>" + "|".join(_BARE) + r")\b(?![=\w])")
_RETURNED_BY = re.compile(r"\breturned by deep-research\b(?!-)")
_BARE_ACTION = re.compile(r"(?<![\w'\"/=-])(?P<action>deep-research-[a-z]+)\b(?!-)")
_SAID_TWICE = re.compile(r"(`foundry-mcp [a-z]+[^`]*`) \(or \1\)|(--[a-z-]+) \(\2\)")

_ENV_BLOCK = "in the MCP server's env block"
_ENV_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")


def for_the_terminal(text: str, research_id: str | None = None) -> str:
    """``text`` with tool calls said as commands and settings placed for a shell user.

    ``research_id`` fills in the commands that take one when the text names none (otherwise
    the first research id in the text, else ``<research_id>``).
    """
    return for_the_shell(in_cli_terms(text, research_id))


def in_cli_terms(text: str, research_id: str | None = None) -> str:
    """Tool actions and parameters in ``text`` as ``foundry-mcp`` commands and options."""
    found = RESEARCH_ID.search(text)
    fallback = research_id or (found.group(0) if found else "<research_id>")

    def command(match: re.Match[str]) -> str:
        name = ACTION_COMMANDS.get(match["action"])
        if name is None:  # an action the terminal has no command for
            return match.group(0)
        if name == "status" and match["wait"]:
            name = "watch"  # follows the research until it ends
        if name in TAKES_AN_ID:
            name = f"{name} {match['id'] or fallback}"
        elif name == "restore":
            name = f"restore {match['id'] or fallback} <source_id>"
        elif name == "research":
            name = 'research "<question>"'
        verb = match["verb"]
        said = f"`foundry-mcp {name}`"
        return f"{'Run' if verb[0].isupper() else 'run'} {said}" if verb else said

    def bare_command(match: re.Match[str]) -> str:
        name = ACTION_COMMANDS.get(match["action"])
        return match.group(0) if name is None else f"`foundry-mcp {name}`"

    text = _ACTION.sub(command, text)
    text = _RETURNED_BY.sub("printed by `foundry-mcp research`", text)
    text = _BARE_ACTION.sub(bare_command, text)
    text = _ASSIGNED.sub(_option, text)
    text = _SAID_TWICE.sub(lambda m: m[1] or m[2], text)
    return _BARE_NAME.sub(lambda m: PARAMETER_OPTIONS[m["name"]], text)


def _option(match: re.Match[str]) -> str:
    name = match["name"]
    value = match["quoted"] if match["quoted"] is not None else match["plain"]
    if match["list"] is not None:  # source_types=['academic', 'web'] -> academic,web
        value = ",".join(part.strip(" '\"") for part in match["list"][1:-1].split(","))
    if name == "query":
        return f'`foundry-mcp research "{value}"`'
    if name in FLAGS:
        return PARAMETER_OPTIONS[name] if value == "true" else f"no {PARAMETER_OPTIONS[name]}"
    return f"{PARAMETER_OPTIONS[name]} {value}"


def for_the_shell(text: str) -> str:
    """Say where a setting goes for a terminal user: the remediations are written for an MCP
    client's ``env`` block, which a shell does not have."""
    parts = text.split(_ENV_BLOCK)
    for i in range(1, len(parts)):
        named = _ENV_VARIABLE.findall(parts[i - 1].rsplit(". ", 1)[-1]) or ["NAME"]
        exports = " ".join(f"{variable}=..." for variable in dict.fromkeys(named))
        place = f"in your shell environment (export {exports})"
        if "~/.foundry-mcp.toml" not in parts[i].split(". ", 1)[0]:
            place += " or in ~/.foundry-mcp.toml"
        parts[i] = place + parts[i]
    return "".join(parts)


def for_the_terminal_within(value: Any) -> Any:
    """:func:`for_the_terminal` applied to every string of a JSON-like value (doctor's fixes)."""
    if isinstance(value, str):
        return for_the_terminal(value)
    if isinstance(value, list):
        return [for_the_terminal_within(item) for item in value]
    if isinstance(value, dict):
        return {key: for_the_terminal_within(item) for key, item in value.items()}
    return value
