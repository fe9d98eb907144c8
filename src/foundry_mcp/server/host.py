"""The research service of the server's lifespan (a stdio session's; over HTTP, the whole
app's, shared by every session), opened beside the handshake instead of before it.

Answering ``initialize`` needs none of the research code, while importing it (pydantic models,
agents, store) takes a few hundred milliseconds. So the session's lifespan hands the SDK a
``ServiceHost`` at once and opens the service in the background: settings are loaded and the
research stack imported in a worker thread, then :func:`foundry_mcp.runtime.research_runtime`
opens the store and starts warming the providers. A tool call that arrives earlier waits for
the service (or for the reason it could not start).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Literal

import anyio

from foundry_mcp.errors import FoundryError

if TYPE_CHECKING:
    from foundry_mcp.config import Settings
    from foundry_mcp.research.service.research_service import ResearchService

log = logging.getLogger(__name__)

STARTUP_FAILED = "foundry-mcp could not start its research service; see the server log."

Runtime = Callable[["Settings"], AbstractAsyncContextManager["ResearchService"]]


class ServiceHost:
    """The session's research service once it is open, or the reason it could not open."""

    def __init__(self) -> None:
        self._service: ResearchService | None = None
        self._error: FoundryError | None = None
        self._settled = anyio.Event()
        self._closing = anyio.Event()

    @property
    def readiness(self) -> Literal["starting", "ready", "failed"]:
        """Whether the service is still opening, open, or could not open."""
        if not self._settled.is_set():
            return "starting"
        return "ready" if self._service is not None else "failed"

    @property
    def current(self) -> ResearchService | None:
        """The service if it is open now, without waiting (``GET /health``)."""
        return self._service

    async def settled(self) -> FoundryError | None:
        """Wait until the service is open or could not open; the reason it could not."""
        await self._settled.wait()
        return self._error

    async def service(self) -> ResearchService:
        """The service, waiting for it to open; raises the ``FoundryError`` that stopped it."""
        await self._settled.wait()
        if self._service is None:
            assert self._error is not None
            raise self._error
        return self._service

    async def _run(self, settings_loader: Callable[[], Settings]) -> None:
        """Open the service, keep it open until the session ends, then close it."""
        try:
            settings, runtime = await anyio.to_thread.run_sync(
                _prepare, settings_loader, abandon_on_cancel=True
            )
        except FoundryError as exc:
            log.error("configuration error: %s", exc.message)
            self._fail(exc)
            return
        except Exception:
            log.exception("the research service could not be prepared")
            self._fail(FoundryError(STARTUP_FAILED))
            return
        if self._closing.is_set():
            return
        try:
            async with runtime(settings) as service:
                self._service = service
                self._settled.set()
                await self._closing.wait()
        except FoundryError as exc:  # e.g. research_dir not writable
            log.error("cannot start: %s", exc.message)
            self._fail(exc)
        except Exception:
            log.exception("the research service failed")
            self._fail(FoundryError(STARTUP_FAILED))

    def _fail(self, error: FoundryError) -> None:
        if not self._settled.is_set():
            self._error = error
            self._settled.set()


def _prepare(settings_loader: Callable[[], Settings]) -> tuple[Settings, Runtime]:
    """Load the settings and import the research stack (in a worker thread), and the models
    every call's answer is checked against (``server.results.data``), which the handshake
    does not need either."""
    settings = settings_loader()
    from foundry_mcp.runtime import research_runtime
    from foundry_mcp.server.results import data  # noqa: F401

    return settings, research_runtime


@asynccontextmanager
async def hosted_service(settings_loader: Callable[[], Settings]) -> AsyncIterator[ServiceHost]:
    """A ``ServiceHost`` at once; on exit, the service is closed (running research saved)."""
    host = ServiceHost()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(host._run, settings_loader)
        try:
            yield host
        finally:
            host._closing.set()
