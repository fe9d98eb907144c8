"""One call of an assistant's command-line program: a subprocess, its prompt on stdin, its output.

Each call starts the program afresh, in a process group of its own (``start_new_session``), in
the working directory it is given (the adapters give a private empty one). The prompt is
written to its stdin, which is then closed: a prompt never appears on a command line, where
other users of the machine could read it. stdout and stderr are read concurrently, each up to a
size cap. When the call times out or is cancelled (the research was cancelled, or the server is
stopping), the whole process group is sent SIGTERM, then SIGKILL after a short grace, and the
program is reaped: no child of the program is left behind either. Children that still hold its
output open after it exited are killed too, after a short grace.

At most ``max_in_flight`` calls of one provider run at once (default 2): each call is a whole
program with its own start-up, and the user's subscription has one usage window for all of them.
The timeout counts from the program's start, not from the wait for a slot.

The environment is passed through (the programs need ``HOME``, ``PATH`` and their own login
files), less what an adapter takes out and plus what it adds. Neither the prompt nor the environment is ever logged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from foundry_mcp.config.provider_settings import CLI_MAX_IN_FLIGHT
from foundry_mcp.providers.http.errors import timeout_error
from foundry_mcp.providers.llm.programs.errors import CLIProgram, oversized_output, spawn_error

log = logging.getLogger(__name__)

DEFAULT_MAX_IN_FLIGHT = CLI_MAX_IN_FLIGHT
STDOUT_CAP_BYTES = 16_000_000  # a long report is well under 1 MB of JSON
STDERR_CAP_BYTES = 256_000  # kept for error messages; the rest is read and dropped
KILL_GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL
OUTPUT_GRACE_SECONDS = 2.0  # output read after the program exits, if its children hold it open


@dataclass(frozen=True)
class CLIOutput:
    """What one run of a program printed, and how it ended."""

    stdout: str
    stderr: str
    exit_code: int
    elapsed_s: float


class CLIRunner:
    """Runs one provider's program, at most ``max_in_flight`` calls at once."""

    def __init__(
        self,
        provider: str,
        program: CLIProgram,
        command: str | None,
        timeout: float,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self.provider = provider
        self.program = program
        self.command = os.path.expanduser(command) if command else program.program
        self.timeout = timeout
        self._slots = anyio.Semaphore(max_in_flight)

    def executable(self) -> str:
        """The program's path: ``command`` as given if it names a file, else found on PATH."""
        found = shutil.which(self.command)
        if found is None:
            raise spawn_error(self.provider, self.program, self.command, FileNotFoundError())
        return found

    async def run(
        self,
        args: Sequence[str],
        stdin: str,
        *,
        cwd: Path,
        extra_env: Mapping[str, str] | None = None,
        unset_env: Sequence[str] = (),
    ) -> CLIOutput:
        """Run the program with ``args``, ``stdin`` as its input; raise ``ProviderError`` on
        a missing program, a timeout or an oversized output (an exit status is not checked)."""
        executable = self.executable()
        inherited = {k: v for k, v in os.environ.items() if k not in unset_env}
        env = {**inherited, **(extra_env or {})}
        async with self._slots:
            started = time.perf_counter()
            try:
                process = await anyio.open_process(
                    [executable, *args], cwd=cwd, env=env, start_new_session=True
                )
            except OSError as exc:
                raise spawn_error(self.provider, self.program, executable, exc) from None
            log.debug("%s: started %s (pid %d)", self.provider, self.program.program, process.pid)
            exchange = _Exchange(process)
            try:
                with anyio.fail_after(self.timeout):
                    exit_code = await exchange.run(stdin.encode("utf-8"))
            except TimeoutError:
                await _stop(process)
                raise timeout_error(self.provider, self.timeout) from None
            except _OutputTooLarge:
                await _stop(process)
                raise oversized_output(self.provider, self.program, STDOUT_CAP_BYTES) from None
            except BaseException:  # cancelled: the research or the server is stopping
                await _stop(process)
                raise
            finally:
                with anyio.CancelScope(shield=True):
                    await _close(process)
            if exchange.left_running:
                # The program has exited, but processes it started still held its output.
                _signal_group(process, signal.SIGKILL)
            elapsed = time.perf_counter() - started
            log.debug(
                "%s: %s exited with %d after %.2f s",
                self.provider,
                self.program.program,
                exit_code,
                elapsed,
            )
            return CLIOutput(
                stdout=bytes(exchange.stdout).decode("utf-8", errors="replace"),
                stderr=bytes(exchange.stderr).decode("utf-8", errors="replace"),
                exit_code=exit_code,
                elapsed_s=elapsed,
            )


class _OutputTooLarge(Exception):
    """stdout passed its cap."""


class _Exchange:
    """Feeds a process its input and collects its output, concurrently, within the caps."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.left_running = False  # output still open after the program exited
        self._open_outputs = 2
        self._drained = anyio.Event()
        self._waiting = anyio.CancelScope()  # the wait for the exit; cancelled on oversize

    async def run(self, data: bytes) -> int:
        """Exchange until the program has exited and its output is read; its exit status."""
        async with anyio.create_task_group() as group:
            if self.process.stdin is not None:
                group.start_soon(_feed, self.process.stdin, data)
            group.start_soon(self._collect, self.process.stdout, self.stdout, STDOUT_CAP_BYTES)
            group.start_soon(self._collect, self.process.stderr, self.stderr, STDERR_CAP_BYTES)
            with self._waiting:
                exit_code = await self.process.wait()
            oversized = self._waiting.cancel_called
            if not oversized:
                with anyio.move_on_after(OUTPUT_GRACE_SECONDS):
                    await self._drained.wait()
                self.left_running = not self._drained.is_set()
            group.cancel_scope.cancel()
        if oversized:
            raise _OutputTooLarge
        return exit_code

    async def _collect(self, stream: ByteReceiveStream | None, sink: bytearray, cap: int) -> None:
        try:
            if stream is None:
                return
            async for chunk in stream:
                if len(sink) + len(chunk) > cap:
                    if sink is self.stdout:
                        self._waiting.cancel()  # the caller stops the program
                        return
                    chunk = chunk[: max(0, cap - len(sink))]  # stderr: the start is enough
                sink.extend(chunk)
        finally:
            self._open_outputs -= 1
            if self._open_outputs == 0:
                self._drained.set()


async def _feed(stream: ByteSendStream, data: bytes) -> None:
    """Write the whole prompt, then close stdin so the program knows it has all of it."""
    with contextlib.suppress(
        anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, ConnectionError
    ):
        # A program that stops reading (it refused its options) says why by its exit.
        await stream.send(data)
        await stream.aclose()


async def _stop(process: Process) -> None:
    """End the program and every process it started: SIGTERM to its group, SIGKILL after a
    grace, then reap it. Shielded: a cancelled call still ends its processes."""
    with anyio.CancelScope(shield=True):
        _signal_group(process, signal.SIGTERM)
        with anyio.move_on_after(KILL_GRACE_SECONDS):
            await process.wait()
        # Its children may outlive it (or ignore SIGTERM): the group is killed either way.
        _signal_group(process, signal.SIGKILL)
        await process.wait()


def _signal_group(process: Process, sig: signal.Signals) -> None:
    killpg = getattr(os, "killpg", None)
    try:
        if killpg is not None:
            killpg(process.pid, sig)  # the group's id is the program's pid (its own session)
        else:  # pragma: no cover - no process groups on this platform
            process.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


async def _close(process: Process) -> None:
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(Exception):
                await stream.aclose()
