"""Keep the test process off the network: loopback connections only, no name lookups.

Tests talk to fake servers on 127.0.0.1; anything else (a real DNS lookup, a download, a
connection to a public or private address) fails at once with an ``OSError`` naming the culprit,
instead of hanging or passing by luck on a machine that happens to be online.

``primp`` (the HTTP client of ``ddgs``, the keyless web search) opens its sockets in Rust, out
of reach of the socket patches: its ``Client`` is replaced by one that refuses every URL whose
host is not loopback.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
_original_connect = socket.socket.connect
_original_connect_ex = socket.socket.connect_ex
_original_getaddrinfo = socket.getaddrinfo


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _is_literal(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    try:
        ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    return True


def _check(sock: socket.socket, address: Any) -> None:
    if sock.family == getattr(socket, "AF_UNIX", None):
        return
    host = address[0] if isinstance(address, tuple) and address else address
    if not _is_loopback(host):
        raise OSError(f"the test suite may not connect to {host!r}: use a fake server on 127.0.0.1")


def _connect(self: socket.socket, address: Any) -> None:
    _check(self, address)
    return _original_connect(self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _check(self, address)
    return _original_connect_ex(self, address)


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host is not None and not _is_loopback(host) and not _is_literal(host):
        raise socket.gaierror(
            socket.EAI_NONAME, f"the test suite may not resolve {host!r}: replace the resolver"
        )
    return _original_getaddrinfo(host, *args, **kwargs)


def _check_url(url: Any) -> None:
    host = urlsplit(str(url)).hostname
    if not _is_loopback(host):
        raise OSError(f"the test suite may not fetch {url!r}: use a fake server on 127.0.0.1")


def _guard_primp() -> None:
    try:
        import primp
    except ImportError:
        return
    if getattr(primp.Client, "loopback_only", False):
        return

    class LoopbackOnlyClient(primp.Client):
        loopback_only = True

        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            _check_url(url)
            return super().request(method, url, *args, **kwargs)

    def verb(name: str) -> Any:
        def call(self: Any, url: str, *args: Any, **kwargs: Any) -> Any:
            _check_url(url)
            return getattr(super(LoopbackOnlyClient, self), name)(url, *args, **kwargs)

        return call

    for name in ("get", "head", "options", "delete", "post", "put", "patch"):
        setattr(LoopbackOnlyClient, name, verb(name))
    primp.Client = LoopbackOnlyClient


def forbid_network() -> None:
    """Install the guard in this process (idempotent)."""
    socket.socket.connect = _connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _getaddrinfo
    _guard_primp()
