"""The ``research`` tool's actions: which parameters each takes, and the dispatch to the service.

This table is the single source of truth for the tool description, the "ignored parameter"
warnings and the test that checks every parameter is in the published input schema.
"""

from __future__ import annotations

from typing import Any

from foundry_mcp.errors import InputError, UnknownActionError
from foundry_mcp.research.service import ProgressCallback, ResearchService

LIMIT_PARAMS = (
    "max_iterations",
    "max_sub_queries",
    "max_sources_per_query",
    "max_concurrent",
    "task_timeout",
)

ACTION_PARAMS: dict[str, tuple[str, ...]] = {
    "deep-research": (
        "query",
        "system_prompt",
        "provider_id",
        "model",
        *LIMIT_PARAMS,
        "deep_research_action",
        "research_id",
    ),
    "deep-research-status": ("research_id", "wait", "wait_timeout"),
    "deep-research-report": ("research_id", "offset", "max_chars"),
    "deep-research-list": ("limit", "cursor", "completed_only", "status"),
    "deep-research-events": ("research_id", "cursor", "limit"),
    "deep-research-cancel": ("research_id",),
    "deep-research-resume": ("research_id", *LIMIT_PARAMS),
    "deep-research-delete": ("research_id",),
    "deep-research-restore": ("research_id", "item_id"),
    "health": (),
}

ACTION_SUMMARIES: dict[str, str] = {
    "deep-research": "start a research in the background; returns research_id at once",
    "deep-research-status": "status, phase, iteration, counts, tokens; wait=true long-polls",
    "deep-research-report": "executive summary + one page of the cited report; page with offset",
    "deep-research-list": "researches newest first; filter by status; page with cursor",
    "deep-research-events": "the audit trail of a research (phases, provider calls, decisions)",
    "deep-research-cancel": "stop a running research (partial results stay, resumable)",
    "deep-research-resume": "continue a cancelled/failed/timed-out/interrupted research",
    "deep-research-delete": "delete a research (cancels it first if running)",
    "deep-research-restore": "bring an archived (dropped) source back into a stopped research",
    "health": "check every provider: key present, a cheap live call, and the fix for each problem",
}

DEEP_RESEARCH_ACTIONS = ("start", "continue", "resume", "cancel")


def tool_description() -> str:
    """The description a model reads to call the tool correctly."""
    lines = [
        "Deep research with cited sources. Runs in the background: start it, poll status, "
        "read the report. Every response is {success, data, error, meta}; on failure "
        "data.error_code and data.remediation say what to do.",
        "",
        "Actions (action=...) and their parameters:",
    ]
    for action, params in ACTION_PARAMS.items():
        taken = f"Params: {', '.join(params)}." if params else "No params."
        lines.append(f"- {action}: {ACTION_SUMMARIES[action]}. {taken}")
    lines += [
        "",
        "Typical use: research(action='deep-research', query='...') -> research_id; then "
        "research(action='deep-research-status', research_id=..., wait=true) until status is "
        "completed; then research(action='deep-research-report', research_id=...).",
    ]
    return "\n".join(lines)


async def dispatch(
    service: ResearchService,
    action: str,
    args: dict[str, Any],
    on_progress: ProgressCallback | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Run one action; returns its payload and warnings for the envelope."""
    if action not in ACTION_PARAMS:
        raise UnknownActionError(
            f"Unknown action {action!r}.",
            remediation=f"Use one of: {', '.join(ACTION_PARAMS)}.",
            details={"field": "action"},
        )
    given = {name: value for name, value in args.items() if value is not None}
    warnings = [
        f"Parameter '{name}' is not used by action '{action}' and was ignored."
        for name in given
        if name not in ACTION_PARAMS[action]
    ]
    use = {name: given[name] for name in ACTION_PARAMS[action] if name in given}
    limits = {name: use[name] for name in LIMIT_PARAMS if name in use}

    if action == "deep-research":
        sub_action = use.get("deep_research_action", "start")
        if sub_action not in DEEP_RESEARCH_ACTIONS:
            raise UnknownActionError(
                f"Unknown deep_research_action {sub_action!r}.",
                remediation=f"Use one of: {', '.join(DEEP_RESEARCH_ACTIONS)}.",
                details={"field": "deep_research_action"},
            )
        if sub_action in ("continue", "resume"):
            return service.resume(use.get("research_id"), **limits), warnings
        if sub_action == "cancel":
            return await service.cancel(use.get("research_id")), warnings
        if "research_id" in use:
            warnings.append("research_id is ignored when starting a new research.")
        payload = service.start(
            use.get("query"),
            system_prompt=_text(use, "system_prompt"),
            provider_id=_text(use, "provider_id"),
            model=_text(use, "model"),
            **limits,
        )
        return payload, warnings
    if action == "deep-research-status":
        payload = await service.status(
            use.get("research_id"),
            wait=bool(use.get("wait", False)),
            wait_timeout=use.get("wait_timeout"),
            on_progress=on_progress,
        )
        return payload, warnings
    if action == "deep-research-report":
        payload, report_warnings = service.report(
            use.get("research_id"), offset=use.get("offset"), max_chars=use.get("max_chars")
        )
        return payload, warnings + report_warnings
    if action == "deep-research-list":
        payload = service.list(
            limit=use.get("limit"),
            cursor=_text(use, "cursor"),
            completed_only=bool(use.get("completed_only", False)),
            status=_text(use, "status"),
        )
        return payload, warnings
    if action == "deep-research-events":
        payload = service.events(
            use.get("research_id"), cursor=_text(use, "cursor"), limit=use.get("limit")
        )
        return payload, warnings
    if action == "deep-research-cancel":
        return await service.cancel(use.get("research_id")), warnings
    if action == "deep-research-resume":
        return service.resume(use.get("research_id"), **limits), warnings
    if action == "health":
        return await service.health(), warnings
    if action == "deep-research-restore":
        return service.restore_content(use.get("research_id"), use.get("item_id")), warnings
    return await service.delete(use.get("research_id")), warnings


def _text(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string.", details={"field": name})
    return value.strip() or None
