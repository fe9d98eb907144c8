"""The handshake that opens a client's session, answered on a stateless team server without
building one (for :mod:`foundry_mcp.server.team.quick_answers`).

A client opens its session with an ``initialize`` request and a ``notifications/initialized``
notification. In stateless mode the SDK keeps no session, yet it builds a transport, a
dispatcher and a server session for each of the two, about 3.5 ms of CPU apiece: a team's
clients connecting at once (a worker restarted, everyone's editor reconnecting) cost a worker
more than their status polls. Neither answer depends on anything but the request:

* ``initialize``: the SDK's answer is the server's name, version, capabilities and
  instructions, and the protocol version it picked from the one asked. :class:`Handshake`
  lets the SDK answer the first ``initialize`` of each kind (its parameters, the client's name
  and version aside, which the answer does not depend on), keeps the result, and gives it
  again to the next ones, with their own request id.
* ``notifications/initialized``: the SDK accepts it (202) and forgets it with the session; so
  does this module.

Clients connect in crowds (a worker restarted, a team's editors reconnecting), so the requests
of one kind that come while the SDK is answering the first wait for that answer
(:meth:`Handshake.answer_soon`) rather than each building a session of its own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.types import Message, Send

INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"
MAX_KINDS = 32  # different initialize requests remembered; past that, the SDK answers them
FIRST_ANSWER_WAIT_SECONDS = 2.0  # longest wait for the SDK's answer to another of its kind


class Handshake:
    """The SDK's answers to ``initialize``, by the kind of request, given again."""

    def __init__(self) -> None:
        self._results: dict[str, dict[str, Any]] = {}
        self._answering: dict[str, anyio.Event] = {}  # kinds the SDK is answering now

    def answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON-RPC response to this ``initialize``, if one of its kind was answered."""
        result = self._results.get(_kind(message))
        if result is None:
            return None
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}

    async def answer_soon(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """``answer``, after waiting (a little) for the SDK's answer to another request of
        this kind when one is under way."""
        kind = _kind(message)
        answering = self._answering.get(kind)
        if kind not in self._results and answering is not None:
            with anyio.move_on_after(FIRST_ANSWER_WAIT_SECONDS):
                await answering.wait()
        return self.answer(message)

    @asynccontextmanager
    async def answering(self, message: dict[str, Any], send: Send) -> AsyncIterator[Send]:
        """``send`` that passes on the SDK's answer to ``message`` and keeps its result; the
        requests of its kind that come meanwhile wait for that answer (``answer_soon``) and
        stop waiting when the block ends, however it ends."""
        kind = _kind(message)
        first = kind not in self._answering
        if first:
            self._answering[kind] = anyio.Event()
        try:
            yield self._recording(message, send)
        finally:
            if first:
                self._answering.pop(kind).set()

    def _recording(self, message: dict[str, Any], send: Send) -> Send:
        """``send`` that passes on the SDK's answer to ``message`` and keeps its result."""
        kind = _kind(message)
        status = 0
        body = bytearray()

        async def send_and_keep(event: Message) -> None:
            nonlocal status
            if event["type"] == "http.response.start":
                status = event["status"]
            elif event["type"] == "http.response.body":
                body.extend(event.get("body", b""))
                if not event.get("more_body", False) and status == 200:
                    result = _result_in(bytes(body), message["id"])
                    if result is not None and len(self._results) < MAX_KINDS:
                        self._results[kind] = result
            await send(event)

        return send_and_keep


def is_initialize(message: Any) -> bool:
    """An ``initialize`` request whose parameters are an object."""
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == INITIALIZE
        and _request_id(message)
        and isinstance(message.get("params"), dict)
    )


def is_initialized(message: Any) -> bool:
    """The ``notifications/initialized`` notification (no id: nothing answers it)."""
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == INITIALIZED
        and "id" not in message
    )


def _request_id(message: dict[str, Any]) -> bool:
    request_id = message.get("id")
    return isinstance(request_id, str | int) and not isinstance(request_id, bool)


def _kind(message: dict[str, Any]) -> str:
    """The parameters that may change the answer: all of them but the client's name."""
    params = {key: value for key, value in message["params"].items() if key != "clientInfo"}
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def _result_in(body: bytes, request_id: str | int) -> dict[str, Any] | None:
    """The result answering ``request_id`` in a JSON body or an event stream; None if the
    answer is an error or cannot be read."""
    text = body.decode("utf-8", errors="replace")
    if text.lstrip().startswith("{"):
        candidates = [text]
    else:  # an event stream: one JSON-RPC message per data field
        candidates = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    for candidate in candidates:
        try:
            message = json.loads(candidate)
        except ValueError:
            continue
        if (
            isinstance(message, dict)
            and message.get("id") == request_id
            and isinstance(message.get("result"), dict)
        ):
            return dict(message["result"])
    return None
