"""Bearer tokens for the team server, through the MCP SDK's own auth interfaces.

``ConfiguredTokens`` is the SDK's ``TokenVerifier`` for the tokens of ``[server] tokens`` (or
``FOUNDRY_MCP_TOKENS``): it keeps only a SHA-256 digest of each token, compares a presented
token with every one of them in constant time, and answers with an ``AccessToken`` naming the
principal and its limits, never the token. The SDK's bearer middleware refuses a request whose
token it does not accept with HTTP 401 and ``WWW-Authenticate: Bearer``; ``BearerRequired``
only words that refusal so a user knows what to send.

A request's principal reaches the research service as an argument: :func:`request_principal`
reads it from the SDK's auth context at the edge (the tool, the resources, the tasks methods).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from pydantic import AnyHttpUrl
from starlette.routing import Route
from starlette.types import Send

from foundry_mcp.config import ServerSettings
from foundry_mcp.research.principal import Principal

UNAUTHORIZED = (
    "A valid bearer token is required: send the header 'Authorization: Bearer <token>' with "
    "a token this server's administrator configured for you ([server] tokens or "
    "FOUNDRY_MCP_TOKENS)."
)
# ``AccessToken.token`` is required by the SDK; the presented token is not kept in it.
_NOT_KEPT = "(not kept)"


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    name: str
    max_concurrent_researches: int | None
    max_cost_usd_per_day: float | None


class ConfiguredTokens(TokenVerifier):
    """The SDK's token verifier for the server's configured bearer tokens."""

    def __init__(self, server: ServerSettings) -> None:
        entries = []
        for token in server.tokens:
            concurrent, cost = server.limits_for(token.name)
            entries.append(
                _Entry(_digest(token.token.get_secret_value()), token.name, concurrent, cost)
            )
        self._entries: Sequence[_Entry] = tuple(entries)

    @property
    def principals(self) -> list[str]:
        """The names of the principals, each once, in configuration order."""
        return list(dict.fromkeys(entry.name for entry in self._entries))

    async def verify_token(self, token: str) -> AccessToken | None:
        """The principal of ``token``, or None when it is none of the configured tokens."""
        presented = _digest(token)
        # Every entry is compared, whatever matched: the time taken says nothing about which
        # token (if any) the presented one is, nor how much of it was right.
        found: _Entry | None = None
        for entry in self._entries:
            if hmac.compare_digest(presented, entry.digest):
                found = entry
        if found is None:
            return None
        return AccessToken(
            token=_NOT_KEPT,
            client_id=found.name,
            subject=found.name,
            scopes=[],
            claims={
                "max_concurrent_researches": found.max_concurrent_researches,
                "max_cost_usd_per_day": found.max_cost_usd_per_day,
            },
        )


def _digest(token: str) -> bytes:
    # Digests have one length, so compare_digest never returns early on a length mismatch.
    return hashlib.sha256(token.encode("utf-8", "replace")).digest()


def auth_settings(base_url: str) -> AuthSettings:
    """The SDK's auth settings for static bearer tokens: this server is the only party (there
    is no OAuth authorization server, no resource metadata to publish)."""
    return AuthSettings(issuer_url=AnyHttpUrl(base_url), resource_server_url=None)


def request_principal() -> Principal | None:
    """The principal of the request being handled: the holder of its bearer token, or None
    when the server takes no tokens (stdio, a loopback server without tokens)."""
    token = get_access_token()
    return None if token is None else principal_of(token)


def principal_of(token: AccessToken) -> Principal:
    """The principal a verified bearer token stands for, with its limits."""
    claims: dict[str, Any] = token.claims or {}
    return Principal(
        name=token.client_id,
        max_concurrent_researches=claims.get("max_concurrent_researches"),
        max_cost_usd_per_day=claims.get("max_cost_usd_per_day"),
    )


class BearerRequired(RequireAuthMiddleware):
    """The SDK's check that a request was authenticated, with an actionable 401 message."""

    async def _send_auth_error(
        self, send: Send, status_code: int, error: str, description: str
    ) -> None:
        if status_code == 401:
            description = UNAUTHORIZED
        await super()._send_auth_error(send, status_code, error, description)


def word_refusals(routes: Sequence[Any], path: str) -> bool:
    """Put ``BearerRequired`` in place of the SDK's check on the MCP endpoint at ``path``.

    Returns False (and changes nothing) when the app is not built as expected; the SDK's own
    401 answer then stands.
    """
    for route in routes:
        if (
            isinstance(route, Route)
            and route.path == path
            and type(route.app) is RequireAuthMiddleware
        ):
            sdk: RequireAuthMiddleware = route.app
            route.app = BearerRequired(sdk.app, sdk.required_scopes, sdk.resource_metadata_url)
            return True
    return False
