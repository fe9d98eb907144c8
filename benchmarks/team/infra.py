"""The team around ``benchmarks/team/load.py``'s workers: a round-robin balancer in front of
them, and a throwaway PostgreSQL that can be stopped and started again mid-run.

``Balancer`` is what a plain round-robin proxy without affinity does, on the client's side:
every HTTP request goes to the next worker in turn. A worker that refuses the connection (it
is gone) is passed over for ``DOWN_SECONDS`` and the request goes to the next one, as a proxy
does with a backend that fails to connect (nginx's ``proxy_next_upstream error``); a request
that broke after it reached a worker is not sent again (it may not be idempotent), its client
sees the failure. Each client has its own connections (``BalancedTransport``), which remember
the worker that answered its last request.

``RestartablePostgres`` stops the throwaway server of ``tests/postgres.py`` (a fast shutdown:
its sessions end, as in a restart by the service manager) and starts it again on the same
data folder and socket, with the command line the running server recorded
(``postmaster.opts``). The server it starts dies with this process too (``setpriv
--pdeathsig``, tied to the thread that starts it: the event loop's, the main one).

``research_call`` is how every client of the benchmark calls the research tool.
"""

from __future__ import annotations

import functools
import os
import shlex
import signal
import ssl
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult

from benchmarks.team.raw import RawClient
from tests.e2e.teamserver import mcp_client
from tests.postgres import PostgresServer, _command, _server_user

DOWN_SECONDS = 5.0  # a worker that refused a connection is passed over this long
CALL_TIMEOUT = 30.0  # a status call that takes longer counts as failed
READY_TIMEOUT = 60.0


@dataclass
class Balancer:
    """Round robin over the workers' ports, shared by every client."""

    ports: dict[str, int]  # worker name -> port, in turn order
    down_until: dict[str, float] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)  # requests sent to each worker
    refused: dict[str, int] = field(default_factory=dict)  # connections refused, by worker
    _turn: int = 0

    def pick(self, tried: set[str]) -> str | None:
        """The next worker in turn not tried yet for this request, preferring those not
        marked down; None when every one was tried."""
        names = list(self.ports)
        now = time.monotonic()
        candidates = []
        for step in range(len(names)):
            name = names[(self._turn + step) % len(names)]
            if name not in tried:
                candidates.append(name)
        if not candidates:
            return None
        up = [n for n in candidates if self.down_until.get(n, 0.0) <= now]
        chosen = (up or candidates)[0]
        self._turn = (names.index(chosen) + 1) % len(names)
        return chosen

    def refuse(self, name: str) -> None:
        self.down_until[name] = time.monotonic() + DOWN_SECONDS
        self.refused[name] = self.refused.get(name, 0) + 1


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


class BalancedTransport(httpx2.AsyncBaseTransport):
    """One client's connections, each request sent where ``balancer`` says."""

    def __init__(self, balancer: Balancer) -> None:
        self.balancer = balancer
        self.last: str | None = None  # the worker the last request went to
        # One TLS context for every client: building one costs 25 ms of CPU, and a hundred
        # clients opening their sessions at once would stall this process's loop (and so
        # every latency it measures) for seconds. The workers speak plain HTTP anyway.
        self._inner = httpx2.AsyncHTTPTransport(verify=_tls_context())

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        tried: set[str] = set()
        while True:
            name = self.balancer.pick(tried)
            if name is None:
                raise httpx2.ConnectError("every worker refused the connection", request=request)
            tried.add(name)
            self.last = name
            request.url = request.url.copy_with(port=self.balancer.ports[name])
            self.balancer.sent[name] = self.balancer.sent.get(name, 0) + 1
            try:
                return await self._inner.handle_async_request(request)
            except httpx2.ConnectError:
                self.balancer.refuse(name)

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def balanced_client(
    balancer: Balancer, url: str, token: str
) -> AsyncIterator[tuple[Client, BalancedTransport]]:
    """The SDK's client over streamable HTTP through ``balancer`` (``url``'s port is replaced
    on every request), and its transport."""
    transport = BalancedTransport(balancer)
    async with mcp_client(url, token, transport=transport) as client:
        yield client, transport


class RestartablePostgres:
    """The throwaway server of ``tests/postgres.py``, stopped and started again on demand."""

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self.data = server.socket_dir / "data"
        # What the running server was started with: postgres, its data folder, its settings.
        self.argv = shlex.split((self.data / "postmaster.opts").read_text())
        self.process: subprocess.Popen[bytes] | None = None  # the one started here

    def _pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> float:
        """Fast shutdown (SIGINT: sessions end, no checkpoint wait); the seconds it took."""
        began = time.monotonic()
        pid = self._pid()
        if pid is None:
            raise RuntimeError("PostgreSQL is not running (no postmaster.pid)")
        os.kill(pid, signal.SIGINT)
        while (self.data / "postmaster.pid").exists():  # removed once the server is down
            if time.monotonic() - began > READY_TIMEOUT:
                raise RuntimeError("PostgreSQL did not stop")
            time.sleep(0.02)
        if self.process is not None:
            self.process.wait(10)
        return time.monotonic() - began

    def start(self) -> None:
        """Start the server again; call from the thread that lives as long as it (the main
        one): it dies with that thread."""
        log = (self.server.socket_dir / "server.log").open("ab")
        self.process = subprocess.Popen(
            _command(_server_user(), self.argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            process_group=0,
        )
        log.close()

    def wait_ready(self) -> float:
        """Wait until the database accepts connections; the seconds it took."""
        import psycopg

        began = time.monotonic()
        while True:
            if self.process is not None and self.process.poll() is not None:
                tail = Path(self.server.socket_dir / "server.log").read_text(errors="replace")
                raise RuntimeError(f"PostgreSQL exited at restart: {tail[-1500:]}")
            try:
                psycopg.connect(self.server.url(), connect_timeout=2).close()
                return time.monotonic() - began
            except psycopg.OperationalError:
                if time.monotonic() - began > READY_TIMEOUT:
                    raise RuntimeError("PostgreSQL did not start again") from None
                time.sleep(0.05)

    def close(self) -> None:
        """Stop the server started here, if any (``running_postgres`` removes the folder)."""
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(15)


class CallFailed(Exception):
    """A status call that answered an error envelope."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


async def research_call(client: Client | RawClient, **arguments: Any) -> dict[str, Any]:
    """Call the research tool; its envelope (a ``RawClient`` sends the same request itself).

    The request goes through the session's ``send_request``, not ``call_tool``: ``call_tool``
    also validates the result against the tool's output schema, and compiles that schema once
    per session (about 0.5 s of CPU). A hundred clients in one Python process would then
    measure their own contention for the interpreter, not the server; a real client pays that
    on its own machine.
    """
    if isinstance(client, RawClient):
        with anyio.fail_after(CALL_TIMEOUT):
            return await client.call_research(**arguments)
    request = CallToolRequest(params=CallToolRequestParams(name="research", arguments=arguments))
    with anyio.fail_after(CALL_TIMEOUT):
        result = await client.session.send_request(request, CallToolResult)
    envelope = result.structured_content
    if envelope is None:
        raise CallFailed(f"no structured content: {result.content!r:.200}")
    return dict(envelope)
