"""Helpers for driving foundry-mcp through a real MCP client session, and fixtures that let
tests share what they only read, so that fewer processes are started: fake providers
(``shared_openai``, ``shared_tavily``), an environment and store per module
(``module_research_env``) and one server over stdio per test worker (``editor``). A test that
changes what it shares, or asserts on all of it (every request, every research listed), keeps
its own."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timedelta, tzinfo
from functools import partial
from typing import Any, cast

import anyio
import anyio.to_thread
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters

from foundry_mcp.research.models import base as model_base
from foundry_mcp.server.envelope import compact_text
from tests.fakes import FakeHTTPServer, RecordedRequest, ResearchBrain, fake_openai, fake_tavily
from tests.research_env import research_environment

TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted", "waiting"}


async def call(client: Client, **arguments: Any) -> dict[str, Any]:
    """Call the research tool and return its envelope (checked to match the text content)."""
    result = await client.call_tool("research", arguments)
    envelope = result.structured_content
    assert envelope is not None, result
    text = result.content[0].text  # type: ignore[union-attr]
    assert text == compact_text(envelope)  # the same JSON, compact: one line, no nulls
    assert result.is_error == (not envelope["success"])
    return envelope


async def run_to_end(client: Client, research_id: str, timeout: float = 60) -> dict[str, Any]:
    """Long-poll status until the research ends."""
    with anyio.fail_after(timeout):
        while True:
            envelope = await call(
                client,
                action="deep-research-status",
                research_id=research_id,
                wait=True,
                wait_timeout=2,
            )
            assert envelope["success"], envelope
            if envelope["data"]["status"] in TERMINAL:
                return envelope["data"]


class MovedClock(datetime):
    """The research's clock (``utcnow``), ``ahead`` of the real one."""

    ahead = timedelta()

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        return datetime.now(tz) + cls.ahead


@pytest.fixture
def research_clock(monkeypatch: pytest.MonkeyPatch) -> type[MovedClock]:
    """The research's clock for this test: move it on with ``research_clock.ahead += ...``."""

    class Clock(MovedClock):
        ahead = timedelta()

    monkeypatch.setattr(model_base, "datetime", Clock)
    return Clock


def editor_stdio(env: dict[str, str], elicitation_callback: Any = None) -> Client:
    """A client of ``python -m foundry_mcp`` over stdio, started as an editor starts it: only a
    few variables of the shell, plus the config's env block (``env``)."""
    base = {key: os.environ[key] for key in ("PATH", "LANG", "SYSTEMROOT") if key in os.environ}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "foundry_mcp"], env={**base, **env}
    )
    return Client(params, mode="legacy", elicitation_callback=elicitation_callback)


@pytest.fixture(scope="session")
def shared_openai() -> Iterator[FakeHTTPServer]:
    """A fake OpenAI server (a brain without overrides) for the tests that share a store or a
    server; read what one test sent through :class:`Since`."""
    with fake_openai(ResearchBrain()) as server:
        yield server


@pytest.fixture(scope="session")
def shared_tavily() -> Iterator[FakeHTTPServer]:
    """A fake Tavily server with the default corpus, shared as ``shared_openai`` is."""
    with fake_tavily() as server:
        yield server


@pytest.fixture(scope="module")
def module_research_env(
    tmp_path_factory: pytest.TempPathFactory,
    shared_openai: FakeHTTPServer,
    shared_tavily: FakeHTTPServer,
) -> dict[str, str]:
    """``research_env`` shared by the tests of one module: one store, one home, one config."""
    return research_environment(tmp_path_factory.mktemp("module"), shared_openai, shared_tavily)


@pytest.fixture(scope="session")
def editor_env(
    tmp_path_factory: pytest.TempPathFactory,
    shared_openai: FakeHTTPServer,
    shared_tavily: FakeHTTPServer,
) -> dict[str, str]:
    """The environment (and so the store) of the ``editor`` server."""
    return research_environment(tmp_path_factory.mktemp("editor"), shared_openai, shared_tavily)


class ClientElsewhere:
    """An MCP client whose session runs in the event loop of another thread (``portal``),
    called from the loop of any test: a server shared by many tests outlives each test's loop,
    and no test's loop outlives its test."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self._portal = portal
        self._client = client

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        """The client's method ``name``, awaited here while it runs over there."""
        method = getattr(self._client, name)

        async def elsewhere(*args: Any, **kwargs: Any) -> Any:
            bound = partial(method, *args, **kwargs)
            return await anyio.to_thread.run_sync(self._portal.call, bound)

        return elsewhere


@pytest.fixture(scope="session")
def editor(editor_env: dict[str, str]) -> Iterator[Client]:
    """One server over stdio, as an editor keeps one open for many researches, for the tests
    whose assertions hold whatever else that server did before (each reads only its own
    research, or what every server answers alike)."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(editor_stdio(editor_env)) as client,
    ):
        yield cast(Client, ClientElsewhere(portal, client))


class Since:
    """The requests a shared fake received from now on: what one test of a module sent. Given
    where a ``FakeHTTPServer`` is read (``requests_to``), it answers for this test alone."""

    def __init__(self, server: FakeHTTPServer) -> None:
        self.server = server
        self.mark = len(server.requests)

    @property
    def requests(self) -> list[RecordedRequest]:
        """The requests received since this object was made, in order."""
        return self.server.requests[self.mark :]

    def requests_to(self, path: str, method: str | None = None) -> list[RecordedRequest]:
        """Those of :attr:`requests` to ``path`` (and ``method``, when given)."""
        return [
            request
            for request in self.requests
            if request.path == path and (method is None or request.method == method.upper())
        ]
