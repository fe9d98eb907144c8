"""Serving MCP over stdio until the client leaves or a signal asks the server to stop.

Either way, running research is saved as ``interrupted`` and its lease released before the
process exits, so the next server (or ``auto_resume``) takes it up without waiting:

- **The client closes stdin.** The session ends and the server's lifespan closes the research
  runtime, which interrupts and saves every run.
- **SIGTERM, SIGINT or SIGHUP.** The session is cancelled, which runs the same lifespan exit.
  Once the runs are saved (or after ``STOP_GRACE_SECONDS`` at most) the process exits at once
  with ``128 + signal``, as a process killed by that signal would (the SDK's transport, used
  when stdin is not a pipe, reads it in a worker thread that cannot be cancelled).

**Pipes read and written by the event loop.** The SDK's stdio transport reads stdin and writes
stdout through file objects wrapped for anyio: each line read, and each answer written (a write,
then a flush), is a trip through a worker thread, and on a busy machine each trip can wait for
the GIL up to its switch interval (5 ms). Four research starts sent at once had their handlers
done within 18-24 ms and their answers at the client after 29-60 ms. An MCP client starts its
server with pipes: then :func:`stdio_pipes` gives the SDK's transport a reader and a writer
driven by the event loop (asyncio's pipe transports), with no thread between an answer and the
wire. Anything else (a terminal, a file) keeps the SDK's own way.

As the SDK does, the wire moves to private descriptors while serving: fd 0 then reads the null
device and fd 1 writes to stderr, so a stray print, a library or a child process can never write
into the protocol or read a client's message. On exit both are restored and the pipes set back
to blocking, as they were.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import TYPE_CHECKING, Any, Self, cast

import anyio

if TYPE_CHECKING:  # the SDK is imported by whoever builds the server
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 1.8  # the promise is "saved within 2 s of the signal"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) if sys.platform != "win32" else ()
# The longest message read; a longer line is dropped with a warning (the SDK reads any length).
LINE_LIMIT = 64 * 1024 * 1024


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
            await _serve(server)
        task_group.cancel_scope.cancel()  # stdin closed: stop watching for signals
    return 0


async def _serve(server: MCPServer[Any]) -> None:
    """Serve the session over the standard pipes, or the SDK's way when they are not pipes."""
    from mcp.server.stdio import stdio_server

    async with stdio_pipes() as pipes:
        if pipes is None:
            await server.run_stdio_async()
            return
        lines, answers = pipes
        # The SDK's transport over the loop's own reader and writer (it iterates the one and
        # awaits ``write`` and ``flush`` on the other, as on its file wrappers).
        async with stdio_server(cast(Any, lines), cast(Any, answers)) as (received, to_send):
            lowlevel = server._lowlevel_server
            await lowlevel.run(received, to_send, lowlevel.create_initialization_options())


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


class PipeLines:
    """The lines of the client's messages, as the SDK's transport iterates stdin."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self._reader.readline()
            except ValueError:  # over LINE_LIMIT: dropped (the rest reads as one bad message)
                log.warning("a message over %d bytes from the client was dropped", LINE_LIMIT)
                continue
            if not line:
                raise StopAsyncIteration
            return line.decode("utf-8", errors="replace")


class PipeWriter:
    """The answers to the client, written as the SDK's transport writes stdout."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        """Queue ``text`` on the pipe (the loop writes it as the pipe takes it)."""
        if self._writer.is_closing():
            raise anyio.ClosedResourceError
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        """Wait while the pipe is full; a client that closed its end ends the writing."""
        try:
            await self._writer.drain()
        except ConnectionError as exc:  # a broken pipe or a reset
            raise anyio.ClosedResourceError from exc


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _private_copy(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


@contextmanager
def _wire_moved_aside() -> Iterator[tuple[int, int]]:
    """Private descriptors of the wire (stdin's, stdout's) while fd 0 reads the null device and
    fd 1 writes to stderr; the standard descriptors are restored on exit."""
    kept_in, kept_out = _private_copy(0), _private_copy(1)
    wire_in, wire_out = _private_copy(0), _private_copy(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        for kept, fd in ((kept_in, 0), (kept_out, 1)):
            with suppress(OSError):
                os.set_blocking(kept, True)  # the pipe's mode is shared with whoever else has it
                os.dup2(kept, fd)
            os.close(kept)


@asynccontextmanager
async def stdio_pipes() -> AsyncIterator[tuple[PipeLines, PipeWriter] | None]:
    """The client's messages and a writer of the answers, over the standard pipes; ``None``
    when stdin or stdout is not a pipe (or on Windows): then use the SDK's transport."""
    if sys.platform == "win32" or not (_is_pipe(0) and _is_pipe(1)):
        yield None
        return
    loop = asyncio.get_running_loop()
    with _wire_moved_aside() as (wire_in, wire_out):
        # The pipe transports own (and close) these file objects, and so the wire's descriptors.
        wire_reader, wire_writer = os.fdopen(wire_in, "rb", 0), os.fdopen(wire_out, "wb", 0)
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        try:
            read_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), wire_reader
            )
            write_transport, write_protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, wire_writer
            )
        except BaseException:
            wire_reader.close()
            wire_writer.close()
            raise
        writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
        try:
            yield PipeLines(reader), PipeWriter(writer)
        finally:
            read_transport.close()
            write_transport.close()
