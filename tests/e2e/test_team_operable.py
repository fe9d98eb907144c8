"""An operable team server (issue 31, item 5): ``/health`` tells whether the store answers;
``[server] stateless`` lets any worker answer any request behind a plain round-robin balancer,
the Tasks extension included; a clean stop with sessions open logs no error.

Each test starts ``foundry-mcp serve --http`` as a subprocess (two of them on one store for the
balancer), and speaks to it with the SDK's own client over streamable HTTP. The balancer is an
``httpx2`` transport that sends each request to the next worker in turn, as a round-robin
proxy without affinity does.
"""

from __future__ import annotations

import itertools
import json
import signal
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import call, run_to_end
from tests.e2e.teamserver import TeamServer, add_to_config, bearer, mcp_client
from tests.e2e.test_http_server import INITIALIZE
from tests.e2e.test_tasks import MODERN, TasksClient, task_request
from tests.fakes import FakeHTTPServer
from tests.postgres import PORT, PostgresServer

pytestmark = pytest.mark.anyio

ALICE = "alice-token-5c1e0d6a9b2f47e8"
QUESTION = "How does WAL mode work in SQLite?"
SESSION_HEADER = "mcp-session-id"


# --------------------------------------------------------------------------- a balancer


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each request to the next of ``ports`` in turn: a balancer without affinity. It
    records, per port, the JSON-RPC methods it sent there and the session ids answered."""

    def __init__(self, ports: Sequence[int]) -> None:
        self._ports = itertools.cycle(ports)
        self._inner = httpx2.AsyncHTTPTransport()
        self.methods: dict[int, list[str]] = {port: [] for port in ports}
        self.session_ids: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = next(self._ports)
        request.url = request.url.copy_with(port=port)
        method = request.method
        if request.method == "POST":
            with suppress(ValueError):
                method = json.loads(request.content).get("method") or "response"
        self.methods[port].append(method)
        response = await self._inner.handle_async_request(request)
        if SESSION_HEADER in response.headers:
            self.session_ids.append(response.headers[SESSION_HEADER])
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


@contextmanager
def two_workers(env: dict[str, str]) -> Iterator[tuple[TeamServer, TeamServer]]:
    with TeamServer(env) as first, TeamServer(env) as second:
        yield first, second


@pytest.fixture
def stateless_env(research_env: dict[str, str]) -> dict[str, str]:
    add_to_config(research_env, "[server]\nstateless = true\n")
    return {**research_env, "FOUNDRY_MCP_TOKENS": f"alice:{ALICE}"}


# --------------------------------------------------------------------------- stateless


async def test_any_worker_answers_any_request_in_stateless_mode(
    stateless_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    with two_workers(stateless_env) as (a, b):
        balancer = RoundRobin([a.port, b.port])
        async with mcp_client(a.url, ALICE, transport=balancer) as client:
            started = await call(client, action="deep-research", query=QUESTION, effort="quick")
            assert started["success"], started
            research_id = started["data"]["research_id"]
            final = await run_to_end(client, research_id)
            assert final["status"] == "completed", final
            report = await call(client, action="deep-research-report", research_id=research_id)
            assert report["success"] and "[1]" in report["data"]["report"], report
            listed = await call(client, action="deep-research-list")
            assert research_id in json.dumps(listed["data"])
    assert balancer.session_ids == []  # no session to pin a client to a worker
    # initialize went to one worker, and both answered tool calls.
    assert balancer.methods[a.port][0] == "initialize"
    for port in (a.port, b.port):
        assert "tools/call" in balancer.methods[port], balancer.methods
    for worker in (a, b):
        assert not [line for line in worker.log if "Traceback" in line or " ERROR " in line]


async def test_a_task_is_answered_by_whichever_worker_is_asked(
    stateless_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    with two_workers(stateless_env) as (a, b):
        balancer = RoundRobin([a.port, b.port])
        tasks = TasksClient()
        async with mcp_client(
            a.url, ALICE, mode=MODERN, extensions=[tasks], transport=balancer
        ) as client:
            result = await client.call_tool(
                "research", {"action": "deep-research", "query": QUESTION, "effort": "quick"}
            )
            envelope = result.structured_content
            assert envelope and envelope["success"] and envelope["data"]["report"], envelope
            task_id = tasks.handles[0].task_id
            # Asked again on each worker in turn, the task id is known to both.
            for _ in range(2):
                again = await task_request(client.session, "tasks/get", task_id)
                assert again["status"] == "completed" and again["taskId"] == task_id
    gets = {port: methods.count("tasks/get") for port, methods in balancer.methods.items()}
    assert all(count >= 1 for count in gets.values()), balancer.methods
    assert (
        balancer.methods[a.port].count("tools/call") + balancer.methods[b.port].count("tools/call")
        == 1
    )


async def test_without_stateless_mode_a_session_lives_in_one_worker(
    research_env: dict[str, str],
) -> None:
    env = {**research_env, "FOUNDRY_MCP_TOKENS": f"alice:{ALICE}"}
    with two_workers(env) as (a, b):
        balancer = RoundRobin([a.port, b.port])
        with pytest.raises(Exception):  # noqa: B017 - the second worker knows no such session
            async with mcp_client(a.url, ALICE, transport=balancer) as client:
                for _ in range(3):
                    await call(client, action="deep-research-list")
        assert balancer.session_ids  # a session was made, by the first worker only


# --------------------------------------------------------------------------- health


class SocketRelay:
    """A unix socket that relays to PostgreSQL's: the store's address, which the test can take
    away (a database out of reach) and give back."""

    def __init__(self, target: Path, folder: Path) -> None:
        self._target = str(target / f".s.PGSQL.{PORT}")
        self.folder = folder
        self._path = folder / f".s.PGSQL.{PORT}"
        self._listener: socket.socket | None = None
        self._pipes: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        self._path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self._path))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """Refuse new connections and cut the open ones."""
        if self._listener is not None:
            with suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        self._path.unlink(missing_ok=True)
        with self._lock:
            for pipe in self._pipes:
                with suppress(OSError):
                    pipe.shutdown(socket.SHUT_RDWR)
                pipe.close()
            self._pipes.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self._target)
            with self._lock:
                self._pipes += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    with suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _health(server: TeamServer) -> httpx.Response:
    return server.health()


def _wait_health(server: TeamServer, code: int, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    seen: list[Any] = []
    while time.monotonic() < deadline:
        answer = _health(server)
        seen.append((answer.status_code, answer.json()))
        if answer.status_code == code:
            body: dict[str, Any] = answer.json()
            return body
        time.sleep(0.5)
    raise AssertionError(f"/health never answered {code}: {seen[-3:]} {server.log[-10:]}")


def test_health_says_unavailable_while_the_store_is_out_of_reach(
    research_env: dict[str, str],
    postgres_server: PostgresServer,
    postgres_url: str,
    tmp_path: Path,
) -> None:
    relay_dir = tmp_path / "relay"
    relay_dir.mkdir()
    relay = SocketRelay(postgres_server.socket_dir, relay_dir)
    relay.start()
    url = postgres_url.replace(
        str(postgres_server.socket_dir).replace("/", "%2F"), str(relay_dir).replace("/", "%2F")
    )
    assert url != postgres_url
    env = {**research_env, "FOUNDRY_MCP_STORE_URL": url}
    try:
        with TeamServer(env) as server:
            body = _wait_health(server, 200)
            assert body["status"] == "ok" and body["store"] == "ok", body
            assert body["research_service"] == "ready"
            relay.stop()
            down = _wait_health(server, 503)
            assert down["status"] == "unavailable" and down["store"] == "unavailable", down
            assert down["research_service"] == "unavailable"
            assert "cannot be reached" in down["store_error"], down
            relay.start()
            back = _wait_health(server, 200)
            assert back["store"] == "ok", back
    finally:
        relay.stop()


def test_health_answers_every_probe_of_a_load_balancer(research_env: dict[str, str]) -> None:
    """Fifty probes in a row all answer (that they cost one statement between them, not one
    each, is ``tests/unit/test_health_store.py``)."""
    with TeamServer(research_env) as server:
        answers = [server.health() for _ in range(50)]
    assert all(a.status_code == 200 and a.json()["store"] == "ok" for a in answers)


# --------------------------------------------------------------------------- stopping


async def _open_get_stream(url: str, opened_streams: list[int]) -> None:
    """Open a session by hand and its standalone GET event stream, and keep it open."""
    headers = {"Accept": "application/json, text/event-stream", **bearer(ALICE)}
    async with httpx2.AsyncClient(timeout=None, trust_env=False) as http:
        opened = await http.post(url, headers=headers, json=INITIALIZE)
        session = opened.headers[SESSION_HEADER]
        headers = {**headers, SESSION_HEADER: session, "mcp-protocol-version": "2025-06-18"}
        await http.post(
            url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        async with http.stream("GET", url, headers=headers) as stream:
            opened_streams.append(stream.status_code)
            async for _ in stream.aiter_bytes():
                pass


@pytest.mark.parametrize("stateless", [False, True])
async def test_a_clean_stop_with_sessions_open_logs_no_error(
    research_env: dict[str, str], openai_server: FakeHTTPServer, stateless: bool
) -> None:
    if stateless:
        add_to_config(research_env, "[server]\nstateless = true\n")
    env = {**research_env, "FOUNDRY_MCP_TOKENS": f"alice:{ALICE}"}
    openai_server.latency = 1.0  # the research is still running at the signal
    server = TeamServer(env, "--log-format", "json")
    server.wait_ready()
    streams: list[int] = []
    try:
        async with anyio.create_task_group() as group:
            if not stateless:
                group.start_soon(_ignore_errors, _open_get_stream(server.url, streams))
            http = httpx2.AsyncClient(
                headers=bearer(ALICE), timeout=httpx2.Timeout(30, read=120), trust_env=False
            )
            async with http:
                transport = streamable_http_client(server.url, http_client=http)
                async with Client(transport, mode="legacy") as client:
                    started = await call(client, action="deep-research", query=QUESTION)
                    research_id = started["data"]["research_id"]

                    async def wait_long() -> None:
                        await call(
                            client,
                            action="deep-research-status",
                            research_id=research_id,
                            wait=True,
                            wait_timeout=60,
                        )

                    group.start_soon(_ignore_errors, wait_long())
                    await anyio.sleep(1.0)  # the waiting call and the stream are open
                    code = await anyio.to_thread.run_sync(server.stop, signal.SIGTERM)
                    group.cancel_scope.cancel()
    finally:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)
    assert code in (-signal.SIGTERM, 128 + signal.SIGTERM), server.log
    assert streams == ([] if stateless else [200])  # the GET stream was open at the signal
    lines = [json.loads(line) for line in server.log if line.startswith("{")]
    assert len(lines) == len(server.log), server.log  # nothing but JSON lines: no traceback
    bad = [line for line in lines if line["level"] in ("ERROR", "CRITICAL")]
    assert bad == [], [f"{line['logger']}: {line['message']}" for line in lines]
    assert not any("Traceback" in json.dumps(line) for line in lines), lines
    assert any("running research saved" in line["message"] for line in lines), lines


async def _ignore_errors(awaitable: Any) -> None:
    with suppress(Exception):
        await awaitable


# --------------------------------------------------------------------------- LLM calls in flight


def test_a_team_server_lets_more_llm_calls_fly_per_provider(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    from foundry_mcp.config import load_settings
    from foundry_mcp.providers.policy import DEFAULT_MAX_IN_FLIGHT
    from foundry_mcp.providers.resilience import ResilienceRegistry

    add_to_config(research_env, '[providers.claude]\ntype = "claude-cli"\n')
    settings = load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))
    team = settings.model_copy(update={"server": settings.server.as_team_server()})
    local, served = ResilienceRegistry(settings), ResilienceRegistry(team)
    assert local.policy("openai", "llm").settings.max_in_flight == DEFAULT_MAX_IN_FLIGHT
    assert served.policy("openai", "llm").settings.max_in_flight == 32
    assert served.policy("tavily", "search").settings.max_in_flight == DEFAULT_MAX_IN_FLIGHT
    assert served.policy("claude", "llm").settings.max_in_flight == 2  # one subscription
    add_to_config(research_env, "[server]\nllm_max_in_flight = 12\n")
    fewer = load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))
    fewer = fewer.model_copy(update={"server": fewer.server.as_team_server()})
    assert ResilienceRegistry(fewer).policy("openai", "llm").settings.max_in_flight == 12
