"""The MCP server: one ``research`` tool and the report resource, over stdio."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from foundry_mcp import __version__
from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import FoundryError
from foundry_mcp.research.service import ProgressCallback, ResearchService
from foundry_mcp.runtime import research_runtime
from foundry_mcp.server.actions import ACTION_PARAMS, dispatch, tool_description
from foundry_mcp.server.envelope import Envelope, failure, ok

log = logging.getLogger(__name__)

SERVER_INSTRUCTIONS = (
    "foundry-mcp runs deep research in the background and returns cited reports. Start with "
    "research(action='deep-research', query=...), poll research(action='deep-research-status', "
    "research_id=..., wait=true), then read research(action='deep-research-report', "
    "research_id=...)."
)


@dataclass
class ServerContext:
    """What the tool handlers need: the service, or the reason it could not start."""

    service: ResearchService | None
    startup_error: FoundryError | None = None

    def require(self) -> ResearchService:
        if self.service is None:
            assert self.startup_error is not None
            raise self.startup_error
        return self.service


def _schema(description: str, **extra: Any) -> Any:
    return Field(description=description, json_schema_extra=extra or None)


def create_server(settings_loader: Callable[[], Settings] = load_settings) -> MCPServer[Any]:
    """Build the MCP server; settings are read when a session starts."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[ServerContext]:
        try:
            settings = settings_loader()
        except FoundryError as exc:
            log.error("configuration error: %s", exc.message)
            yield ServerContext(service=None, startup_error=exc)
            return
        try:
            async with research_runtime(settings) as service:
                yield ServerContext(service=service)
        except FoundryError as exc:  # e.g. research_dir not writable
            log.error("cannot start: %s", exc.message)
            yield ServerContext(service=None, startup_error=exc)

    server: MCPServer[Any] = MCPServer(
        "foundry-mcp",
        version=__version__,
        instructions=SERVER_INSTRUCTIONS,
        lifespan=lifespan,
    )

    @server.tool(
        name="research",
        description=tool_description(),
        annotations=ToolAnnotations(
            title="Deep research", read_only_hint=False, open_world_hint=True
        ),
    )
    async def research(
        action: Annotated[str, _schema("The operation.", enum=list(ACTION_PARAMS))],
        ctx: Context,
        query: Annotated[
            str | None, _schema("deep-research: the research question (<= 200,000 chars).")
        ] = None,
        system_prompt: Annotated[
            str | None, _schema("deep-research: extra context or instructions for the research.")
        ] = None,
        provider_id: Annotated[
            str | None,
            _schema("deep-research: LLM as 'provider' or 'provider:model', e.g. 'openai:gpt-4.1'."),
        ] = None,
        model: Annotated[str | None, _schema("deep-research: LLM model name override.")] = None,
        max_iterations: Annotated[
            int | None,
            _schema("deep-research/resume: refinement rounds, 1-10.", minimum=1, maximum=10),
        ] = None,
        max_sub_queries: Annotated[
            int | None,
            _schema("deep-research/resume: sub-queries per round, 1-20.", minimum=1, maximum=20),
        ] = None,
        max_sources_per_query: Annotated[
            int | None,
            _schema("deep-research/resume: sources per sub-query, 1-50.", minimum=1, maximum=50),
        ] = None,
        max_concurrent: Annotated[
            int | None,
            _schema("deep-research/resume: parallel searches, 1-10.", minimum=1, maximum=10),
        ] = None,
        task_timeout: Annotated[
            float | None,
            _schema(
                "deep-research/resume: overall timeout in seconds, 10-86400.",
                minimum=10,
                maximum=86400,
            ),
        ] = None,
        deep_research_action: Annotated[
            str | None,
            _schema(
                "deep-research: start (default), continue, resume or cancel; the last three "
                "need research_id.",
                enum=["start", "continue", "resume", "cancel"],
            ),
        ] = None,
        research_id: Annotated[
            str | None, _schema("The id returned by deep-research, e.g. 'deepres-0123456789ab'.")
        ] = None,
        item_id: Annotated[
            str | None,
            _schema("deep-research-restore: the source id to restore, e.g. 'src-1a2b3c4d'."),
        ] = None,
        wait: Annotated[
            bool | None, _schema("deep-research-status: block until the status or phase changes.")
        ] = None,
        wait_timeout: Annotated[
            float | None,
            _schema(
                "deep-research-status: longest wait in seconds, 0-60 (default 30).",
                minimum=0,
                maximum=60,
            ),
        ] = None,
        offset: Annotated[
            int | None, _schema("deep-research-report: first character of the page.", minimum=0)
        ] = None,
        max_chars: Annotated[
            int | None,
            _schema(
                "deep-research-report: page size, 1000-100000 (default 20000).",
                minimum=1000,
                maximum=100000,
            ),
        ] = None,
        limit: Annotated[
            int | None,
            _schema(
                "deep-research-list: items per page, 1-100 (default 20); deep-research-events: "
                "1-500 (default 50).",
                minimum=1,
                maximum=500,
            ),
        ] = None,
        cursor: Annotated[
            str | None,
            _schema("deep-research-list / -events: next_cursor from the previous page."),
        ] = None,
        completed_only: Annotated[
            bool | None, _schema("deep-research-list: only completed research.")
        ] = None,
        status: Annotated[
            str | None,
            _schema(
                "deep-research-list: only these statuses, comma-separated, e.g. "
                "'running,interrupted'."
            ),
        ] = None,
    ) -> Annotated[CallToolResult, Envelope]:
        args = {
            "query": query,
            "system_prompt": system_prompt,
            "provider_id": provider_id,
            "model": model,
            "max_iterations": max_iterations,
            "max_sub_queries": max_sub_queries,
            "max_sources_per_query": max_sources_per_query,
            "max_concurrent": max_concurrent,
            "task_timeout": task_timeout,
            "deep_research_action": deep_research_action,
            "research_id": research_id,
            "item_id": item_id,
            "wait": wait,
            "wait_timeout": wait_timeout,
            "offset": offset,
            "max_chars": max_chars,
            "limit": limit,
            "cursor": cursor,
            "completed_only": completed_only,
            "status": status,
        }

        async def progress(snapshot: dict[str, Any]) -> None:
            # Sent only when the client asked for progress (it passed a progress token).
            message = (
                f"{snapshot['status']}: {snapshot['phase']}, iteration {snapshot['iteration']}/"
                f"{snapshot['max_iterations']}, {snapshot['counts']['sources']} sources, "
                f"{snapshot['counts']['findings']} findings"
            )
            await ctx.report_progress(snapshot["elapsed_s"], None, message)

        envelope = await _handle(_context(ctx), action, args, progress)
        return CallToolResult(
            content=[TextContent(type="text", text=envelope.model_dump_json())],
            structured_content=envelope.model_dump(mode="json"),
            is_error=not envelope.success,
        )

    @server.resource(
        "research://{research_id}/report",
        name="research-report",
        description="The full markdown report of a research, with its numbered sources.",
        mime_type="text/markdown",
    )
    async def report_resource(research_id: str, ctx: Context) -> str:
        context = _context(ctx)
        try:
            return context.require().full_report(research_id)
        except FoundryError as exc:
            raise ResourceError(f"{exc.message} {exc.remediation}") from None

    return server


def _context(ctx: Context) -> ServerContext:
    context = ctx.request_context.lifespan_context
    assert isinstance(context, ServerContext)
    return context


async def _handle(
    context: ServerContext,
    action: str,
    args: dict[str, Any],
    on_progress: ProgressCallback | None = None,
) -> Envelope:
    try:
        service = context.require()
        payload, warnings = await dispatch(service, action, args, on_progress)
        return ok(payload, warnings)
    except FoundryError as exc:
        return failure(exc)
    except Exception:
        log.exception("research action %s failed", action)
        return failure(FoundryError("An internal error occurred while handling the request."))
