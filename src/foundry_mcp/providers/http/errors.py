"""Mapping of provider failures to ``ProviderError``, shared by every adapter.

Every failure gets a ``kind`` that decides what the resilience policy and the fallback lists do
with it:

=================  ==========================================  ===========  ===============
kind               when                                        retried      falls back
=================  ==========================================  ===========  ===============
rate_limit         HTTP 429 (``retry_after`` from the answer)  yes          yes
transient          5xx, 408, 409, connection errors, timeouts, yes          yes
                   malformed answers
auth               HTTP 401 / 402 / 403, no credit or quota   no           yes (reported)
                   left (e.g. OpenAI's insufficient_quota)
bad_request        other 4xx                                   no           no
context_overflow   4xx saying the prompt is too long, 413      no           no
not_found          HTTP 404 (unknown model or wrong base_url)  no           yes
=================  ==========================================  ===========  ===============

The resilience policy adds ``circuit_open`` (the provider failed repeatedly and is paused; falls
back, not retried) and the research's LLM adds ``budget`` (its cost ceiling is reached; ends the
run cleanly). Messages never contain API keys: ``scrub_secrets`` masks them.

The SDKs' own exception types map onto the same kinds: ``sdk_error`` for the openai and
anthropic SDKs (one template, the same classes), and each other adapter next to its SDK.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from foundry_mcp.errors import ProviderError

RETRYABLE_KINDS = frozenset({"rate_limit", "transient"})

# What providers say when a request does not fit the model's context window.
_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context|context[ _-]?(length|window)"
    r"|prompt is too long|too many tokens|exceeds? the (model'?s? )?(maximum|context)"
    r"|input token count|exceed context limit|input is too long|reduce the length|token limit",
    re.IGNORECASE,
)

# A 4xx that no retry fixes: the account is out of credit or quota (OpenAI's insufficient_quota
# code, Anthropic's "credit balance is too low").
_BILLING_CODES = frozenset({"insufficient_quota", "billing_error"})
_BILLING = re.compile(r"credit balance|insufficient[_ ]quota|billing hard limit", re.IGNORECASE)

# Key-shaped strings: never let one reach a log line, an error or a response.
_SECRET = re.compile(
    r"(sk-[A-Za-z0-9_\-]{6,}|tvly-[A-Za-z0-9_\-]{6,}|AIza[0-9A-Za-z_\-]{20,}"
    r"|(?i:bearer)\s+[A-Za-z0-9._\-]{8,})"
)


def scrub_secrets(text: str, *secrets: str | None) -> str:
    """``text`` with API keys (the given ones and anything key-shaped) masked."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _SECRET.sub("***", text)


def is_context_overflow(message: str) -> bool:
    """True when a provider's error message says the prompt does not fit the model."""
    return bool(_OVERFLOW.search(message))


def parse_retry_after(headers: Mapping[str, str] | Any | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date)."""
    if headers is None:
        return None
    try:
        raw_ms = headers.get("retry-after-ms")
        raw = headers.get("retry-after")
    except Exception:
        return None
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    if not raw:
        return None
    raw = str(raw).strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_error(
    provider: str,
    status: int,
    detail: str,
    *,
    retry_after: float | None = None,
    code: str | None = None,
    secret: str | None = None,
) -> ProviderError:
    """The ProviderError for an HTTP status code answered by a provider.

    ``detail`` is the provider's message (secrets are scrubbed from it), ``code`` its machine
    error code when it has one (e.g. OpenAI's ``context_length_exceeded``).
    """
    detail = scrub_secrets(detail or "", secret)[:300]
    if status in (401, 403):
        return ProviderError(
            f"{provider} rejected the API key (HTTP {status}).",
            provider=provider,
            status_code=status,
            kind="auth",
            remediation=(
                f"Set a valid key in [providers.{provider}] api_key or the provider's "
                "environment variable, then resume the research."
            ),
        )
    if status == 402 or (
        400 <= status < 500 and (code in _BILLING_CODES or bool(_BILLING.search(detail)))
    ):
        return ProviderError(
            f"{provider} refused the request: payment required or quota exhausted (HTTP {status}).",
            provider=provider,
            status_code=status,
            kind="auth",
            remediation=(
                f"Check the billing, plan limits or credit balance of your {provider} account, "
                "or configure a fallback provider; then resume the research."
            ),
        )
    if status == 429:
        wait = f" It asked to wait {retry_after:g} s." if retry_after is not None else ""
        return ProviderError(
            f"{provider} is rate-limiting requests (HTTP 429).{wait}",
            provider=provider,
            status_code=status,
            retryable=True,
            kind="rate_limit",
            retry_after=retry_after,
            remediation=(
                f"Wait a minute, lower max_concurrent or [providers.{provider}] "
                "requests_per_minute, or configure a fallback provider; then resume the research."
            ),
        )
    if status == 413 or (400 <= status < 500 and is_context_overflow(f"{code or ''} {detail}")):
        return ProviderError(
            f"The request is too long for {provider}'s model (HTTP {status}): {detail}",
            provider=provider,
            status_code=status,
            kind="context_overflow",
            remediation=(
                "Use a model with a larger context window, or lower max_sources_per_query, then "
                "resume the research."
            ),
        )
    if status == 404:
        return ProviderError(
            f"{provider} does not know the requested model or endpoint (HTTP 404): {detail}",
            provider=provider,
            status_code=status,
            kind="not_found",
            remediation=(
                f"Check the model name (provider_id='{provider}:<model>' or [providers.{provider}] "
                f"model) and [providers.{provider}] base_url."
            ),
        )
    if status >= 500 or status in (408, 409):
        return ProviderError(
            f"{provider} answered HTTP {status}: {detail}",
            provider=provider,
            status_code=status,
            retryable=True,
            kind="transient",
            retry_after=retry_after,
            remediation=(
                f"{provider} is having trouble; foundry-mcp retried. Check the provider's status "
                "page, then resume the research."
            ),
        )
    return ProviderError(
        f"{provider} refused the request (HTTP {status}): {detail}",
        provider=provider,
        status_code=status,
        kind="bad_request",
        remediation=(
            f"Check the model name and settings of [providers.{provider}]; if they are right, "
            "this is a bug in foundry-mcp: please report it with the server log."
        ),
    )


def timeout_error(provider: str, seconds: float | None = None) -> ProviderError:
    """The ProviderError for a call that got no answer in time (retryable)."""
    within = f" within {seconds:g} s" if seconds else " in time"
    return ProviderError(
        f"{provider} did not answer{within}.",
        provider=provider,
        retryable=True,
        kind="transient",
        remediation=(
            f"Raise [providers.{provider}] timeout if the provider is just slow, or check its "
            "status; then resume the research."
        ),
    )


def connection_error(provider: str, exc: BaseException) -> ProviderError:
    """The ProviderError for a connection that could not be made or broke (retryable)."""
    return ProviderError(
        f"Cannot reach {provider}: {type(exc).__name__}.",
        provider=provider,
        retryable=True,
        kind="transient",
        remediation=f"Check the base_url of [providers.{provider}] and your network.",
    )


def malformed_error(provider: str, what: str) -> ProviderError:
    """The ProviderError for an answer that could not be read (retryable)."""
    return ProviderError(
        f"{provider} sent an answer that could not be read ({what}).",
        provider=provider,
        retryable=True,
        kind="transient",
        remediation=(
            f"Usually a passing fault of the provider. If it persists, check that "
            f"[providers.{provider}] base_url points at the provider's API."
        ),
    )


def sdk_error_message(exc: Exception) -> str:
    """The provider's own error message from an openai/anthropic SDK exception."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


def sdk_error_code(exc: Exception) -> str | None:
    """The machine error code of an openai/anthropic SDK exception (``code``, else ``type``)."""
    for attribute in ("code", "error_code", "type"):
        value = getattr(exc, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def sdk_error(
    provider: str, exc: Exception, sdk: ModuleType, *, timeout: float, secret: str | None
) -> ProviderError:
    """The ProviderError for an exception of the ``openai`` or ``anthropic`` SDK (``sdk``).

    Both SDKs come from one generator: the same classes (``APIStatusError``,
    ``APITimeoutError``, ``APIConnectionError``, ``APIResponseValidationError``) with the same
    fields. A body that is not JSON surfaces as a ``ValueError``.
    """
    if isinstance(exc, sdk.APIStatusError):
        return status_error(
            provider,
            exc.status_code,
            sdk_error_message(exc),
            retry_after=parse_retry_after(exc.response.headers),
            code=sdk_error_code(exc),
            secret=secret,
        )
    if isinstance(exc, sdk.APITimeoutError):  # before its base class, APIConnectionError
        return timeout_error(provider, timeout)
    if isinstance(exc, sdk.APIConnectionError):
        return connection_error(provider, exc)
    if isinstance(exc, sdk.APIResponseValidationError):
        return malformed_error(provider, scrub_secrets(str(exc), secret)[:200])
    return malformed_error(provider, type(exc).__name__)
