"""The ``research`` tool's dispatch: one handler per action, in a table.

An action missing from the table is an error by construction, never a fall-through to another
action. Parameters an action does not read are ignored with a warning.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from foundry_mcp.config.research_settings import LimitArgs
from foundry_mcp.errors import InputError, UnknownActionError
from foundry_mcp.server.arguments import (
    ACTION_PARAMS,
    ACTION_SUMMARIES,
    BOUND_PARAMS,
    LIMIT_PARAMS,
    ResearchArguments,
)

if TYPE_CHECKING:  # imported in the background once the server runs (see server.host)
    from foundry_mcp.research.principal import Principal
    from foundry_mcp.research.service.asking.asker import Asker
    from foundry_mcp.research.service.research_service import ProgressCallback, ResearchService
    from foundry_mcp.research.service.starting.request import ResearchRequest

Payload = tuple[dict[str, Any], list[str]]


@dataclass(frozen=True)
class Call:
    """Who is calling and what the call can do besides answering: report progress (None: nobody
    listens), and ask the user through the client (None: the client cannot be asked)."""

    principal: Principal | None = None  # the team server's caller; None: the local user
    on_progress: ProgressCallback | None = None
    asker: Asker | None = None


# A handler gets the service, the parameters its action reads, and the call.
Handler = Callable[["ResearchService", dict[str, Any], Call], Awaitable[Payload]]


def tool_description() -> str:
    """The description a model reads to call the tool: what it is for, how to call it, and each
    action's parameters (``research_id`` and the limits named once, by a short word); the rest
    is in the resources it names."""
    lines = [
        "Deep research with cited sources, in the background: deep-research gives research_id; "
        "poll deep-research-status (wait=true) until completed; read deep-research-report. "
        f"Guide: research://help. Below, id: research_id; limits: {', '.join(LIMIT_PARAMS)}.",
    ]
    for action, params in ACTION_PARAMS.items():
        lines.append(f"- {action}: {ACTION_SUMMARIES[action]}{_in_short(params)}")
    return "\n".join(lines)


def _in_short(params: tuple[str, ...]) -> str:
    """An action's parameters as the description lists them: ' (id, wait, ...)'."""
    names = [name for name in params if name not in LIMIT_PARAMS]
    words = ["id" if name == "research_id" else name for name in names]
    if any(name in LIMIT_PARAMS for name in params):
        words.append("limits")
    return f" ({', '.join(words)})" if words else ""


async def dispatch(
    service: ResearchService,
    arguments: ResearchArguments,
    on_progress: ProgressCallback | None = None,
    principal: Principal | None = None,
    asker: Asker | None = None,
) -> Payload:
    """Run one action for ``principal``; returns its payload (checked against the action's
    published result model) and warnings for the envelope."""
    handler = HANDLERS.get(arguments.action)
    if handler is None:  # the argument model admits an action the table lacks: a bug
        raise UnknownActionError(
            f"Unknown action {arguments.action!r}.",
            remediation=f"Use one of: {', '.join(HANDLERS)}.",
            details={"field": "action"},
        )
    accepted = ACTION_PARAMS[arguments.action]
    given = arguments.given()
    warnings = [
        f"Parameter '{name}' is not used by action '{arguments.action}' and was ignored."
        for name in sorted(given)
        if name not in accepted
    ]
    use = {name: given[name] for name in accepted if name in given}
    payload, more = await handler(service, use, Call(principal, on_progress, asker))
    # The result models are built with the research service (ServiceHost), not before the
    # handshake: a client lists the tool without them.
    from foundry_mcp.server.results.data import conform

    return conform(arguments.action, payload), warnings + more


def _limits(use: dict[str, Any]) -> LimitArgs:
    return cast(LimitArgs, {name: use[name] for name in LIMIT_PARAMS if name in use})


def _text(use: dict[str, Any], name: str) -> str | None:
    value = use.get(name)
    return value.strip() or None if isinstance(value, str) else None


async def _deep_research(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    warnings = service.start_warnings()
    await service.check_spending(call.principal)
    payload = await service.start(research_request(use), asker=call.asker, principal=call.principal)
    return payload, warnings


def research_request(use: dict[str, Any]) -> ResearchRequest:
    """The request the ``deep-research`` action's parameters make."""
    # Imported here: the research code loads in the background once the server runs.
    from foundry_mcp.research.service.starting.request import ResearchRequest

    return ResearchRequest(
        query=use.get("query"),
        system_prompt=_text(use, "system_prompt"),
        provider_id=_text(use, "provider_id"),
        model=_text(use, "model"),
        limits=_limits(use),
        mode=use.get("mode"),
        source_types=use.get("source_types"),
        preferred_sources=use.get("preferred_sources"),
        effort=use.get("effort"),
        max_time_s=use.get("max_time_s"),
        language=_text(use, "language"),
        clarify=use.get("clarify"),
        review_plan=bool(use.get("review_plan", False)),
        bounds={name: use[name] for name in BOUND_PARAMS if name in use},
        output_schema=use.get("output_schema"),
    )


async def _status(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    payload = await service.status(
        use.get("research_id"),
        wait=bool(use.get("wait", False)),
        wait_timeout=use.get("wait_timeout"),
        on_progress=call.on_progress,
        asker=call.asker,
        principal=call.principal,
    )
    return payload, []


def _report_pages(evidence: bool) -> Handler:
    """The handler of a report page (``evidence``: a page of its checked sentences)."""

    async def handler(
        service: ResearchService,
        use: dict[str, Any],
        call: Call,
    ) -> Payload:
        return await service.report(
            use.get("research_id"),
            offset=use.get("offset"),
            max_chars=use.get("max_chars"),
            evidence=evidence,
            principal=call.principal,
            version=use.get("version"),  # the evidence action takes none
        )

    return handler


async def _list(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    payload = await service.list(
        limit=use.get("limit"),
        cursor=_text(use, "cursor"),
        completed_only=bool(use.get("completed_only", False)),
        status=_text(use, "status"),
        query=_text(use, "query"),
        principal=call.principal,
    )
    return payload, []


async def _events(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    payload = await service.events(
        use.get("research_id"),
        cursor=_text(use, "cursor"),
        limit=use.get("limit"),
        principal=call.principal,
    )
    return payload, []


async def _cancel(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    return await service.cancel(use.get("research_id"), call.principal), []


async def _resume(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    await service.check_spending(call.principal)
    resumed = await service.resume(
        use.get("research_id"), plan=use.get("plan"), principal=call.principal, **_limits(use)
    )
    return resumed, []


async def _ask(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    await service.check_spending(call.principal)
    payload = await service.follow_up(
        use.get("research_id"), query=use.get("query"), principal=call.principal
    )
    return payload, []


async def _revise(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    await service.check_spending(call.principal)
    payload = await service.revise(
        use.get("research_id"), use.get("revise"), principal=call.principal
    )
    return payload, []


async def _versions(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    payload = await service.versions(
        use.get("research_id"),
        use.get("version"),
        use.get("compare_to"),
        principal=call.principal,
    )
    return payload, []


async def _delete(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    return await service.delete(use.get("research_id"), call.principal), []


async def _restore(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    return await service.restore_content(
        use.get("research_id"), use.get("item_id"), call.principal
    ), []


async def _export(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    if call.principal is not None and use.get("path") is not None:
        # A team server's caller is elsewhere: the server's disk is neither theirs to write
        # nor a place they could read the file from.
        raise InputError(
            "Exporting to a file (path) is not available on a team server.",
            remediation="Omit path: the export comes back in the response's content.",
            details={"field": "path", "reason": "team_server"},
        )
    payload = await service.export(
        use.get("research_id"),
        format=use.get("format", "markdown"),
        path=use.get("path"),
        overwrite=bool(use.get("overwrite", False)),
        version=use.get("version"),
        principal=call.principal,
    )
    return payload, []


async def _health(
    service: ResearchService,
    use: dict[str, Any],
    call: Call,
) -> Payload:
    return await service.health(), []


HANDLERS: dict[str, Handler] = {
    "deep-research": _deep_research,
    "deep-research-status": _status,
    "deep-research-report": _report_pages(evidence=False),
    "deep-research-evidence": _report_pages(evidence=True),
    "deep-research-list": _list,
    "deep-research-events": _events,
    "deep-research-cancel": _cancel,
    "deep-research-resume": _resume,
    "deep-research-ask": _ask,
    "deep-research-revise": _revise,
    "deep-research-versions": _versions,
    "deep-research-delete": _delete,
    "deep-research-restore": _restore,
    "deep-research-export": _export,
    "health": _health,
}
