"""The research page on the team server, for each user their own research only.

A browser opening a page cannot send the ``Authorization`` header an MCP client sends, and the
long-lived bearer token must never travel in an address (history, logs, a shared screen). So
the page is opened with a short-lived signed link (:class:`foundry_mcp.view.serving.ViewLinks`):

- ``POST /view-links`` with the user's bearer token and ``{"research_id": "..."}`` answers
  ``{"url": ".../view/<id>/<link>/", "expires_at": ...}``: a link valid for an hour, bound to
  that research and that principal. Another principal's research, as an unknown id, is
  ``RESEARCH_NOT_FOUND`` (404), word for word.
- ``GET /view/<id>/<link>/`` is the page, ``GET /view/<id>/<link>/data`` its data (polled by
  the page while the research runs): each checks the link's signature, research and expiry,
  then reads the research as the link's principal.

The key is the store's shared key ``view-links`` (any worker of a team accepts any worker's
link). Host and Origin are checked as at ``/mcp`` (DNS rebinding), and every answer carries the
view's security headers.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from foundry_mcp.errors import FoundryError, InputError
from foundry_mcp.research.principal import Principal
from foundry_mcp.server.auth import UNAUTHORIZED, request_principal
from foundry_mcp.view.serving import (
    SECURITY_HEADERS,
    LinkRefused,
    ViewLinks,
    data_response,
    error_response,
    page_response,
    rebinding_refusal,
    refusal,
)

if TYPE_CHECKING:
    from foundry_mcp.research.service.research_service import ResearchService
    from foundry_mcp.server.host import ServiceHost

LINKS_PATH = "/view-links"
PAGE_PATH = "/view/{research_id}/{link}/"
DATA_PATH = "/view/{research_id}/{link}/data"
KEY_NAME = "view-links"
LINK_REFUSED = "This view link is not valid, or it has expired (a link opens the view for an hour)."
NEW_LINK = (
    "Ask for a new link: POST /view-links with your bearer token and "
    '{"research_id": "<id>"} (see docs/team-server.md, "The research view").'
)
NOT_READY = "The research service is not ready yet."


class TeamViews:
    """The view's routes on the team server: links for token holders, pages for link holders."""

    def __init__(
        self,
        host: Callable[[], ServiceHost | None],
        security: TransportSecuritySettings,
        tokens_required: bool,
    ) -> None:
        self._host = host
        self._security = security
        self._tokens_required = tokens_required
        self._links: dict[int, ViewLinks] = {}  # by the store they were keyed from

    def register(self, server: MCPServer) -> None:
        """Add the routes to ``server``'s HTTP app (before it is built)."""
        server.custom_route(LINKS_PATH, methods=["POST"], name="view-links")(self.issue)
        server.custom_route(PAGE_PATH, methods=["GET"], name="view-page")(self.page)
        server.custom_route(DATA_PATH, methods=["GET"], name="view-data")(self.data)

    async def issue(self, request: Request) -> Response:
        """``POST /view-links``: a link to the caller's research."""
        refused = await rebinding_refusal(request, self._security)
        if refused is not None:
            return refused
        principal = request_principal()
        if self._tokens_required and principal is None:
            return _json(
                {"error": "invalid_token", "error_description": UNAUTHORIZED},
                401,
                {"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        service = self._service()
        if service is None:
            return refusal(503, NOT_READY, "Try again in a few seconds.")
        try:
            research_id = _research_id(await _body(request))
            found = await service.status(research_id, principal=principal)
            links = await self._view_links(service)
        except FoundryError as exc:
            return _error_json(exc)
        link = links.issue(found["research_id"], principal.name if principal else None)
        url = str(request.base_url).rstrip("/") + link.path
        return _json(
            {
                "research_id": link.research_id,
                "url": url,
                "path": link.path,
                "expires_at": datetime.fromtimestamp(link.expires_at, UTC).isoformat(),
            },
            200,
        )

    async def page(self, request: Request) -> Response:
        """``GET /view/<id>/<link>/``: the page, for the link's principal."""
        return await self._view(request, page_response)

    async def data(self, request: Request) -> Response:
        """``GET /view/<id>/<link>/data``: the page's data, for the link's principal."""
        return await self._view(request, data_response)

    async def _view(self, request: Request, answer: Callable[[Any], Response]) -> Response:
        refused = await rebinding_refusal(request, self._security)
        if refused is not None:
            return refused
        research_id = request.path_params["research_id"]
        service = self._service()
        if service is None:
            return refusal(503, NOT_READY, "Try again in a few seconds.")
        try:
            link = (await self._view_links(service)).check(request.path_params["link"], research_id)
            if self._tokens_required and link.principal is None:
                raise LinkRefused("issued while the server took no tokens")
            principal = Principal(link.principal) if link.principal is not None else None
            from foundry_mcp.view.data import view_data  # the research code, once it is needed

            return answer(await view_data(service, research_id, principal))
        except LinkRefused:
            return refusal(403, LINK_REFUSED, NEW_LINK)
        except FoundryError as exc:
            return error_response(exc)

    def _service(self) -> ResearchService | None:
        """The research service, or None while it is still opening."""
        host = self._host()
        return host.current if host is not None else None

    async def _view_links(self, service: ResearchService) -> ViewLinks:
        """The links of the service's store, its key read once (off the event loop)."""
        links = self._links.get(id(service.store))
        if links is None:
            key = await anyio.to_thread.run_sync(service.store.shared_key, KEY_NAME)
            links = self._links[id(service.store)] = ViewLinks(key)
        return links


async def _body(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        raise InputError(
            "The body is not JSON.", remediation='Send {"research_id": "deepres-..."}.'
        ) from None


def _research_id(body: Any) -> str:
    research_id = body.get("research_id") if isinstance(body, dict) else None
    if not isinstance(research_id, str) or not research_id:
        raise InputError(
            "research_id is missing.", remediation='Send {"research_id": "deepres-..."}.'
        )
    return research_id


def _error_json(error: FoundryError) -> Response:
    status = error_response(error).status_code
    body = {
        "error": error.message,
        "error_code": error.error_code,
        "remediation": error.remediation,
    }
    return _json(body, status)


def _json(body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> Response:
    response = JSONResponse(body, status_code=status, headers=headers)
    response.headers.update(SECURITY_HEADERS)
    return response
