"""The team server: the same MCP server over streamable HTTP (``foundry-mcp serve --http``).

Built from the SDK's own parts: ``MCPServer.streamable_http_app`` (the transport at ``/mcp``, its
session manager, its bearer middleware fed by :class:`~foundry_mcp.server.auth.ConfiguredTokens`
and its Host/Origin checks), served by uvicorn.

- **One research service for the whole app.** The SDK's session manager enters the server's
  lifespan once, when the app starts, and every HTTP session is served with that lifespan's
  ``ServiceHost``: one store, one job runner, one heartbeat, however many clients connect.
- **Stopping.** On SIGTERM, SIGINT or SIGHUP uvicorn stops accepting connections, gives open
  requests ``STOP_GRACE_SECONDS`` (an SSE stream never ends by itself), then ends the app's
  lifespan, which closes the research runtime: every running research is saved
  ``interrupted`` and its lease released, so the next server resumes it.
- **Who may connect.** Bound to anything but loopback, the server refuses to start without
  tokens. With tokens, every request to ``/mcp`` needs one, loopback or not; without them
  (loopback only) every client is one anonymous principal that sees every research.
- **DNS rebinding.** The Host and Origin headers must name this server: a loopback name, the
  address it listens on (when that is neither loopback nor a wildcard), or a name of
  ``[server] allowed_hosts`` / ``allowed_origins`` (a reverse proxy's, say).
- ``GET /health`` answers without a token, for load balancers: whether the research service is
  ready and its store reachable (from the outage the store records when a statement cannot
  reach it, refreshed by at most one cheap statement every ``STORE_PROBE_SECONDS``), nothing
  about tokens or research. Not ready (the store unreachable) is HTTP 503.
- **Stateless mode** (``[server] stateless``): the SDK keeps no MCP session between requests, so
  any worker of a team answers any request and a balancer needs no affinity. Everything a
  request needs is in the shared store (research, task ids signed with the store's key).
- **A service that cannot start stops the server.** When the research service fails to open
  (the store unreachable, say), the server logs why and exits with ``EXIT_SERVICE_FAILED``, so
  that a service manager starts it again, instead of answering 503 forever.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from foundry_mcp import __version__
from foundry_mcp.config import TOKENS_ENV, ServerSettings, Settings
from foundry_mcp.errors import ConfigError, FoundryError
from foundry_mcp.server.app import create_server
from foundry_mcp.server.auth import ConfiguredTokens, auth_settings, word_refusals
from foundry_mcp.server.host import ServiceHost
from foundry_mcp.server.team.quick_answers import QuickAnswers
from foundry_mcp.server.team.views import TeamViews

if TYPE_CHECKING:
    from foundry_mcp.research.store.protocol import Store

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
STOP_GRACE_SECONDS = 3
# How long an idle client connection stays open. Longer than the idle timeout of the proxies
# and clients that keep connections to a worker (nginx's upstream keepalive and AWS's load
# balancers: 60 s; httpx: 5 s, uvicorn's own default), so that they, not the worker, close an
# idle connection: otherwise a request sent as the worker closes it breaks (a 502 at the proxy).
KEEP_ALIVE_SECONDS = 75
EXIT_SERVICE_FAILED = 1
LISTEN_BACKLOG = 2048
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
HANGUP = (signal.SIGHUP,) if sys.platform != "win32" else ()
STORE_PROBE_SECONDS = 5.0  # at most one statement per this long for /health
STORE_PROBE_WAIT_SECONDS = 1.0  # a probe that takes longer is answered from what is known
PROBE_RESEARCH_ID = "deepres-000000000000"  # well formed, never issued


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(server: ServerSettings, host: str) -> None:
    """``ConfigError`` for a server reachable from other machines that takes no tokens."""
    if server.tokens or is_loopback(host):
        return
    raise ConfigError(
        f"Refusing to listen on {host} without tokens: anyone who can reach it could run "
        "research on your API keys and read every report.",
        remediation=(
            f"Give each user a token: set {TOKENS_ENV}=alice:<token>,bob:<token> or add "
            "[[server.tokens]] entries (name, token) to the configuration (see "
            "docs/team-server.md); or listen on 127.0.0.1 only."
        ),
    )


def transport_security(server: ServerSettings, host: str, port: int) -> TransportSecuritySettings:
    """The Host and Origin values a request may carry: loopback names, the address listened
    on (unless it is a wildcard or loopback) and ``[server] allowed_hosts``/``allowed_origins``."""
    hosts, origins = list(LOOPBACK_HOSTS), list(LOOPBACK_ORIGINS)
    if not is_loopback(host) and not _is_wildcard(host):
        name = f"[{host}]" if ":" in host else host
        hosts.append(f"{name}:{port}")
        origins += [f"http://{name}:{port}", f"https://{name}:{port}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts + server.allowed_hosts,
        allowed_origins=origins + server.allowed_origins,
    )


class HealthProbe:
    """``GET /health``: the process answers, whether its research service is ready, and
    whether its store answers."""

    def __init__(self, probe_seconds: float = STORE_PROBE_SECONDS) -> None:
        self._host: ServiceHost | None = None
        self._attached = anyio.Event()
        self._probe_seconds = probe_seconds
        self._probed_at = -probe_seconds  # monotonic time of the last probe started
        self._probing = False

    @property
    def host(self) -> ServiceHost | None:
        """The research service's host, once the app's lifespan has started."""
        return self._host

    def attach(self, host: ServiceHost) -> None:
        self._host = host
        self._attached.set()

    async def failure(self) -> FoundryError | None:
        """Wait until the research service is open or failed; why it failed."""
        await self._attached.wait()
        assert self._host is not None
        return await self._host.settled()

    async def answer(self, _: Request) -> JSONResponse:
        readiness = self._host.readiness if self._host is not None else "starting"
        body: dict[str, object] = {"status": "ok", "research_service": readiness}
        service = self._host.current if self._host is not None else None
        if readiness == "ready" and service is not None:
            store = service.io.reader  # the reading side: never behind a waiting write
            await self._refresh(store)
            outage = store.unavailable()
            body["store"] = "ok" if outage is None else "unavailable"
            if outage is not None:
                body["research_service"] = "unavailable"
                body["store_error"] = outage.message
        if readiness == "failed" or "store_error" in body:
            body["status"] = "unavailable"
        body["version"] = __version__
        return JSONResponse(body, status_code=200 if body["status"] == "ok" else 503)

    async def _refresh(self, store: Store) -> None:
        """At most once every ``probe_seconds``, one cheap statement (its failure, or its
        success, is what the store then records), waited for ``STORE_PROBE_WAIT_SECONDS`` at
        most; a load balancer's probes never cost a query each."""
        now = time.monotonic()
        if self._probing or now - self._probed_at < self._probe_seconds:
            return
        self._probing, self._probed_at = True, now
        with anyio.move_on_after(STORE_PROBE_WAIT_SECONDS):
            await anyio.to_thread.run_sync(self._probe, store, abandon_on_cancel=True)

    def _probe(self, store: Store) -> None:
        try:
            store.fingerprint(PROBE_RESEARCH_ID)  # one indexed lookup of an id never issued
        except FoundryError:
            pass  # recorded by the store: ``unavailable()`` says why
        except Exception:
            log.debug("the store probe failed", exc_info=True)
        finally:
            self._probing = False


class CompleteResponses:
    """Ends an event stream cut short properly: the final empty chunk is sent.

    When the server is asked to stop, ``sse-starlette`` (the SDK's event streams) ends every
    open stream at once, returning without the last body message; uvicorn would log each one
    as an ERROR ("ASGI callable returned without completing response"). Completing it here
    ends the stream as the client expects (it then reconnects, to another worker), and a clean
    stop with sessions open logs no error.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = completed = False

        async def tracked(message: Message) -> None:
            nonlocal started, completed
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                completed = True
            await send(message)

        await self.app(scope, receive, tracked)
        if started and not completed:
            with suppress(Exception):  # the client may be gone already
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def build_app(
    settings: Settings,
    host: str,
    port: int,
    on_stopped: Callable[[], None] | None = None,
    probe: HealthProbe | None = None,
) -> ASGIApp:
    """The ASGI app of the team server listening on ``host:port`` (stateless: behind
    :class:`~foundry_mcp.server.team.quick_answers.QuickAnswers`)."""
    settings = settings.model_copy(update={"server": settings.server.as_team_server()})
    server_settings = settings.server
    verifier = ConfiguredTokens(server_settings) if server_settings.tokens else None
    probe = probe or HealthProbe()
    server = create_server(
        lambda: settings,
        on_stopped,
        on_started=probe.attach,
        token_verifier=verifier,
        auth=auth_settings(base_url(host, port)) if verifier else None,
    )
    server.custom_route(HEALTH_PATH, methods=["GET"], name="health")(probe.answer)
    security = transport_security(server_settings, host, port)
    TeamViews(lambda: probe.host, security, tokens_required=verifier is not None).register(server)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=server_settings.stateless,
        transport_security=security,
        host=host,
    )
    if verifier is not None and not word_refusals(app.router.routes, MCP_PATH):
        log.debug("the SDK's app has a new shape; its own 401 message is used")
    if not server_settings.stateless:
        return app
    return QuickAnswers(
        app, path=MCP_PATH, security=security, verifier=verifier, host=lambda: probe.host
    )


async def serve_http(settings: Settings, host: str, port: int) -> int:
    """Serve until a stop signal. Once everything is saved, uvicorn re-raises SIGTERM or SIGINT
    (the process ends by it); after SIGHUP this returns ``128 + SIGHUP``, and
    ``EXIT_SERVICE_FAILED`` when the research service could not start."""
    check_binding(settings.server, host)
    if log.getEffectiveLevel() > logging.INFO:  # where it listens, and its stop, always show
        log.setLevel(logging.INFO)
    listener = _listen(host, port)
    port = listener.getsockname()[1]  # the one chosen, when port 0 was asked for
    probe = HealthProbe()
    app = build_app(
        settings, host, port, lambda: log.info("stopped; running research saved"), probe
    )
    _log_start(settings.server, host, port)
    server = uvicorn.Server(server_config(app))
    hung_up, failed = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as task_group:
        if HANGUP:  # uvicorn itself stops on SIGINT and SIGTERM
            task_group.start_soon(_stop_on_hangup, server, hung_up)
        task_group.start_soon(_stop_on_failure, server, probe, failed)
        await server.serve(sockets=[listener])
        task_group.cancel_scope.cancel()
    if failed.is_set():
        return EXIT_SERVICE_FAILED
    return 128 + signal.SIGHUP if hung_up.is_set() else 0


def base_url(host: str, port: int) -> str:
    """``http://host:port``, with an IPv6 address in brackets."""
    name = f"[{host}]" if ":" in host else host
    return f"http://{name}:{port}"


def _is_wildcard(host: str) -> bool:
    return host in ("0.0.0.0", "::")


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket, or a ``ConfigError`` saying why there is none."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(LISTEN_BACKLOG)
    except OSError as exc:
        listener.close()
        raise ConfigError(
            f"Cannot listen on {base_url(host, port)}: {exc.strerror or exc}.",
            remediation=(
                "Choose a free port with --port (or [server] port), or stop the program that "
                "uses this one; --host (or [server] host) must be an address of this machine."
            ),
        ) from None
    return listener


def _log_start(server: ServerSettings, host: str, port: int) -> None:
    log.info(
        "foundry-mcp %s serving MCP over streamable HTTP at %s%s (health: %s)",
        __version__,
        base_url(host, port),
        MCP_PATH,
        HEALTH_PATH,
    )
    if server.stateless:
        log.info("stateless: no MCP session is kept, any worker of the store answers any request")
    principals = ConfiguredTokens(server).principals
    if principals:
        log.info(
            "bearer tokens required; %d principal(s): %s", len(principals), ", ".join(principals)
        )
    else:
        log.warning(
            "no tokens configured: every client that reaches %s is one anonymous principal "
            "and sees every research; set %s or [server] tokens to require tokens",
            host,
            TOKENS_ENV,
        )
    if _is_wildcard(host) and not server.allowed_hosts:
        log.warning(
            "listening on every interface, but only loopback names are accepted in the Host "
            "header: add the names clients use (e.g. 'research.example.com:%d') to [server] "
            "allowed_hosts",
            port,
        )


def server_config(app: ASGIApp) -> uvicorn.Config:
    """uvicorn's settings for the team server's app: our log handlers, the grace of a clean
    stop, idle connections kept past the proxies' timeout, the lifespan, and the HTTP parser
    in C (httptools, a dependency; h11 costs a worker a fifth more CPU per request)."""
    return uvicorn.Config(
        CompleteResponses(app),
        log_config=None,  # our handlers and format (text or JSON) for uvicorn's lines too
        timeout_graceful_shutdown=STOP_GRACE_SECONDS,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        lifespan="on",
        http="httptools",
    )


async def _stop_on_failure(server: uvicorn.Server, probe: HealthProbe, failed: anyio.Event) -> None:
    error = await probe.failure()
    if error is not None:
        log.error(
            "the research service could not start: %s %s Stopping.",
            error.message,
            error.remediation or "",
        )
        failed.set()
        server.should_exit = True


async def _stop_on_hangup(server: uvicorn.Server, hung_up: anyio.Event) -> None:
    with anyio.open_signal_receiver(*HANGUP) as signals:
        async for _ in signals:
            log.warning("SIGHUP received: saving running research, then stopping")
            hung_up.set()
            server.should_exit = True
