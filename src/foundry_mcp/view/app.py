"""The research view as an MCP App (extension ``io.modelcontextprotocol/ui``, SEP-1865).

A host that renders MCP Apps (Claude, ChatGPT, VS Code, Goose...) declares the extension at
``initialize`` with the app MIME type among its ``mimeTypes``. For such a client only, the
``research`` tool names the page :data:`APP_URI` in its ``_meta.ui.resourceUri``; the host reads
that resource (the view's page with its bridge script, :mod:`foundry_mcp.view.assets`
``app_bridge.js``), shows it in a sandboxed frame, and passes it each result of the tool. The
page then reads the research's whole view, :data:`VIEW_URI`, through the host, and again every
two seconds while the research runs. Every other client sees the server exactly as it was:
the same tool list, byte for byte, the same resources, no tokens spent on the app.

This module holds what the app is (its addresses, its MIME types, its declarations) and the
negotiation; the server (``server.resources``) serves them.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.types import ClientCapabilities, Resource, ResourceTemplate

EXTENSION: Final = EXTENSION_ID  # "io.modelcontextprotocol/ui"
APP_MIME: Final = APP_MIME_TYPE  # "text/html;profile=mcp-app"
APP_URI: Final = "ui://foundry-mcp/research"
VIEW_URI: Final = "research://{research_id}/view"
VIEW_MIME: Final = "application/json"

# The page needs nothing from elsewhere: no fetches, scripts, styles, fonts or frames of other
# origins, so every list of allowed domains is empty (the host's strictest policy), said
# explicitly rather than left to a host's default. A border and background from the host.
APP_RESOURCE_UI: Final[dict[str, Any]] = {
    "csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []},
    "prefersBorder": True,
}

# ``ui/resourceUri`` is the flat key of hosts written before ``_meta.ui`` (the reference
# server helper of ext-apps still sets both); the nested one is the standard's.
TOOL_UI_META: Final[dict[str, Any]] = {"ui": {"resourceUri": APP_URI}, "ui/resourceUri": APP_URI}


def client_wants_apps(capabilities: ClientCapabilities | None) -> bool:
    """Whether a client with these ``capabilities`` renders this app: it declared the
    extension and the app's MIME type among the extension's ``mimeTypes``."""
    extensions = capabilities.extensions if capabilities is not None else None
    settings = (extensions or {}).get(EXTENSION)
    if not isinstance(settings, dict):
        return False
    mime_types = settings.get("mimeTypes")
    return isinstance(mime_types, list) and APP_MIME in mime_types


def tool_meta_with_app(meta: dict[str, Any] | None) -> dict[str, Any]:
    """A tool's ``_meta`` with the link to the app added (the tool's own keys kept)."""
    return {**(meta or {}), **TOOL_UI_META}


def app_resource() -> Resource:
    """The app's page as ``resources/list`` shows it to a client that renders apps."""
    return Resource(
        uri=APP_URI,
        name="research-view",
        title="Research view",
        description="A research's live page (question, status, report, sources, follow-ups), "
        "for hosts that render MCP Apps.",
        mime_type=APP_MIME,
        _meta={"ui": APP_RESOURCE_UI},
    )


def view_template() -> ResourceTemplate:
    """The template of a research's view data, listed for a client that renders apps."""
    return ResourceTemplate(
        uri_template=VIEW_URI,
        name="research-view-data",
        description="Everything the research view shows of one research, as JSON (what the "
        "app reads through the host).",
        mime_type=VIEW_MIME,
    )


@cache
def app_page() -> str:
    """The app's page: the view with the bridge to its host (read from the package's files
    once; call it off the event loop the first time)."""
    from foundry_mcp.view.page import render_page  # the page's assets only when asked for

    return render_page(None, feed="app")


def research_id_of(uri: str) -> str | None:
    """The research id a view address names, or None when ``uri`` is not one."""
    prefix, _, suffix = VIEW_URI.partition("{research_id}")
    if not (uri.startswith(prefix) and uri.endswith(suffix)):
        return None
    research_id = uri[len(prefix) : len(uri) - len(suffix)]
    return research_id if research_id and "/" not in research_id else None
