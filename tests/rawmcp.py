"""A tiny synchronous MCP-over-stdio client for tests and benchmarks that need the server's pid.

``RawServer`` starts ``python -m foundry_mcp`` with pipes, performs the MCP handshake and calls
the ``research`` tool, returning its envelope. Reading never blocks without a deadline: a thread
turns stdout lines into a queue, another drains stderr into a buffer, so a dead or wedged
server fails a test with a message instead of hanging it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

import psutil

PROTOCOL_VERSION = "2025-06-18"
_EOF = object()


def _wait_for_zombie(pid: int, timeout: float = 10.0) -> None:
    """Wait until the killed process ``pid`` is a zombie, without reaping it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.ZombieProcess:
            return
        except psutil.NoSuchProcess:
            raise RawServerError(f"process {pid} was reaped; it cannot be left a zombie") from None
        time.sleep(0.01)
    raise RawServerError(f"process {pid} did not die within {timeout:g} s of SIGKILL")


def _inherited() -> dict[str, str]:
    """What the server gets from our environment: PATH, and PYTHONPATH when one is set."""
    return {key: os.environ[key] for key in ("PATH", "PYTHONPATH") if key in os.environ}


class RawServerError(RuntimeError):
    """The server did not answer as expected (exited, timed out, or sent a JSON-RPC error)."""


class RawServer:
    """One ``foundry-mcp`` server process spoken to over stdio, line by line."""

    def __init__(
        self,
        env: Mapping[str, str],
        cwd: str | Path | None = None,
        *,
        start_timeout: float = 30.0,
    ) -> None:
        self._ids = itertools.count(1)
        self._lines: queue.Queue[object] = queue.Queue()
        self._stderr: list[str] = []
        self._stderr_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "foundry_mcp"],
            env={**_inherited(), **env},
            cwd=None if cwd is None else str(cwd),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        assert self.process.stdout is not None and self.process.stderr is not None
        self._threads = [
            threading.Thread(target=self._read_stdout, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self.process.stderr,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        try:
            self.server_info = self.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "rawmcp", "version": "0"},
                },
                timeout=start_timeout,
            )
            self.notify("notifications/initialized")
        except BaseException:
            self.kill()
            raise

    # ------------------------------------------------------------------ properties

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stderr_text(self) -> str:
        """Everything the server wrote to stderr so far."""
        with self._stderr_lock:
            return "".join(self._stderr)

    # ------------------------------------------------------------------ protocol

    def call(self, arguments: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """Call the ``research`` tool; returns its envelope (``result.structuredContent``)."""
        result = self.request(
            "tools/call", {"name": "research", "arguments": arguments}, timeout=timeout
        )
        envelope = result.get("structuredContent")
        if not isinstance(envelope, dict):
            raise RawServerError(f"tools/call answered without structuredContent: {result!r}")
        return envelope

    def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        """Send one JSON-RPC request and wait for the response with the same id."""
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RawServerError(f"no answer to {method} within {timeout:g} s{self._tail()}")
            try:
                item = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if item is _EOF:
                self._lines.put(_EOF)  # later calls see the end too
                code = self.process.poll()
                raise RawServerError(
                    f"the server closed stdout (exit code {code}) before answering "
                    f"{method}{self._tail()}"
                )
            assert isinstance(item, dict)
            if "method" in item:
                self._answer_server_message(item)
                continue
            if item.get("id") != request_id:
                continue  # a late answer to an earlier request that timed out
            if "error" in item:
                raise RawServerError(f"{method} failed: {item['error']!r}")
            result = item.get("result")
            return result if isinstance(result, dict) else {}

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def _answer_server_message(self, message: dict[str, Any]) -> None:
        """Notifications are skipped; a request from the server gets a polite refusal."""
        if "id" not in message:
            return
        if message.get("method") == "ping":
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return
        self._send(
            {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "not supported by rawmcp"},
            }
        )

    def _send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        if stdin is None or stdin.closed:
            raise RawServerError("stdin is closed")
        try:
            with self._write_lock:
                stdin.write(json.dumps(message) + "\n")
                stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            code = self.process.poll()
            raise RawServerError(
                f"cannot write to the server (exit code {code}): {exc}{self._tail()}"
            ) from None

    def _tail(self) -> str:
        text = self.stderr_text().strip()
        return f"; stderr ends:\n{text[-2000:]}" if text else ""

    # ------------------------------------------------------------------ reader threads

    def _read_stdout(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                line = line.strip()
                if not line:
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    with self._stderr_lock:
                        self._stderr.append(f"[rawmcp: non-JSON line on stdout] {line}\n")
                    continue
                if isinstance(message, dict):
                    self._lines.put(message)
        except (OSError, ValueError):
            pass
        finally:
            self._lines.put(_EOF)

    def _read_stderr(self, stream: IO[str]) -> None:
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                with self._stderr_lock:
                    self._stderr.append(line)

    # ------------------------------------------------------------------ lifecycle

    def kill(self, *, reap: bool = True) -> None:
        """SIGKILL the server (no shutdown hook runs) and reap it.

        With ``reap=False`` the dead server is left a zombie, as it is while its parent (an
        editor, a shell) has not yet waited for it, until :meth:`reap` is called.
        """
        if not reap:
            os.kill(self.process.pid, signal.SIGKILL)
            _wait_for_zombie(self.process.pid)
            self._release()
            return
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self._release()

    def reap(self) -> int | None:
        """Wait for the (dead) server, as its parent eventually does."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        return self.process.returncode

    def stop_with(self, signum: int, timeout: float = 10.0) -> int | None:
        """Send ``signum`` and wait for the server to exit; returns its exit code."""
        os.kill(self.process.pid, signum)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._release()
        return self.process.returncode

    def close(self, timeout: float = 15.0) -> int | None:
        """End the session as a client does (close stdin); SIGKILL after ``timeout``."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._release()
        return self.process.returncode

    def _release(self) -> None:
        for thread in self._threads:
            thread.join(timeout=2)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process.poll() is None:
            self.close()
        else:
            self._release()
