"""MCP Tasks (``io.modelcontextprotocol/tasks``, protocol 2026-07-28): a research as a task.

A client that declares the extension on its ``tools/call`` gets, for a call that starts or
resumes a research or revises its report, a task handle (``resultType: "task"``) instead of the start envelope. It
then polls ``tasks/get`` until the task is terminal; the completed task carries the report's
first page as the tool result. ``tasks/cancel`` cancels the research (its work is kept) and
``tasks/update`` is acknowledged (a research never asks for input). Every other client, and
every other action, keeps the ordinary results.

A task id is the research id with an HMAC of it (and, on a team server, of the principal that
started it) under the store's key (a private file beside the SQLite database, a row of a
PostgreSQL store): it survives a restart of the server, every worker of a team honours the task
ids any of them issued, it cannot be guessed from the (shorter) research id, and another
principal's task id is refused as unknown.
A research found ``interrupted`` (its server stopped) when its task is polled is resumed, so a
client that keeps polling after a restart gets its report.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolRequestParams, CallToolResult, RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from foundry_mcp.errors import FoundryError, ResearchNotFoundError, ResearchStoppedError
from foundry_mcp.logs import about
from foundry_mcp.research.principal import name_of
from foundry_mcp.server.auth import request_principal
from foundry_mcp.server.results.progress import progress_message

if TYPE_CHECKING:
    from foundry_mcp.research.principal import Principal
    from foundry_mcp.research.service.research_service import ResearchService
    from foundry_mcp.research.store.protocol import Store
    from foundry_mcp.server.host import ServiceHost

log = logging.getLogger(__name__)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# The actions that start a run of a research: a start, a resume, a revision of its report.
RUN_ACTIONS = ("deep-research", "deep-research-resume", "deep-research-revise")
POLL_INTERVAL_MS = 2000
KEY_NAME = "task"  # the store's shared key task ids are signed with
WORKING = {"queued", "running", "cancelling"}

# Runs a research action by its arguments, for a principal, and returns the tool result a call
# would get.
ActionRunner = Callable[
    ["ServiceHost", dict[str, Any], "Principal | None"], Awaitable[CallToolResult]
]
# The tool result of an error, as a refused call would get it.
ErrorResult = Callable[[FoundryError], CallToolResult]


class TaskIdParams(RequestParams):
    """``tasks/get`` and ``tasks/cancel``: the task's id."""

    task_id: str = Field(alias="taskId")


class UpdateTaskParams(TaskIdParams):
    """``tasks/update``: responses to input requests (a research never makes any)."""

    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


class ResearchTasks(Extension):
    """The tasks extension for the ``research`` tool."""

    identifier = TASKS_EXTENSION

    def __init__(self, tool_name: str, run_action: ActionRunner, error_result: ErrorResult) -> None:
        self._tool_name = tool_name
        self._run_action = run_action
        self._error_result = error_result
        self._ids: WeakKeyDictionary[Store, TaskIds] = WeakKeyDictionary()

    def methods(self) -> Sequence[MethodBinding]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskIdParams, self._get, protocol_versions=versions),
            MethodBinding("tasks/update", UpdateTaskParams, self._update, versions),
            MethodBinding("tasks/cancel", TaskIdParams, self._cancel, versions),
        )

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        result = await call_next(ctx)
        if not (self._starts_a_run(params) and _declared(ctx)):
            return result
        if not isinstance(result, CallToolResult) or result.is_error:
            return result  # a refused start stays an ordinary tool error
        data = (result.structured_content or {}).get("data") or {}
        research_id = data.get("research_id")
        if not isinstance(research_id, str):
            return result
        principal = request_principal()
        service = await _host(ctx).service()
        # Saved before the start answered.
        payload = await service.status(research_id, principal=principal)
        task_id = self._task_ids(service).issue(research_id, name_of(principal))
        return {"resultType": "task", **_task(task_id, payload, "working")}

    # ------------------------------------------------------------------ methods

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> Any:
        require_client_extension(ctx, TASKS_EXTENSION)
        principal = request_principal()
        service, research_id = await self._research_of(ctx, params.task_id, principal)
        payload = await _status(service, research_id, principal)
        status = payload["status"]
        if status == "interrupted":
            payload = await self._resume(service, research_id, payload, principal)
            status = payload["status"]
        if status in WORKING:
            return _task(params.task_id, payload, "working")
        if status == "waiting":  # its plan waits for approval: the status says how to give it
            task = _task(params.task_id, payload, "input_required")
            task["statusMessage"] = payload["next_action"]
            return task
        if status == "cancelled":
            return _task(params.task_id, payload, "cancelled")
        task = _task(params.task_id, payload, "completed")
        if status == "completed":
            arguments = {"action": "deep-research-report", "research_id": research_id}
            result = await self._run_action(_host(ctx), arguments, principal)
        else:  # failed, timed out, or interrupted and not resumable
            result = self._error_result(_stopped(payload))
        task["result"] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return task

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams) -> Any:
        require_client_extension(ctx, TASKS_EXTENSION)
        principal = request_principal()
        service, research_id = await self._research_of(ctx, params.task_id, principal)
        # An unknown task is an error; input is ignored.
        await _status(service, research_id, principal)
        return {}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> Any:
        require_client_extension(ctx, TASKS_EXTENSION)
        principal = request_principal()
        service, research_id = await self._research_of(ctx, params.task_id, principal)
        await _status(service, research_id, principal)
        try:
            await service.cancel(research_id, principal)
        except FoundryError as exc:  # already ended: cancellation is only a request
            log.info(
                "task cancel for %s: %s",
                research_id,
                exc.message,
                extra=about(research_id, name_of(principal)),
            )
        return {}

    # ------------------------------------------------------------------ helpers

    def _starts_a_run(self, params: CallToolRequestParams) -> bool:
        if params.name != self._tool_name:
            return False
        arguments = params.arguments or {}
        return arguments.get("action") in RUN_ACTIONS

    async def _research_of(
        self, ctx: ServerRequestContext[Any, Any], task_id: str, principal: Principal | None
    ) -> tuple[ResearchService, str]:
        service = await _host(ctx).service()
        research_id = self._task_ids(service).research_of(task_id, name_of(principal))
        if research_id is None:
            raise _not_found()
        return service, research_id

    async def _resume(
        self,
        service: ResearchService,
        research_id: str,
        payload: dict[str, Any],
        principal: Principal | None,
    ) -> dict[str, Any]:
        try:
            await service.check_spending(principal)
            await service.resume(research_id, principal=principal)
        except FoundryError as exc:
            log.warning(
                "task poll could not resume %s: %s",
                research_id,
                exc.message,
                extra=about(research_id, name_of(principal)),
            )
            return payload
        return await _status(service, research_id, principal)

    def _task_ids(self, service: ResearchService) -> TaskIds:
        """The task ids of the service's store, its key read once."""
        ids = self._ids.get(service.store)
        if ids is None:
            ids = self._ids[service.store] = TaskIds(service.store.shared_key(KEY_NAME))
        return ids


def _stopped(payload: dict[str, Any]) -> ResearchStoppedError:
    """The error a task's result carries when its research ended without completing."""
    research_id = payload["research_id"]
    return ResearchStoppedError(
        f"Research {research_id} ended {payload['status']}"
        + (f": {payload['error']}" if payload.get("error") else "."),
        remediation=(
            "Its work so far is kept. Resume it with research(action='deep-research-resume', "
            f"research_id='{research_id}'), or read what it has with "
            "action='deep-research-report'."
        ),
        details={
            "research_id": research_id,
            "status": payload["status"],
            "cause": payload.get("error_code"),
            "report_available": payload.get("report_available", False),
        },
    )


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request may get a task: a 2026-era request declaring the extension."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    try:
        require_client_extension(ctx, TASKS_EXTENSION)
    except MCPError:
        return False
    return True


def _host(ctx: ServerRequestContext[Any, Any]) -> ServiceHost:
    host: ServiceHost = ctx.lifespan_context
    return host


async def _status(
    service: ResearchService, research_id: str, principal: Principal | None
) -> dict[str, Any]:
    try:
        return await service.status(research_id, principal=principal)
    except ResearchNotFoundError:
        raise _not_found() from None


def _not_found() -> MCPError:
    return MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")


def _task(task_id: str, payload: dict[str, Any], status: str) -> dict[str, Any]:
    """The task fields of a research's status payload."""
    return {
        "taskId": task_id,
        "status": status,
        "statusMessage": progress_message(payload),
        "createdAt": payload["created_at"],
        "lastUpdatedAt": payload.get("last_activity_at") or payload["updated_at"],
        "ttlMs": None,  # kept until deleted (or research.retention_days)
        "pollIntervalMs": POLL_INTERVAL_MS,
    }


class TaskIds:
    """Task ids that name a research for one principal and cannot be forged without the
    server's key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def issue(self, research_id: str, principal: str | None = None) -> str:
        return f"{research_id}.{self._mac(research_id, principal)}"

    def research_of(self, task_id: str, principal: str | None = None) -> str | None:
        """The research a task id names, or None when this server did not issue the id to
        ``principal``."""
        research_id, _, mac = task_id.partition(".")
        if not mac or not hmac.compare_digest(mac, self._mac(research_id, principal)):
            return None
        return research_id

    def _mac(self, research_id: str, principal: str | None) -> str:
        # Without a principal the message is the research id alone, as before principals
        # existed, so task ids issued then still answer. Neither a research id nor a principal
        # name contains a newline, so the two forms cannot stand for each other.
        message = research_id if principal is None else f"{principal}\n{research_id}"
        digest = hmac.new(self._key, message.encode(), hashlib.sha256).hexdigest()
        return digest[:32]
