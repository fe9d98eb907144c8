"""A scriptable HTTP/1.1 server on 127.0.0.1 for driving real SDK clients in tests."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str  # without the query string
    headers: dict[str, str]  # lower-case keys
    json: Any  # parsed JSON body, or None
    body: bytes
    timestamp: float
    query: dict[str, list[str]] = field(default_factory=dict)
    client_port: int = 0  # lets tests observe connection reuse


@dataclass
class FakeResponse:
    """What a route handler answers; ``body`` (raw) wins over ``json``."""

    status: int = 200
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | str | None = None


@dataclass(frozen=True)
class Exchange:
    """One answered request: when its answer was sent, on the clock of ``timestamp``.

    ``sent`` is taken once the answer was written (or the client had hung up), so
    ``[request.timestamp, sent]`` is the time the fake was busy with the request.
    """

    request: RecordedRequest
    status: int
    sent: float

    @property
    def seconds(self) -> float:
        """From receiving the request to sending its answer."""
        return self.sent - self.request.timestamp


Handler = Callable[[RecordedRequest], FakeResponse]
# Seconds to hold an answer back, chosen per request and answer (see ``FakeHTTPServer.delay``).
Delay = Callable[[RecordedRequest, FakeResponse], float]


def error_body(status: int, message: str, kind: str = "fake_error") -> dict[str, Any]:
    """An error body the openai, anthropic and tavily SDKs all know how to read."""
    return {
        "type": "error",
        "error": {"message": message, "type": kind, "code": status},
        "detail": {"error": message},
    }


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # keep-alive connections must not block stop()
    # socketserver's default backlog is 5: a burst of connections (32 researches searching at
    # once in the crowd benchmark) overflowed it, and the SDKs read resets as provider errors.
    request_queue_size = 128
    fake: FakeHTTPServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer (a cancelled call) is expected, not an error."""
        error = sys.exc_info()[1]
        if not isinstance(error, (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def _shut_down_now(httpd: _HTTPServer) -> None:
    """Stop ``httpd``'s serving loop without waiting out its poll interval.

    ``shutdown()`` only raises a flag that the loop reads when its ``select`` returns, so a
    connection made once it waits wakes the loop at once (instead of up to 50 ms later, for
    every fake of every test). A connection that comes before the flag is served as an empty
    request, and the loop then ends on its next poll, as without it."""
    stopping = threading.Thread(target=httpd.shutdown, daemon=True)
    stopping.start()
    with contextlib.suppress(OSError):
        socket.create_connection(httpd.server_address[:2], timeout=1).close()
    stopping.join()


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # An answer's head and body are two writes. With Nagle's algorithm on, the body waits for
    # the client's acknowledgement of the head, which the client may hold back for 40 ms (a
    # delayed ACK): 40 ms that neither the fake's latency nor the code under test spent.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def _read_body(self) -> bytes | None:
        """The request's body, or None when the client hung up before sending all of it."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                line = self.rfile.readline()
                if not line:
                    return None
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunk = self.rfile.read(size)
                if len(chunk) < size:
                    return None
                chunks.append(chunk)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        return body if len(body) == length else None

    def _handle(self) -> None:
        raw = self._read_body()
        if raw is None:
            # Like a real API, a request cut off mid-body (a cancelled client) is never
            # answered, recorded or billed.
            self.close_connection = True
            return
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        url = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=url.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            json=parsed,
            body=raw,
            timestamp=time.time(),
            query=parse_qs(url.query),
            client_port=self.client_address[1],
        )
        response = self.server.fake._dispatch(request)
        try:
            self._send(response)
        finally:
            self.server.fake._sent(request, response.status)

    def _send(self, response: FakeResponse) -> None:
        headers = {k.lower(): v for k, v in response.headers.items()}
        if response.body is not None:
            payload = response.body.encode() if isinstance(response.body, str) else response.body
            headers.setdefault("content-type", "text/plain; charset=utf-8")
        elif response.json is not None:
            payload = json.dumps(response.json).encode()
            headers.setdefault("content-type", "application/json")
        else:
            payload = b""
        headers["content-length"] = str(len(payload))
        self.send_response(response.status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle


def _encoded(response: FakeResponse) -> FakeResponse:
    """``response`` with its JSON already encoded: encoding a search's megabyte of page text
    takes milliseconds, which belong within the simulated latency (a real API's latency does
    not grow with its clients' load), not after it."""
    if response.body is not None or response.json is None:
        return response
    headers = {"content-type": "application/json", **response.headers}
    return replace(response, body=json.dumps(response.json).encode(), headers=headers)


class FakeHTTPServer:
    """A threaded fake HTTP server: routes, request recording, latency and failure scripting."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        # Answered requests, in the order answered. Each is recorded by its handler's thread
        # once the answer is written: a client may have the answer before its record is here.
        self.exchanges: list[Exchange] = []
        self.errors: list[BaseException] = []  # exceptions raised by route handlers
        self.latency: float = 0.0
        # Per-request latency on top of ``latency``, decided once the answer is known (e.g. by
        # its token count), counted from when the fake began making the answer: its own time
        # to answer (a brain reading a long prompt, slower when many requests come at once) is
        # part of it, as a real API's latency does not grow with its clients' load. A hang is
        # a long delay: every wait ends when the server stops.
        self.delay: Delay | None = None
        self.brain: Any = None  # set by the provider fakes
        self._stopped = threading.Event()
        self._routes: dict[tuple[str, str], Handler] = {}
        self._failures: deque[FakeResponse] = deque()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ scripting

    def route(self, method: str, path: str, handler: Handler) -> None:
        """Answer ``method path`` (query string ignored) with ``handler``."""
        self._routes[(method.upper(), path)] = handler

    def fail_next(
        self,
        status: int,
        times: int = 1,
        json: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Make the next ``times`` requests, to any route, answer ``status``."""
        body = json if json is not None else error_body(status, f"injected failure ({status})")
        with self._lock:
            for _ in range(times):
                self._failures.append(FakeResponse(status, body, dict(headers or {})))

    def requests_to(self, path: str, method: str | None = None) -> list[RecordedRequest]:
        """The recorded requests for one path (and optionally one method)."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.path == path and (method is None or r.method == method.upper())
            ]

    def reset(self) -> None:
        """Forget recorded requests, errors and pending failures."""
        with self._lock:
            self.requests.clear()
            self.exchanges.clear()
            self.errors.clear()
            self._failures.clear()

    # ------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError("FakeHTTPServer is not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> Self:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(("127.0.0.1", 0), _RequestHandler)
        httpd.fake = self
        self._stopped.clear()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop any open keep-alive connections."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopped.set()  # releases handlers still waiting out a latency or a delay
        _shut_down_now(httpd)
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _sent(self, request: RecordedRequest, status: int) -> None:
        with self._lock:
            self.exchanges.append(Exchange(request, status, time.time()))

    def _dispatch(self, request: RecordedRequest) -> FakeResponse:
        with self._lock:
            self.requests.append(request)
            failure = self._failures.popleft() if self._failures else None
        if self.latency > 0:
            self._stopped.wait(self.latency)
        began = time.monotonic()
        response = _encoded(failure or self._answer(request))
        if self.delay is not None:
            left = self.delay(request, response) - (time.monotonic() - began)
            if left > 0:
                self._stopped.wait(left)
        return response

    def _answer(self, request: RecordedRequest) -> FakeResponse:
        handler = self._routes.get((request.method, request.path))
        if handler is None:
            message = f"no route for {request.method} {request.path}"
            return FakeResponse(404, error_body(404, message, "not_found_error"))
        try:
            return handler(request)
        except Exception as exc:  # surface handler bugs to the test, not as a hang
            with self._lock:
                self.errors.append(exc)
            return FakeResponse(500, error_body(500, f"fake handler crashed: {exc!r}"))
