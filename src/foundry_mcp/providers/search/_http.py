"""One JSON GET for the search adapters that speak HTTP themselves (Google, Semantic Scholar).

Every failure becomes a ``ProviderError``: a timeout or a lost connection is ``transient`` and
retryable, an HTTP error status goes through ``status_error`` (with ``Retry-After``), and a body
that is not the JSON object the API promises is reported as such. Messages never contain the
request URL (it may carry an API key) nor the key itself.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import httpx2

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import (
    connection_error,
    malformed_error,
    parse_retry_after,
    scrub_secrets,
    status_error,
    timeout_error,
)
from foundry_mcp.providers.http.keep_alive import kept_alive

USER_AGENT = "foundry-mcp (deep research; +https://pypi.org/project/foundry-mcp/)"
MAX_RESPONSE_BYTES = 5_000_000

# Maps an error response (status, parsed body, headers, redacted detail) to a ProviderError,
# or None for the default mapping of ``status_error``.
ErrorMapper = Callable[[int, Any, httpx2.Headers, str], ProviderError | None]


class _RedactQueryKeys(logging.Filter):
    """Hide ``key=...`` query parameters in httpx2's request log lines (Google's API key)."""

    _pattern = re.compile(r"([?&](?:key|api_key|apikey)=)[^&\s\"']+", re.IGNORECASE)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                self._pattern.sub(r"\1***", str(arg)) if isinstance(arg, (str, httpx2.URL)) else arg
                for arg in record.args
            )
        if isinstance(record.msg, str):
            record.msg = self._pattern.sub(r"\1***", record.msg)
        return True


_redaction_installed = False


def install_log_redaction() -> None:
    """Make sure ``httpx2`` never logs an API key passed in a query string (idempotent)."""
    global _redaction_installed
    if _redaction_installed:
        return
    for name in ("httpx2", "httpcore2"):
        logging.getLogger(name).addFilter(_RedactQueryKeys())
    _redaction_installed = True


def new_client(
    base_url: str, timeout: float, headers: Mapping[str, str] | None = None
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for one provider (the LLM SDKs' HTTP library, whose connection
    pool stays cheap with many requests in flight): no redirects followed, no cookies kept,
    idle connections kept :data:`~foundry_mcp.providers.http.keep_alive.KEEP_ALIVE_SECONDS`."""
    return httpx2.AsyncClient(
        base_url=base_url,
        timeout=httpx2.Timeout(timeout),
        limits=kept_alive(),  # httpx's default limits, but for the keep-alive
        headers={"user-agent": USER_AGENT, "accept": "application/json", **(headers or {})},
        follow_redirects=False,
    )


async def get_json(
    client: httpx2.AsyncClient,
    provider: str,
    path: str,
    *,
    params: Mapping[str, str | int],
    timeout: float,
    secret: str | None = None,
    map_error: ErrorMapper | None = None,
) -> dict[str, Any]:
    """GET ``path`` and return the parsed JSON object; raise ``ProviderError`` on any failure.

    ``timeout`` bounds the whole call (connect, wait and body), not just each read.
    """
    try:
        with anyio.fail_after(timeout):
            async with client.stream("GET", path, params=params) as response:
                body = await _read_capped(response)
    except (TimeoutError, httpx2.TimeoutException):
        raise timeout_error(provider, timeout) from None
    except httpx2.HTTPError as exc:
        # str(exc) may embed the request URL (with its key): report the error type only.
        raise connection_error(provider, exc) from None

    parsed: Any = None
    parse_failed = False
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parse_failed = True

    status = response.status_code
    if status >= 400:
        detail = scrub_secrets(
            _error_detail(parsed) or body[:300].decode("utf-8", "replace"), secret
        )
        error = map_error(status, parsed, response.headers, detail) if map_error else None
        raise error or status_error(
            provider,
            status,
            detail,
            retry_after=parse_retry_after(response.headers),
            secret=secret,
        )
    if parse_failed or not isinstance(parsed, dict):
        raise malformed_error(provider, f"HTTP {status} with a body that is not a JSON object")
    return parsed


async def _read_capped(response: httpx2.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _error_detail(parsed: Any) -> str | None:
    """The human-readable message of a JSON error body, in the usual shapes."""
    if not isinstance(parsed, dict):
        return None
    error = parsed.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    for key in ("message", "error", "detail"):
        value = parsed.get(key)
        if isinstance(value, str):
            return value
    return None
