"""The load clients of ``benchmarks/team/load.py``, speaking MCP's streamable HTTP directly.

A hundred of the SDK's clients in the benchmark's process cost it 1.8 ms of CPU per status call
(its session, JSON-RPC layer and models): about a third of a core at 200 polls a second, taken
from the two cores the workers run on, and so measured as the workers' latency. A user's client
pays that on the user's machine, not the server's. ``RawClient`` sends the requests the SDK's
client sends, byte for byte in what matters to the server (the same method, path, headers and
JSON-RPC bodies: ``initialize``, ``notifications/initialized``, then ``tools/call`` of
``research`` with the negotiated ``mcp-protocol-version``), and reads the answer as JSON or as
an event stream, whichever the server chose. The status probe, whose figure is the acceptance
figure, stays the SDK's client in a process of its own (``benchmarks/team/status_probe.py``);
``--sdk-clients`` makes the load clients the SDK's again.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2

PROTOCOL_VERSION = "2025-11-25"  # what the SDK's client asks for
CLIENT_INFO = {"name": "mcp", "version": "0.1.0"}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class RawCallFailed(Exception):
    """The server answered with an HTTP or JSON-RPC error."""


class RawClient:
    """One client session over ``http``: the handshake, then calls of the research tool."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self._http = http
        self._url = url
        self._ids = itertools.count(1)
        self._version: str | None = None

    async def open(self) -> None:
        """``initialize`` and ``notifications/initialized``, as the SDK's client opens."""
        result = await self._request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        self._version = str(result.get("protocolVersion") or PROTOCOL_VERSION)
        notice = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        response = await self._http.post(self._url, content=_dumps(notice), headers=self._headers())
        if response.status_code != 202:
            raise RawCallFailed(f"initialized: HTTP {response.status_code}")

    async def call_research(self, **arguments: Any) -> dict[str, Any]:
        """The research tool's envelope (its structured content)."""
        result = await self._request("tools/call", {"name": "research", "arguments": arguments})
        envelope = result.get("structuredContent")
        if not isinstance(envelope, dict):
            raise RawCallFailed(f"no structured content: {str(result)[:200]}")
        return envelope

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        response = await self._http.post(self._url, content=_dumps(body), headers=self._headers())
        if response.status_code != 200:
            raise RawCallFailed(f"{method}: HTTP {response.status_code}: {response.text[:200]}")
        answer = _answer(response, request_id)
        if "error" in answer:
            raise RawCallFailed(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer["result"]
        return result

    def _headers(self) -> dict[str, str]:
        if self._version is None:
            return HEADERS
        return {**HEADERS, "mcp-protocol-version": self._version}


def _dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


def _answer(response: httpx2.Response, request_id: int) -> dict[str, Any]:
    """The JSON-RPC answer to ``request_id``: the body, or the event of the stream carrying it."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if isinstance(message, dict) and message.get("id") == request_id:
                    return message
        raise RawCallFailed(f"no answer to request {request_id} in the event stream")
    message = response.json()
    if not isinstance(message, dict) or message.get("id") != request_id:
        raise RawCallFailed(f"not the answer to request {request_id}: {response.text[:200]}")
    return message


@asynccontextmanager
async def raw_client(
    url: str, token: str, *, transport: httpx2.AsyncBaseTransport
) -> AsyncIterator[RawClient]:
    """An open ``RawClient`` sending ``token`` as a bearer token through ``transport``."""
    http = httpx2.AsyncClient(
        transport=transport,
        headers={"authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30, read=120),
        trust_env=False,
    )
    async with http:
        client = RawClient(http, url)
        with anyio.fail_after(30):
            await client.open()
        yield client
