"""A team server for tests: ``foundry-mcp serve --http`` as a subprocess, and MCP clients of it.

``TeamServer`` starts ``python -m foundry_mcp serve --http --port <free port>`` with a test
environment (``research_env`` plus tokens), waits until ``GET /health`` says the research
service is ready, keeps its stderr, and stops it with a signal. ``mcp_client`` is the SDK's
own client over streamable HTTP, sending a bearer token when given one.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx
import httpx2
from mcp import Client
from mcp.client.extension import ClientExtension
from mcp.client.streamable_http import streamable_http_client

START_TIMEOUT = 60.0  # a loaded machine can take most of it to warm a server up
STOP_TIMEOUT = 15.0
START_ATTEMPTS = 3  # a port found free can be taken before the server binds it
PORT_IN_USE = "Address already in use"


def free_port() -> int:
    """A loopback port free now, below the system's ephemeral range when it can be.

    A port the system hands out (``bind(0)``) is in the range its outgoing connections use,
    so another test's client could take it before the server binds it.
    """
    for _ in range(20):
        candidate = random.randrange(20000, _ephemeral_floor())
        if _binds(candidate):
            return candidate
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _ephemeral_floor() -> int:
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768
    return max(low, 20001)


def _binds(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def foundry_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "foundry_mcp", *args]


def server_env(env: dict[str, str]) -> dict[str, str]:
    """What a service manager would give the server: PATH (and PYTHONPATH), plus ``env``."""
    base = {key: os.environ[key] for key in ("PATH", "PYTHONPATH", "LANG") if key in os.environ}
    return {**base, **env}


class TeamServer:
    """``foundry-mcp serve --http`` on a free loopback port, until stopped.

    ``launcher`` is the program that runs foundry-mcp's command line, the arguments following
    it (default: ``python -m foundry_mcp``); ``benchmarks/team/load.py`` gives one that changes
    the host name first.
    """

    def __init__(
        self, env: dict[str, str], *args: str, launcher: Sequence[str] | None = None
    ) -> None:
        self._env = env
        self._args = args
        self._launcher = launcher
        self._attempts = 0
        # One client for the test's plain requests to this server (health checks, raw posts):
        # building one loads the CA bundle, about 30 ms of CPU, which a readiness check polled
        # every 50 ms would otherwise pay at each poll while the server starts beside it.
        self.http = httpx.Client(trust_env=False, timeout=30)
        self._launch()

    def _launch(self) -> None:
        self._attempts += 1
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base_url}/mcp"
        self._lines: list[str] = []
        serve = ["serve", "--http", "--port", str(self.port), *self._args]
        launcher = self._launcher
        self.process = subprocess.Popen(
            [*launcher, *serve] if launcher is not None else foundry_command(*serve),
            env=server_env(self._env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._lines.append(line.rstrip("\n"))

    @property
    def log(self) -> list[str]:
        """The server's stderr lines so far."""
        return list(self._lines)

    def health(self) -> httpx.Response:
        """``GET /health``, without a token."""
        return self.http.get(f"{self.base_url}/health", timeout=5)

    def wait_ready(self) -> None:
        """Wait for ``/health`` to say ready; a server that lost its port to another program
        is started again on another one."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._reader.join(2)
                if self._lost_its_port() and self._attempts < START_ATTEMPTS:
                    self._launch()
                    continue
                raise AssertionError(f"the server exited at start: {self.log}")
            try:
                if self.health().json().get("research_service") == "ready":
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"the server did not become ready: {self.log}")

    def _lost_its_port(self) -> bool:
        return any(PORT_IN_USE in line for line in self._lines)

    def stop(self, signum: int = signal.SIGTERM) -> int:
        """Send ``signum`` and wait for the exit; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            code = self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the server did not stop on {signum}: {self.log}") from None
        self._reader.join(2)
        return code

    def __enter__(self) -> Self:
        try:
            self.wait_ready()
        except BaseException:
            self.stop(signal.SIGKILL)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        self.http.close()


def add_to_config(env: dict[str, str], toml: str) -> None:
    """Append ``toml`` to the configuration file the server of ``env`` reads."""
    config = Path(env["FOUNDRY_MCP_CONFIG"])
    config.write_text(config.read_text() + "\n" + toml)


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


@asynccontextmanager
async def mcp_client(
    url: str,
    token: str | None = None,
    *,
    mode: str = "legacy",
    extensions: Sequence[ClientExtension] = (),
    transport: httpx2.AsyncBaseTransport | None = None,
    elicitation_callback: Any = None,
) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending ``token`` as a bearer token (through
    ``transport``, a balancer say, when given), answering forms with ``elicitation_callback``
    when given."""
    http = httpx2.AsyncClient(
        transport=transport,
        headers=bearer(token),
        timeout=httpx2.Timeout(30, read=120),
        trust_env=False,
    )
    async with http:
        transport = streamable_http_client(url, http_client=http)
        options: dict[str, Any] = {"mode": mode, "extensions": list(extensions)}
        if elicitation_callback is not None:
            options["elicitation_callback"] = elicitation_callback
        async with Client(transport, **options) as client:
            yield client
