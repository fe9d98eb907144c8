"""The MCP server: one ``research`` tool, its resources and prompts (over stdio, or streamable
HTTP for a team: see ``server.http``)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import (
    CallToolResult,
    InputRequiredResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    TextContent,
)
from pydantic import WithJsonSchema

from foundry_mcp import __version__
from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import FoundryError
from foundry_mcp.logs import about
from foundry_mcp.research.principal import name_of
from foundry_mcp.server.actions import dispatch, tool_description
from foundry_mcp.server.arguments import ResearchArguments, parse_arguments
from foundry_mcp.server.asking import asker_for
from foundry_mcp.server.auth import request_principal
from foundry_mcp.server.envelope import Envelope, compact_text, failure, ok
from foundry_mcp.server.host import ServiceHost, hosted_service
from foundry_mcp.server.prompts import register_prompts
from foundry_mcp.server.resources import (
    app_resources,
    app_templates,
    linked_tools,
    read_app_resource,
    recent_reports,
    register_resources,
    renders_apps,
)
from foundry_mcp.server.results.hints import tool_annotations, tool_meta
from foundry_mcp.server.results.progress import progress_message
from foundry_mcp.server.session import session_host, wants_progress
from foundry_mcp.server.surface import published_input_schema
from foundry_mcp.server.tasks import ResearchTasks

if TYPE_CHECKING:  # the research code is imported in the background (see server.host)
    from foundry_mcp.research.principal import Principal
    from foundry_mcp.research.service.asking.asker import Asker
    from foundry_mcp.research.service.research_service import ProgressCallback

log = logging.getLogger(__name__)

SERVER_INSTRUCTIONS = (
    "foundry-mcp runs deep research in the background and returns cited reports. Start with "
    "research(action='deep-research', query=...), poll research(action='deep-research-status', "
    "research_id=..., wait=true), then read research(action='deep-research-report', "
    "research_id=...)."
)


class ResearchServer(MCPServer[Any]):
    """The MCP server, whose ``research`` tool validates its own arguments.

    The SDK would answer wrongly typed arguments with its own text, drop unknown ones and
    JSON-decode string values such as ``"null"``; the raw arguments are validated here instead
    (:mod:`foundry_mcp.server.arguments`), refused in the tool's envelope, and handed to the tool
    function through ``_validated`` for the duration of the call.
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        if name != TOOL_NAME:
            return await super().call_tool(name, arguments, context)
        try:
            parsed = parse_arguments(arguments)
        except FoundryError as exc:
            log.info("research call refused: %s", exc.details.get("field") or exc.error_code)
            return _result(failure(exc))
        token = _validated.set(parsed)
        try:
            # Only the action goes through the SDK (it is required by the published schema).
            return await super().call_tool(name, {"action": parsed.action}, context)
        finally:
            _validated.reset(token)

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        # The SDK's public list_resources() gets no request context, so it cannot reach the
        # session's research store; this handler does, and adds the recent reports.
        listed = await super()._handle_list_resources(ctx, params)
        listed.resources += await recent_reports(ctx.lifespan_context, request_principal())
        if renders_apps(ctx):
            listed.resources += app_resources()
        return listed

    # The research view as an MCP App (server.resources): only a client that declared it renders
    # apps sees the tool's link, the page and the view data; any other gets what it always got.

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        listed = await super()._handle_list_tools(ctx, params)
        if renders_apps(ctx):
            listed.tools = linked_tools(listed.tools, TOOL_NAME)
        return listed

    async def _handle_list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        listed = await super()._handle_list_resource_templates(ctx, params)
        if renders_apps(ctx):
            listed.resource_templates += app_templates()
        return listed

    async def _handle_read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult | InputRequiredResult:
        app_read = await read_app_resource(ctx, str(params.uri))
        return app_read or await super()._handle_read_resource(ctx, params)


TOOL_NAME = "research"
_validated: ContextVar[ResearchArguments | None] = ContextVar("research_arguments", default=None)


def _published_signature() -> inspect.Signature:
    """The tool function's signature: one parameter per argument, typed by its JSON schema.

    The SDK builds the published ``inputSchema`` from this; ``Any`` keeps it from validating.
    """
    schema = published_input_schema()
    required = set(schema.get("required", []))
    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    for name, prop in schema["properties"].items():
        parameters.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if name in required else None,
                annotation=Annotated[Any, WithJsonSchema(prop)],
            )
        )
    return inspect.Signature(parameters, return_annotation=Annotated[CallToolResult, Envelope])


def create_server(
    settings_loader: Callable[[], Settings] = load_settings,
    on_stopped: Callable[[], None] | None = None,
    *,
    on_started: Callable[[ServiceHost], None] | None = None,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
) -> MCPServer[Any]:
    """Build the MCP server; settings are read when its lifespan starts.

    The research service opens in the background (see ``server.host``), so ``initialize`` is
    answered without waiting for it. ``on_started`` receives the lifespan's ``ServiceHost``;
    ``on_stopped`` is called once the runtime has closed: every run it had is saved. Over stdio
    the lifespan is the session's; over streamable HTTP it is the whole app's, shared by every
    session. ``token_verifier`` and ``auth`` (both or neither) make HTTP callers authenticate.
    """

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[ServiceHost]:
        try:
            async with hosted_service(settings_loader) as host:
                if on_started is not None:
                    on_started(host)
                yield host
        finally:
            if on_stopped is not None:
                on_stopped()

    async def research(ctx: Context, **_: Any) -> CallToolResult:
        arguments = _validated.get()
        if arguments is None:  # only ResearchServer.call_tool may call this
            return _result(failure(FoundryError("The research tool was called without arguments.")))

        async def progress(snapshot: dict[str, Any]) -> None:
            # Sent only when the client asked for progress (it passed a progress token).
            await ctx.report_progress(snapshot["elapsed_s"], None, progress_message(snapshot))

        principal = request_principal()  # the bearer token's holder; None without tokens
        # Without a listener, a waiting status must not read the whole research every second.
        reporter = progress if wants_progress(ctx) else None
        asker = asker_for(ctx)  # the user, through the client, when it can be asked
        return _result(await _handle(session_host(ctx), arguments, reporter, principal, asker))

    research.__signature__ = _published_signature()  # type: ignore[attr-defined]
    tool = Tool.from_function(
        research,
        name=TOOL_NAME,
        description=tool_description(),
        annotations=tool_annotations(),
        meta=tool_meta(),  # per-action hints: MCP annotates whole tools only
    )
    tool.parameters = published_input_schema()  # the compact face, without the SDK's titles
    server = ResearchServer(
        "foundry-mcp",
        version=__version__,
        instructions=SERVER_INSTRUCTIONS,
        lifespan=lifespan,
        tools=[tool],
        extensions=[ResearchTasks(TOOL_NAME, run_action, lambda error: _result(failure(error)))],
        token_verifier=token_verifier,
        auth=auth,
    )

    register_resources(server)
    register_prompts(server)
    return server


async def run_action(
    host: ServiceHost, arguments: dict[str, Any], principal: Principal | None
) -> CallToolResult:
    """The research tool's answer to ``arguments`` for ``principal``, outside an MCP request
    (a task's run)."""
    return await answer(host, parse_arguments(arguments), principal)


async def answer(
    host: ServiceHost, arguments: ResearchArguments, principal: Principal | None
) -> CallToolResult:
    """The research tool's answer to parsed ``arguments`` for ``principal``, with no progress
    to report (a task's run)."""
    return _result(await answer_envelope(host, arguments, principal))


async def answer_envelope(
    host: ServiceHost, arguments: ResearchArguments, principal: Principal | None
) -> Envelope:
    """The envelope of that answer (a plain call answered without a session:
    ``server.team.quick_answers``, which encodes it itself)."""
    return await _handle(host, arguments, principal=principal)


def _result(envelope: Envelope) -> CallToolResult:
    structured = envelope.model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=compact_text(structured))],
        structured_content=structured,
        is_error=not envelope.success,
    )


async def _handle(
    host: ServiceHost,
    arguments: ResearchArguments,
    on_progress: ProgressCallback | None = None,
    principal: Principal | None = None,
    asker: Asker | None = None,
) -> Envelope:
    try:
        service = await host.service()
        payload, warnings = await dispatch(service, arguments, on_progress, principal, asker)
        return ok(payload, warnings)
    except FoundryError as exc:
        return failure(exc)
    except Exception:
        research_id = arguments.given().get("research_id")
        log.exception(
            "research action %s failed",
            arguments.action,
            extra=about(
                research_id if isinstance(research_id, str) else None,
                name_of(principal),
            ),
        )
        return failure(FoundryError("An internal error occurred while handling the request."))
