"""What the ``research`` tool costs an assistant on every turn: its compact published face.

Clients put a tool's definition (description, ``inputSchema``, ``outputSchema``, hints) into the
model's context on every turn, so it is kept to the essentials and the detail is read on demand:

* ``inputSchema``: each parameter's type, choices and bounds, and a few words where its name
  does not say enough. Validation is the argument model's (``server.arguments``), which this
  schema is derived from.
* ``outputSchema``: the envelope every answer has, with ``data`` an object. True for every
  answer, success or failure; the shape of each action's ``data`` is the resource
  ``research://schemas`` (one JSON Schema per action, definitions shared), read when needed.
* The guide to every action and parameter is the resource ``research://help``.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from foundry_mcp.server.arguments import ResearchArguments

HELP_URI = "research://help"
SCHEMAS_URI = "research://schemas"

# A few words for the parameters whose name and type do not say enough; the rest go without.
SHORT: dict[str, str] = {
    "provider_id": "'provider' or 'provider:model'.",
    "max_time_s": "Deadline, seconds.",
}
# What validation enforces but a caller need not read: lengths of texts and lists.
UNPUBLISHED = ("title", "default", "description", "maxLength", "maxItems")


@cache
def published_input_schema() -> dict[str, Any]:
    """The ``inputSchema``: the argument model's, without nullable wrappers, titles, defaults or
    long descriptions (``research://help`` has those)."""
    full = ResearchArguments.model_json_schema()
    properties = {name: _compact(name, spec) for name, spec in full["properties"].items()}
    return {"type": "object", "properties": properties, "required": full.get("required", [])}


def _compact(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    options = [s for s in spec.get("anyOf", [spec]) if s.get("type") != "null"]
    kept: dict[str, Any] = dict(options[0]) if len(options) == 1 else {"anyOf": options}
    for noise in UNPUBLISHED:
        kept.pop(noise, None)
    if kept.get("additionalProperties") is True:  # JSON Schema's default
        del kept["additionalProperties"]
    for option in kept.get("anyOf", []):
        if option.get("additionalProperties") is True:
            del option["additionalProperties"]
    items = kept.get("items")
    if isinstance(items, dict):
        kept["items"] = {k: v for k, v in items.items() if k not in UNPUBLISHED}
    if name in SHORT:
        kept["description"] = SHORT[name]
    return kept


OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "success": {"type": "boolean"},
        "data": {
            "type": "object",
            "description": f"Result ({SCHEMAS_URI}); on failure error_code, remediation.",
        },
        "error": {"type": ["string", "null"]},
        # version, request_id, warnings: the envelope in full is in research://schemas.
        "meta": {"type": "object"},
    },
    "required": ["success", "data", "meta"],
}


# The envelope in full: ``meta`` as every answer has it (the outputSchema leaves it an object).
ENVELOPE: dict[str, Any] = {
    **OUTPUT_SCHEMA,
    "properties": {
        **OUTPUT_SCHEMA["properties"],
        "meta": {
            "type": "object",
            "properties": {
                "version": {"type": "string"},
                "request_id": {"type": "string"},
                "warnings": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}


def schemas_document() -> str:
    """``research://schemas``: each action's ``data`` as a JSON Schema, definitions shared."""
    from foundry_mcp.server.results.data import result_schemas

    return json.dumps({**result_schemas(), "envelope": ENVELOPE}, indent=1)


def tokens_estimate(text: str) -> int:
    """A conservative token count of JSON text when no tokenizer is at hand (JSON holds about
    3.2 characters a token in the o200k encoding; characters / 4 undercounts it)."""
    return -(-len(text) * 10 // 32)


# What each action does, for the guide (the tool's description has a few words each).
ACTION_GUIDE: dict[str, str] = {
    "deep-research": "Start a research in the background; it answers with research_id at once.",
    "deep-research-status": "Status, phase, iteration, counts, tokens, cost and progress. "
    "wait=true blocks until the status, phase or iteration moves (at most wait_timeout seconds).",
    "deep-research-report": "The executive summary and one page of the cited report (page on "
    "with offset); with version, that version of the report (default: the latest).",
    "deep-research-evidence": "The report's checked sentences, a page at a time: each with its "
    "verdict, its sources as numbered in the report and the quotes the fact-checker saw.",
    "deep-research-list": "Research newest first, a page at a time (cursor), optionally of some "
    "statuses only, completed ones, or those whose question holds the words of query.",
    "deep-research-events": "A research's audit trail: phases, provider calls, decisions.",
    "deep-research-cancel": "Stop a running research; its partial results stay and it can be "
    "resumed. Cancelling again changes nothing.",
    "deep-research-resume": "Continue a cancelled, failed, timed-out or interrupted research "
    "from where it stopped, without redoing finished work; the limits may be raised. A research "
    "waiting for its plan's approval (status waiting) goes on with the plan as shown, or with "
    "plan. A completed research given a larger max_iterations goes on for more rounds.",
    "deep-research-ask": "Ask a follow-up question about a completed research: answered from "
    "the sources it already read, with citations numbered as in its report and the quotes "
    "behind them, without searching again. When those sources do not answer it, the answer says "
    "so and how to research it further. Follow-ups are kept with the research and exported.",
    "deep-research-revise": "Make the report of a completed research again, as its next "
    "version, in the background (poll deep-research-status as for a research): a rewrite "
    "(from its saved findings and sources, no search: another form, audience, length, language, "
    "corrections), a deepen (one part searched and read further within max_searches, then "
    "written again) or a refresh (its searches asked again for what is new, with a section on "
    "what changed). The answer says what it will do. Each version's cost by phase is in "
    "deep-research-versions.",
    "deep-research-versions": "The report's versions, oldest first: what made each (kind, "
    "instructions, part), its words, cited sources and findings, what a deepen or refresh "
    "found, and its cost by phase. With version, the delta against compare_to (default: the "
    "version before): the sections, cited sources and findings (with their text) each has that "
    "the other has not, the sections changed, and the changes recorded between them.",
    "deep-research-delete": "Delete a research, cancelling it first if it runs.",
    "deep-research-restore": "Bring an archived (dropped) source back into a stopped research; "
    "resume it to have the source analysed.",
    "deep-research-export": "The report as markdown, the research as JSON, or its cited sources "
    "as BibTeX or RIS; returned, or written to path inside the working directory. With "
    "version, that version of the report (the markdown says which; the JSON lists every "
    "version).",
    "health": "Check every provider: its key, one cheap live call, and the fix for each problem.",
}


def help_document() -> str:
    """``research://help``: every action and parameter of the tool, in full."""
    from foundry_mcp.server.arguments import ACTION_PARAMS

    lines = [
        "# The research tool",
        "",
        "Deep research with cited sources, run in the background. Every answer is "
        "`{success, data, error, meta}`: on failure `data.error_code` and `data.remediation` "
        f"say what to do; the shape of each action's `data` is in `{SCHEMAS_URI}`.",
        "",
        "Typical use: `research(action='deep-research', query=...)` gives `research_id`; "
        "`research(action='deep-research-status', research_id=..., wait=true)` until the status "
        "is `completed`; then `research(action='deep-research-report', research_id=...)`. The "
        "whole report is also the resource `research://{research_id}/report`, and each version "
        "of it `research://{research_id}/report/{version}`.",
        "",
        "## Actions",
        "",
    ]
    for action, params in ACTION_PARAMS.items():
        taken = ", ".join(f"`{p}`" for p in params) or "none"
        lines.append(f"- `{action}`: {ACTION_GUIDE[action]} Parameters: {taken}.")
    lines += ["", "## Parameters", ""]
    published = published_input_schema()["properties"]
    for name, field in ResearchArguments.model_fields.items():
        spec = published.get(name, {})
        bounds = [f"{k} {spec[k]:g}" for k in ("minimum", "maximum") if k in spec]
        choices = spec.get("enum") or spec.get("items", {}).get("enum")
        kind = spec.get("type", "value")
        detail = ", ".join(([f"one of {', '.join(choices)}"] if choices else []) + bounds)
        lines.append(f"- `{name}` ({kind}{'; ' + detail if detail else ''}): {field.description}")
        if name == "revise":
            from foundry_mcp.research.service.completed.request import guide

            lines += guide()
    return "\n".join(lines) + "\n"
