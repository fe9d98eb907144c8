"""The research page served live over HTTP: ``foundry-mcp view ID --serve`` (:func:`serve_view`),
and the parts the team server serves it with (its signed view links, :class:`ViewLinks`).

- **Where.** Loopback (``127.0.0.1``) by default; any other address is refused unless the caller
  allows it explicitly (``allow_remote``), as the team server refuses one without tokens.
- **Who.** Every address of the page holds an unguessable capability as a path segment:
  ``http://127.0.0.1:PORT/<token>/`` is the page and ``<token>/data`` its data as JSON (the
  page's ``polled.js`` fetches ``./data``, so the capability travels with the page's own URL,
  under any path prefix, and never in a header the page must keep). The local server's token is
  random (``secrets.token_urlsafe``) and compared by digest in constant time; a team server's is
  a :class:`ViewLinks` link: an HMAC of the research, the principal and an expiry.
- **DNS rebinding.** The Host header must name this server and the Origin header, when a
  browser sends one, its origin: the MCP SDK's own check (``TransportSecurityMiddleware``), the
  one the team server applies at ``/mcp``. Anything else is refused with 421 or 403.
- **Headers.** Every answer carries the page's content security policy (in a header as well as
  in the page), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``,
  ``Cache-Control: no-store`` and ``X-Frame-Options: DENY``. A refusal is plain text: it quotes
  nothing a request sent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import html
import ipaddress
import logging
import re
import secrets
import signal
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import Receive, Scope, Send

from foundry_mcp.errors import ConfigError, FoundryError

if TYPE_CHECKING:  # the research code is imported when a page is first made, not before
    from foundry_mcp.view.data import ViewData

log = logging.getLogger(__name__)

DATA = "data"  # the data's address, relative to the page's
LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
VIEW_LINK_SECONDS = 3600  # how long a team server's view link opens the page and its data
# A refusal of the page's own requests: the page shows the message (as text) and stops polling.
STATUS_OF: dict[str, int] = {
    "RESEARCH_NOT_FOUND": 404,
    "INVALID_RESEARCH_ID": 404,
    "STORE_UNAVAILABLE": 503,
}
SECURITY_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
# The policy of an answer that is not the page (data, refusals): nothing may load or run.
NOTHING = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
NO_TOKEN = (
    "This address does not open a research view. Open the address foundry-mcp printed "
    "(foundry-mcp view <id> --serve prints it; it holds the view's access token), or ask "
    "for a new one."
)

_META_POLICY = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"')

LoadView = Callable[[], Awaitable["ViewData"]]


# ---------------------------------------------------------------------- answers


def page_response(data: ViewData) -> Response:
    """The page, polling ``./data`` while the research runs, with its policy as a header."""
    from foundry_mcp.view.page import render_page

    html = render_page(data, feed="polled")
    return _secured(Response(html, media_type="text/html; charset=utf-8"), page_policy(html))


def data_response(data: ViewData) -> Response:
    """The view's data as JSON (what ``polled.js`` hands to ``FoundryView.render``)."""
    body = data.model_dump_json()
    return _secured(Response(body, media_type="application/json; charset=utf-8"))


def refusal(status: int, message: str, remediation: str | None = None) -> Response:
    """A plain-text refusal (the page's script reads it as text, never as markup)."""
    text = message if remediation is None else f"{message}\nfix: {remediation}"
    return _secured(PlainTextResponse(text, status_code=status))


def error_response(error: FoundryError) -> Response:
    """A ``FoundryError`` as a refusal: unknown research 404, store away 503, else 400/500."""
    status = STATUS_OF.get(error.error_code)
    if status is None:
        status = 400 if error.error_type == "validation" else 500
    return refusal(status, error.message, error.remediation)


def page_policy(page: str) -> str:
    """The content security policy the page declares in its ``<meta>``, for the header too
    (where ``frame-ancestors`` also counts: no other site may frame the page)."""
    found = _META_POLICY.search(page)
    if found is None:
        return NOTHING  # a page without a policy runs nothing
    return f"{html.unescape(found.group(1))}; frame-ancestors 'none'"


def _secured(response: Response, policy: str = NOTHING) -> Response:
    response.headers.update(SECURITY_HEADERS)
    response.headers["Content-Security-Policy"] = policy
    return response


async def rebinding_refusal(
    request: Request, security: TransportSecuritySettings
) -> Response | None:
    """421 for a Host, 403 for an Origin that does not name this server; None when both do."""
    refused = await TransportSecurityMiddleware(security).validate_request(
        request, is_post=request.method == "POST"
    )
    if refused is None:
        return None
    return refusal(refused.status_code, bytes(refused.body).decode("utf-8", "replace"))


def local_security(port: int, extra_hosts: tuple[str, ...] = ()) -> TransportSecuritySettings:
    """Host and Origin of a loopback view server on ``port`` (this port only)."""
    names = [*LOOPBACK_NAMES, *extra_hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in names],
        allowed_origins=[f"http://{name}:{port}" for name in names],
    )


# ---------------------------------------------------------------------- the local server


class LiveView:
    """The ASGI app of ``foundry-mcp view --serve``: one research's page and data, behind one
    access token in the path (``/<token>/``, ``/<token>/data``)."""

    def __init__(self, load: LoadView, token: str, security: TransportSecuritySettings) -> None:
        self._load = load
        self._digest = _digest(token)
        self._security = security

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        response = await self._answer(request)
        await response(scope, receive, send)

    async def _answer(self, request: Request) -> Response:
        refused = await rebinding_refusal(request, self._security)
        if refused is not None:
            return refused
        token, _, rest = request.url.path.lstrip("/").partition("/")
        if not hmac.compare_digest(_digest(token), self._digest):
            return refusal(403, NO_TOKEN)
        if request.method not in ("GET", "HEAD"):
            return refusal(405, "This view only answers GET requests.")
        if rest not in ("", DATA) or (rest == "" and not request.url.path.endswith("/")):
            if rest == "":  # the page's own folder, so that ./data resolves inside it
                return _secured(RedirectResponse(f"{token}/", status_code=308))
            return refusal(404, "Not found: this view serves its page and ./data only.")
        try:
            data = await self._load()
        except FoundryError as exc:
            return error_response(exc)
        return data_response(data) if rest == DATA else page_response(data)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


@dataclass(frozen=True)
class Listening:
    """Where a view server answers: ``url`` holds its access token."""

    host: str
    port: int
    url: str


async def serve_view(
    load: LoadView,
    *,
    host: str = LOOPBACK,
    port: int = 0,
    allow_remote: bool = False,
    on_ready: Callable[[Listening], None] | None = None,
    stop: anyio.Event | None = None,
) -> None:
    """Serve the page of ``load`` at ``http://host:port/<token>/`` until Ctrl-C, SIGTERM or
    ``stop``; ``on_ready`` hears where (with the token) once it listens.

    A ``ConfigError`` (with what to do) for an address other than loopback without
    ``allow_remote``, or one that cannot be listened on.
    """
    check_view_binding(host, allow_remote)
    listener = _listen(host, port)
    port = listener.getsockname()[1]
    token = secrets.token_urlsafe(32)
    named = f"[{host}]" if ":" in host else host
    extra = () if is_loopback(host) else (named,)
    app = LiveView(load, token, local_security(port, extra))
    # The access log would write the token of every request: it stays off.
    server = _QuietServer(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on"))
    if on_ready is not None:  # the socket listens already: a browser's request waits for us
        on_ready(Listening(host, port, f"http://{named}:{port}/{token}/"))
    async with anyio.create_task_group() as task_group:
        if stop is not None:
            task_group.start_soon(_stop_when, stop, server)
        await server.serve(sockets=[listener])
        task_group.cancel_scope.cancel()


async def _stop_when(stop: anyio.Event, server: uvicorn.Server) -> None:
    await stop.wait()
    server.should_exit = True


class _QuietServer(uvicorn.Server):
    """uvicorn stopping on SIGINT and SIGTERM without raising the signal again afterwards: a
    viewer stopped with Ctrl-C has done what it was asked (exit 0)."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_view_binding(host: str, allow_remote: bool) -> None:
    """``ConfigError`` for a view server reachable from other machines, unless allowed."""
    if allow_remote or is_loopback(host):
        return
    raise ConfigError(
        f"Refusing to serve the research view on {host}: anyone who can reach that address "
        "and learns its link could read the research.",
        remediation=(
            "Serve it on 127.0.0.1 (the default) and open it on this machine; to share a "
            "research with others, run the team server (foundry-mcp serve --http, see "
            "docs/team-server.md), which serves each user the view of their own research."
        ),
    )


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host.strip("[]"), port))
        listener.listen(64)
    except OSError as exc:
        listener.close()
        raise ConfigError(
            f"Cannot serve the research view on {host}:{port}: {exc.strerror or exc}.",
            remediation="Choose another port with --port, or leave --port out to take any "
            "free one.",
        ) from None
    return listener


def _digest(token: str) -> bytes:
    # Digests have one length, so compare_digest never returns early on a length mismatch.
    return hashlib.sha256(token.encode("utf-8", "replace")).digest()


# ---------------------------------------------------------------------- signed view links


class LinkRefused(Exception):
    """A view link that is not this server's, not for this research, or expired."""


@dataclass(frozen=True)
class ViewLink:
    """A link that opens one research's view for one principal (None: a server without
    tokens) until ``expires_at`` (Unix seconds)."""

    research_id: str
    principal: str | None
    expires_at: int
    token: str

    @property
    def path(self) -> str:
        """The page's address on the team server (the data is ``<path>data``)."""
        return f"/view/{self.research_id}/{self.token}/"


class ViewLinks:
    """Short-lived signed links to a research's view: ``<expiry>.<principal>.<mac>``, the MAC
    an HMAC-SHA256 (with the server's key) of the research, the principal and the expiry. A
    browser cannot send a bearer header when it opens a page, and the long-lived token must not
    travel in an address; a link opens only its own research, for its own principal, for
    ``seconds`` after it was issued."""

    def __init__(
        self,
        key: bytes,
        seconds: int = VIEW_LINK_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = key
        self._seconds = seconds
        self._clock = clock

    def issue(self, research_id: str, principal: str | None) -> ViewLink:
        expires_at = int(self._clock()) + self._seconds
        name = _b64(principal.encode()) if principal is not None else ""
        mac = self._mac(research_id, principal, expires_at)
        return ViewLink(research_id, principal, expires_at, f"{expires_at}.{name}.{mac}")

    def check(self, token: str, research_id: str) -> ViewLink:
        """The link ``token`` stands for, if it is this server's, for ``research_id`` and not
        expired; ``LinkRefused`` otherwise (which of these, only once the MAC is right)."""
        parts = token.split(".")
        if len(parts) != 3 or not parts[0].isdigit():
            raise LinkRefused("not a view link")
        expires_at = int(parts[0])
        try:
            principal = _unb64(parts[1]).decode() if parts[1] else None
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise LinkRefused("not a view link") from None
        expected = self._mac(research_id, principal, expires_at)
        if not hmac.compare_digest(parts[2].encode(), expected.encode()):
            raise LinkRefused("not a view link of this research")
        if self._clock() >= expires_at:
            raise LinkRefused("expired")
        return ViewLink(research_id, principal, expires_at, token)

    def _mac(self, research_id: str, principal: str | None, expires_at: int) -> str:
        # No research id or principal name holds a newline; a principal is never empty, so
        # the anonymous link ("") stands for no principal's.
        message = f"view-link\n{research_id}\n{principal or ''}\n{expires_at}"
        return hmac.new(self._key, message.encode(), hashlib.sha256).hexdigest()[:32]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
