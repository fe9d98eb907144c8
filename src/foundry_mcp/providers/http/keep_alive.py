"""How long the providers' HTTP clients keep an idle connection open.

A research calls its providers in rounds seconds apart: a part's searches, its analysis calls
once the pages are read, the writers once every part has answered, a refinement's round, the
next research's. httpx keeps an idle connection five seconds, so each round found the last
one's connections closed and opened (over TLS, handshook) new ones. Kept thirty seconds, they
are there for the next round. A connection the server closed meanwhile is found closed by the
pool before it is used, and replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2

KEEP_ALIVE_SECONDS = 30.0


def kept_alive(limits: httpx2.Limits | None = None) -> httpx2.Limits:
    """``limits`` (an SDK's own, say; default httpx's), with idle connections kept
    :data:`KEEP_ALIVE_SECONDS`."""
    import httpx2  # with the SDK that needs it, not at the server's start

    if limits is None:
        limits = httpx2.Limits()
    return httpx2.Limits(
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=KEEP_ALIVE_SECONDS,
    )


def sdk_http_client(sdk: Any) -> Any:
    """An LLM SDK's own HTTP client (``sdk``: the ``openai`` or ``anthropic`` module), with the
    SDK's own limits, keeping idle connections for the next round of calls."""
    return sdk.DefaultAsyncHttpxClient(limits=kept_alive(sdk.DEFAULT_CONNECTION_LIMITS))
