"""One connection to one configured MCP server, kept for the process.

Started when first needed (the command over stdio, or the URL over Streamable HTTP), kept open
for every later call, and started again after the server crashed or the connection broke. Every
start (``start_timeout_s``) and every call (``timeout_s``) has a timeout; a server that fails or
hangs raises :class:`McpSourceError` with what went wrong and the fix, never hangs its caller.

Each start is a new *generation*. A call that fails drops the connection only if it is still
the generation the call used: calls in flight when a server crashes all fail, and the first to
drop it starts the next generation, on which the others retry (one restart, not one each). A
command that is not there is a permanent failure: said at once, never retried.

The SDK's client must be left in the task that entered it, so one task per connection holds it
open (in the task group :class:`McpSources` gives it) until the connection is closed.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from foundry_mcp.config.mcp_source_settings import McpSourceSettings
from foundry_mcp.errors import FoundryError

if TYPE_CHECKING:  # the SDK's client is imported when a source is first reached
    from mcp import Client
    from mcp.types import CallToolResult, Tool

log = logging.getLogger(__name__)

# The variables a stdio server inherits from ours, as MCP clients pass them (no API keys).
INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "SYSTEMROOT")


class McpSourceError(FoundryError):
    """An MCP source could not be reached, or did not answer in time.

    ``kind`` as :class:`ProviderError` has it: ``transient`` may pass (a crash, a timeout);
    ``not_found`` (a command that is not installed) and ``auth`` (headers refused) last until
    the user changes something.
    """

    error_code = "MCP_SOURCE_ERROR"

    def __init__(
        self,
        message: str,
        *,
        remediation: str | None = None,
        details: dict[str, Any] | None = None,
        kind: str = "transient",
    ) -> None:
        super().__init__(message, remediation=remediation, details=details)
        self.kind = kind

    @property
    def permanent(self) -> bool:
        """Whether trying again cannot help until the user changes something."""
        return self.kind != "transient"


class McpSourceConnection:
    """The connection to the server of one ``[mcp_sources.<name>]`` table."""

    def __init__(self, name: str, settings: McpSourceSettings, group: TaskGroup) -> None:
        self.name = name
        self.settings = settings
        self._group = group
        self._client: Client | None = None
        self._holding: anyio.CancelScope | None = None  # the task holding the client open
        self._lock = anyio.Lock()
        self._tools: list[Tool] | None = None
        self._generation = 0  # which start the current client belongs to
        self.starts = 0  # how many times the server was started, or tried to be
        self.calls: Counter[str] = Counter()  # tool calls sent, by tool (health, tests)
        self._refused: int | None = None  # the last HTTP error status the server answered

    async def tools(self) -> list[Tool]:
        """The server's tools (``tools/list``), asked once per connection."""
        if self._tools is None:
            client, generation = await self._connected()
            try:
                with anyio.fail_after(self.settings.timeout_s):
                    listed = await client.list_tools()
            except TimeoutError:
                await self._drop(generation)
                raise self._timed_out("list its tools") from None
            except Exception as exc:
                await self._drop(generation)
                raise self._failed("list its tools", exc) from None
            self._tools = list(listed.tools)
        return self._tools

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call ``tool``; when the server crashed under it, once more on its next start."""
        for attempt in (1, 2):
            client, generation = await self._connected()
            self.calls[tool] += 1
            try:
                with anyio.fail_after(self.settings.timeout_s):
                    return await client.call_tool(tool, arguments)
            except TimeoutError:
                await self._drop(generation)
                raise self._timed_out(f"answer {tool}") from None
            except Exception as exc:
                await self._drop(generation)
                if attempt == 2:
                    raise self._failed(f"answer {tool}", exc) from None
                log.info("MCP source %s failed (%s); calling it again", self.name, _said(exc))
        raise AssertionError("unreachable")

    async def close(self) -> None:
        """Close the connection (the stdio server is stopped)."""
        await self._drop()

    # ------------------------------------------------------------------ the holding task

    async def _connected(self) -> tuple[Client, int]:
        """The open client and its generation, starting the server when none is open."""
        async with self._lock:
            if self._client is not None:
                return self._client, self._generation
            self.starts += 1
            self._generation += 1
            self._check_command()
            ready = anyio.Event()
            holding = anyio.CancelScope()
            failure: list[BaseException] = []
            self._holding = holding
            self._group.start_soon(self._hold, ready, holding, failure)
            with anyio.move_on_after(self.settings.start_timeout_s):
                await ready.wait()
            if self._client is None:
                holding.cancel()  # a server that never answered is stopped
                command = self.settings.command
                if failure and command and isinstance(_first(failure[0]), FileNotFoundError):
                    raise self._missing(command[0])
                if failure:
                    raise self._failed("start", failure[0])
                raise self._timed_out("start", self.settings.start_timeout_s, "start_timeout_s")
            return self._client, self._generation

    async def _hold(
        self, ready: anyio.Event, holding: anyio.CancelScope, failure: list[BaseException]
    ) -> None:
        """Open the client, hand it over, and keep it open until ``holding`` is cancelled."""
        with holding:
            try:
                async with self._open() as client:
                    self._client = client
                    ready.set()
                    await anyio.sleep_forever()
            except Exception as exc:  # the server would not start, or the connection broke
                failure.append(exc)
                log.info("MCP source %s ended: %s", self.name, type(exc).__name__)
            finally:
                if self._holding is holding:
                    self._client = None
                    self._tools = None
                ready.set()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Client]:
        # Imported here: a command that never reaches a source (list, status) does not pay
        # for the SDK's client (about 0.3 s).
        import httpx2
        from mcp import Client, StdioServerParameters
        from mcp.client.streamable_http import streamable_http_client

        settings = self.settings
        if settings.transport == "stdio":
            env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
            params = StdioServerParameters(
                command=settings.command[0],
                args=settings.command[1:],
                env={**env, **settings.env},
                cwd=settings.cwd,
            )
            async with Client(params, mode="legacy") as client:
                yield client
            return
        headers = {key: value.get_secret_value() for key, value in settings.headers.items()}
        timeout = httpx2.Timeout(settings.timeout_s, read=settings.timeout_s * 2)
        self._refused = None

        async def note_refusal(response: httpx2.Response) -> None:
            if response.status_code >= 400:  # the SDK's error does not say which
                self._refused = response.status_code

        async with httpx2.AsyncClient(
            headers=headers,
            timeout=timeout,
            trust_env=False,
            event_hooks={"response": [note_refusal]},
        ) as http:
            transport = streamable_http_client(str(settings.url), http_client=http)
            async with Client(transport, mode="legacy") as client:
                yield client

    async def _drop(self, generation: int | None = None) -> None:
        """Close the connection; given the ``generation`` a failed call used, only that one
        (a newer one, started by a peer that saw the same failure, is kept)."""
        async with self._lock:
            if generation is not None and generation != self._generation:
                return
            if self._holding is not None:
                self._holding.cancel()
            self._holding = None
            self._client = None
            self._tools = None

    # ------------------------------------------------------------------ errors

    def _check_command(self) -> None:
        command = self.settings.command
        if command and shutil.which(command[0]) is None and not os.path.isfile(command[0]):
            raise self._missing(command[0])

    def _missing(self, what: str) -> McpSourceError:
        """The command (or its folder ``cwd``) is not there: nothing to retry until it is."""
        cwd = self.settings.cwd
        return McpSourceError(
            f"MCP source {self.name!r}: the command {what!r} was not found.",
            remediation=f"Install it, or give its full path in [mcp_sources.{self.name}] "
            "command" + (f" (and check that its cwd {cwd!r} exists)." if cwd else "."),
            details={"source": self.name},
            kind="not_found",
        )

    def _timed_out(
        self, doing: str, seconds: float | None = None, key: str = "timeout_s"
    ) -> McpSourceError:
        seconds = self.settings.timeout_s if seconds is None else seconds
        return McpSourceError(
            f"MCP source {self.name!r} did not {doing} within {seconds:g} s.",
            remediation=f"Check that the server works on its own; raise [mcp_sources.{self.name}]"
            f" {key} if it is only slow.",
            details={"source": self.name},
        )

    def _failed(self, doing: str, exc: BaseException) -> McpSourceError:
        if self._refused in (401, 403):
            return McpSourceError(
                f"MCP source {self.name!r} refused the connection (HTTP {self._refused}): "
                "its headers were not accepted.",
                remediation=f"Check the token in [mcp_sources.{self.name}] headers (e.g. "
                'Authorization = "Bearer ...").',
                details={"source": self.name},
                kind="auth",
            )
        answered = f" (HTTP {self._refused})" if self._refused else ""
        return McpSourceError(
            f"MCP source {self.name!r} could not {doing}: {_said(exc)}{answered}.",
            remediation=f"Check [mcp_sources.{self.name}] ({self._where()}) and that the server "
            "runs on its own.",
            details={"source": self.name},
        )

    def _where(self) -> str:
        return "command" if self.settings.transport == "stdio" else "url and headers"


def _first(exc: BaseException) -> BaseException:
    """A group's first exception (its own first, and so on); any other exception itself."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _said(exc: BaseException) -> str:
    """What an exception says (a group's first), on one line of at most 200 characters."""
    exc = _first(exc)
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
