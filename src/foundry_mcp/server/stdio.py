"""Serving MCP over stdio until the client leaves or a signal asks the server to stop.

Either way, running research is saved as ``interrupted`` and its lease released before the
process exits, so the next server (or ``auto_resume``) takes it up without waiting:

- **The client closes stdin.** The session ends and the server's lifespan closes the research
  runtime, which interrupts and saves every run.
- **SIGTERM, SIGINT or SIGHUP.** The session is cancelled, which runs the same lifespan exit.
  The stdio transport reads stdin in a worker thread that cannot be cancelled, so once the runs
  are saved (or after ``STOP_GRACE_SECONDS`` at most) the process exits at once with
  ``128 + signal``, as a process killed by that signal would.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 1.8  # the promise is "saved within 2 s of the signal"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) if sys.platform != "win32" else ()


async def serve_stdio(build: Callable[[Callable[[], None]], MCPServer[Any]]) -> int:
    """Serve until stdin closes (returns 0) or a stop signal arrives (exits the process).

    ``build(on_stopped)`` makes the server; its lifespan calls ``on_stopped`` once the research
    runtime is closed and every run is saved.
    """
    stopped = anyio.Event()
    server = build(stopped.set)
    if not STOP_SIGNALS:  # Windows: no signal receiver; closing stdin is the way to stop
        await server.run_stdio_async()
        return 0
    async with anyio.create_task_group() as task_group:
        serving = anyio.CancelScope()
        task_group.start_soon(_stop_on_signal, serving, stopped)
        with serving:
            await server.run_stdio_async()
        task_group.cancel_scope.cancel()  # stdin closed: stop watching for signals
    return 0


async def _stop_on_signal(serving: anyio.CancelScope, stopped: anyio.Event) -> None:
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            name = signal.Signals(signum).name
            log.warning("%s received: saving running research, then stopping", name)
            serving.cancel()
            with anyio.move_on_after(STOP_GRACE_SECONDS):
                await stopped.wait()
            if not stopped.is_set():
                log.error(
                    "running research could not be saved within %.1f s; the next server "
                    "will find it interrupted",
                    STOP_GRACE_SECONDS,
                )
            logging.shutdown()
            os._exit(128 + signum)  # the stdin reader thread would otherwise hold the exit
