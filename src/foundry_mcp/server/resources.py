"""The MCP resources: the tool's guide and result schemas, a research's report, claims,
sources and events, and recent reports; and for a client that renders MCP Apps, the research
view (:mod:`foundry_mcp.view.app` says what the app is and how a client asks for it).

The templates read one research each (``report/{version}``: one version of its report); a failed read is a resource error carrying the
same message as the tool's error for that id (``RESEARCH_NOT_FOUND``, ``REPORT_NOT_READY``).
On a team server both the templates and the list serve the caller's own research only.

The view exists for a client that declared it renders apps only: the research tool links its
page (``ui://``), ``resources/list`` shows the page and ``resources/templates/list`` the view
data's template, and both read. For any other client none of this exists: its lists are what
they were before the app, and the two addresses are unknown.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextResourceContents,
    Tool,
)

from foundry_mcp.errors import FoundryError
from foundry_mcp.server.auth import request_principal
from foundry_mcp.server.host import ServiceHost
from foundry_mcp.server.session import session_host
from foundry_mcp.server.surface import HELP_URI, SCHEMAS_URI, help_document, schemas_document
from foundry_mcp.view.app import (
    APP_MIME,
    APP_RESOURCE_UI,
    APP_URI,
    VIEW_MIME,
    app_page,
    app_resource,
    client_wants_apps,
    research_id_of,
    tool_meta_with_app,
    view_template,
)

if TYPE_CHECKING:  # the research code is imported in the background (see server.host)
    from foundry_mcp.research.principal import Principal
    from foundry_mcp.research.service.research_service import ResearchService

log = logging.getLogger(__name__)

VERSION_URI = "research://{research_id}/report/{version}"
RECENT_REPORTS = 20
NAME_CHARS = 80

ResourceText = Callable[["ResearchService", str, "Principal | None"], Awaitable[str]]

TEMPLATES: list[tuple[str, str, str, ResourceText]] = [
    (
        "report",
        "text/markdown",
        "The full markdown report of a research, with its numbered sources.",
        lambda service, rid, principal: service.full_report(rid, principal),
    ),
    (
        "claims",
        "application/json",
        "Every cited sentence of a research's report with its verdict, its numbered sources "
        "and the quotes the fact-checker saw (spans of the sources' stored text), as JSON.",
        lambda service, rid, principal: service.claims(rid, principal),
    ),
    (
        "answer",
        "application/json",
        "The answer of a research started with output_schema, in that shape, with each value's "
        "sources and quotes by JSON pointer (citations) and why a value is null (unknown).",
        lambda service, rid, principal: service.answer(rid, principal),
    ),
    (
        "sources",
        "application/json",
        "Every source a research gathered, as JSON: number in the report's Sources list (null "
        "when not cited), id, title, url, provider, quality and whether the report cites it.",
        lambda service, rid, principal: service.sources(rid, principal),
    ),
    (
        "events",
        "application/json",
        "A research's whole audit trail, oldest first, as JSON (what deep-research-events "
        "pages through).",
        lambda service, rid, principal: service.all_events(rid, principal),
    ),
]


def register_resources(server: MCPServer[Any]) -> None:
    """Add the tool's guide and result schemas, and the ``research://{research_id}/<part>``
    templates, to ``server``."""
    server.resource(
        HELP_URI,
        name="research-help",
        description="Every action and parameter of the research tool, in full.",
        mime_type="text/markdown",
    )(help_document)
    server.resource(
        SCHEMAS_URI,
        name="research-schemas",
        description="The JSON Schema of each research action's data.",
        mime_type="application/schema+json",
    )(schemas_document)
    for part, mime_type, description, read in TEMPLATES:
        server.resource(
            f"research://{{research_id}}/{part}",
            name=f"research-{part}",
            description=description,
            mime_type=mime_type,
        )(_template_text(read))
    server.resource(
        VERSION_URI,
        name="research-report-version",
        description="One version of a research's report (1 is its first; deep-research-versions "
        "lists them), in markdown.",
        mime_type="text/markdown",
    )(_report_version)


def _template_text(read: ResourceText) -> Callable[..., Any]:
    async def read_part(research_id: str, ctx: Context) -> str:
        try:
            service = await session_host(ctx).service()
            return await read(service, research_id, request_principal())
        except FoundryError as exc:
            raise ResourceError(f"{exc.message} {exc.remediation}") from None

    return read_part


async def _report_version(research_id: str, version: str, ctx: Context) -> str:
    """``research://{research_id}/report/{version}``: that version's whole report."""
    try:
        service = await session_host(ctx).service()
        number: Any = int(version) if version.isdigit() else version  # else: said not a number
        return await service.full_report(research_id, request_principal(), number)
    except FoundryError as exc:
        raise ResourceError(f"{exc.message} {exc.remediation}") from None


async def recent_reports(host: ServiceHost, principal: Principal | None) -> list[Resource]:
    """The reports of the newest completed research (of ``principal`` only, when given), so
    clients that browse can attach one."""
    try:
        service = await host.service()
        recent = await service.recent_reports(RECENT_REPORTS, NAME_CHARS, principal)
    except FoundryError as exc:  # no service, no list: the templates still say why on read
        log.info("no recent reports to list: %s", exc.message)
        return []
    return [
        Resource(
            uri=f"research://{rid}/report",
            name=query,
            description=f"Report of research {rid}.",
            mime_type="text/markdown",
        )
        for rid, query in recent
    ]


# --------------------------------------------------------------------------- the MCP App


def renders_apps(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client of this request declared that it renders this app."""
    return client_wants_apps(ctx.session.client_capabilities)


def linked_tools(tools: list[Tool], tool_name: str) -> list[Tool]:
    """``tools`` with the tool named ``tool_name`` linking the app's page."""
    return [
        tool.model_copy(update={"meta": tool_meta_with_app(tool.meta)})
        if tool.name == tool_name
        else tool
        for tool in tools
    ]


def app_resources() -> list[Resource]:
    """What ``resources/list`` adds for a client that renders apps."""
    return [app_resource()]


def app_templates() -> list[ResourceTemplate]:
    """What ``resources/templates/list`` adds for a client that renders apps."""
    return [view_template()]


async def read_app_resource(
    ctx: ServerRequestContext[Any, Any], uri: str
) -> ReadResourceResult | None:
    """The app's page or a research's view data when ``uri`` names one and the client renders
    apps; None otherwise (the address is then read as any other)."""
    if not renders_apps(ctx):
        return None
    if uri == APP_URI:
        # Read once from the package's files, then kept: off the loop the first time.
        html = await anyio.to_thread.run_sync(app_page)
        return _contents(uri, APP_MIME, html, {"ui": APP_RESOURCE_UI})
    research_id = research_id_of(uri)
    if research_id is None:
        return None
    host = ctx.lifespan_context
    assert isinstance(host, ServiceHost)
    text = await _view_json(host, uri, research_id, request_principal())
    return _contents(uri, VIEW_MIME, text, None)


async def _view_json(
    host: ServiceHost, uri: str, research_id: str, principal: Principal | None
) -> str:
    """One research's view data as JSON, for ``principal`` (its owner, on a team server)."""
    try:
        service = await host.service()
        # Imported once the service is had: the research code it reads is then imported (the
        # server imports it in the background, see server.host), and this costs nothing.
        from foundry_mcp.view.data import view_data

        data = await view_data(service, research_id, principal)
    except FoundryError as exc:  # said as the other research:// resources say it
        raise MCPError(
            code=INTERNAL_ERROR, message=f"{exc.message} {exc.remediation}", data={"uri": uri}
        ) from None
    return data.model_dump_json()


def _contents(
    uri: str, mime_type: str, text: str, meta: dict[str, Any] | None
) -> ReadResourceResult:
    return ReadResourceResult(
        contents=[TextResourceContents(uri=uri, mime_type=mime_type, text=text, _meta=meta)]
    )
