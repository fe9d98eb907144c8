"""A stateless team server answers plain tool calls and the handshake without an MCP session.

In stateless mode (``[server] stateless``) the SDK builds, for every POST, a transport, a
JSON-RPC dispatcher and a server session, answers through an event stream and tears them all
down again: about 2 ms of CPU and a dozen turns of the event loop per request. Status polls are
most of a team server's requests (every client polls each of its research), every client opens
its session with two more, and a crowd of starts comes all at once, so under load that
plumbing, not the store, set the status latency (docs/benchmarks.md, "Team server").

:class:`QuickAnswers` sits in front of the SDK's app and answers three kinds of POST to the MCP
endpoint itself, when they come from a caller the SDK would serve (Host and Origin allowed, a
valid bearer token when the server takes tokens, JSON accepted, no protocol version or one of
the handshake era's):

* one JSON-RPC ``tools/call`` of ``research`` without progress token or task, and without
  ``wait`` (a status, a start, a report, a list: one request, one answer): the answer comes
  from the tool's own handler (``server.app.answer_envelope``, what the SDK's path calls too
  when there is no progress to report), as the ``application/json`` response the streamable
  HTTP transport allows, encoded in one pass (``server.envelope.tool_answer_json``);
* ``initialize``, once the SDK has answered one like it, and ``notifications/initialized``
  (:mod:`foundry_mcp.server.team.handshake`).

Every other request, and any it is unsure of, goes to the SDK unchanged, its body replayed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.provider import TokenVerifier
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from foundry_mcp.errors import FoundryError
from foundry_mcp.research.principal import Principal
from foundry_mcp.server.app import TOOL_NAME, answer_envelope
from foundry_mcp.server.arguments import ResearchArguments, parse_arguments
from foundry_mcp.server.auth import principal_of
from foundry_mcp.server.envelope import tool_answer_json
from foundry_mcp.server.host import ServiceHost
from foundry_mcp.server.team.handshake import Handshake, is_initialize, is_initialized

MAX_BODY_BYTES = 16 * 1024  # a call is a few hundred bytes; larger ones go to the SDK


class QuickAnswers:
    """The ASGI app in front of the SDK's: plain tool calls and the handshake answered here,
    the rest passed on."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str,
        security: TransportSecuritySettings,
        verifier: TokenVerifier | None,
        host: Callable[[], ServiceHost | None],
    ) -> None:
        self.app = app
        self._path = path
        self._security = TransportSecurityMiddleware(security)
        self._verifier = verifier
        self._host = host
        self._handshake = Handshake()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == self._path
            and _plain_post(Headers(scope=scope))
        ):
            await self.app(scope, receive, send)
            return
        received, body = await _read_body(receive)
        message = _json_of(body)
        replayed = _replaying(received, receive)
        if is_initialize(message):
            known = await self._handshake.answer_soon(message)
            if known is not None and await self._admitted(scope, receive):
                await _send_json(send, known)
            else:
                async with self._handshake.answering(message, send) as recording:
                    await self.app(scope, replayed, recording)
            return
        if is_initialized(message) and await self._admitted(scope, receive):
            await _send_accepted(send)
            return
        arguments, host = _plain_call(message), self._host()
        service_open = host is not None and host.current is not None
        admitted = None
        if arguments is not None and service_open:
            admitted = await self._admitted(scope, receive)
        if host is None or arguments is None or admitted is None:
            await self.app(scope, replayed, send)
            return
        envelope = await answer_envelope(host, arguments, admitted.principal)
        await _send_body(send, tool_answer_json(message["id"], envelope))

    async def _admitted(self, scope: Scope, receive: Receive) -> Admitted | None:
        """The caller, if the SDK would serve it: Host and Origin allowed, and a valid bearer
        token when the server takes tokens; None otherwise (the SDK refuses it, saying why)."""
        if await self._security.validate_request(Request(scope, receive), is_post=True):
            return None
        if self._verifier is None:
            return Admitted(None)
        authorization = Headers(scope=scope).get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        access = await self._verifier.verify_token(token.strip())
        return None if access is None else Admitted(principal_of(access))


@dataclass(frozen=True)
class Admitted:
    """A caller the SDK would serve, and its principal (None: the server takes no tokens)."""

    principal: Principal | None


def _json_of(body: bytes | None) -> Any:
    """The JSON of a body; None when there is none or it is not JSON."""
    if body is None:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _plain_post(headers: Headers) -> bool:
    """A small JSON body, a reply the client accepts as JSON, and no protocol version beyond
    the handshake era's (the SDK routes the newer ones elsewhere)."""
    version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    accept = headers.get("accept", "")
    length = headers.get("content-length", "")
    return (
        (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
        and "application/json" in accept
        and "text/event-stream" in accept
        and length.isdigit()
        and int(length) <= MAX_BODY_BYTES
    )


def _plain_call(message: Any) -> ResearchArguments | None:
    """The parsed arguments of a ``research`` call without wait, progress token or task."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, dict):
        return None
    arguments = params.get("arguments")
    meta = params.get("_meta")
    if (
        params.get("name") != TOOL_NAME
        or not isinstance(arguments, dict)
        or "task" in params
        or (meta is not None and (not isinstance(meta, dict) or "progressToken" in meta))
    ):
        return None
    try:
        parsed = parse_arguments(arguments)
    except FoundryError:
        return None  # the SDK's path answers the error
    if parsed.wait:  # a long poll: the SDK's path, which can report progress
        return None
    return parsed


async def _read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The request's messages as received, and its body (None past ``MAX_BODY_BYTES`` or when
    the client went away)."""
    received: list[Message] = []
    body = b""
    while True:
        message = await receive()
        received.append(message)
        if message["type"] != "http.request":
            return received, None
        body += message.get("body", b"")
        if len(body) > MAX_BODY_BYTES:
            return received, None
        if not message.get("more_body", False):
            return received, body


def _replaying(received: list[Message], receive: Receive) -> Receive:
    """``receive`` that first gives back the messages already read."""
    pending = list(received)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


async def _send_accepted(send: Send) -> None:
    """202 Accepted without a body: what the transport answers a notification."""
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _send_json(send: Send, payload: dict[str, Any]) -> None:
    await _send_body(send, json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())


async def _send_body(send: Send, body: bytes) -> None:
    """200 with a JSON ``body``."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
