"""Mapping of HTTP failures to ``ProviderError``, shared by every adapter."""

from __future__ import annotations

from foundry_mcp.errors import ProviderError


def status_error(provider: str, status: int, detail: str) -> ProviderError:
    """The ProviderError for an HTTP status code answered by a provider."""
    if status in (401, 403):
        return ProviderError(
            f"{provider} rejected the API key (HTTP {status}).",
            provider=provider,
            status_code=status,
            remediation=(
                f"Set a valid key in [providers.{provider}] api_key or the provider's "
                "environment variable, then resume the research."
            ),
        )
    if status == 429:
        return ProviderError(
            f"{provider} is rate-limiting requests (HTTP 429).",
            provider=provider,
            status_code=status,
            retryable=True,
            remediation="Wait a minute or lower max_concurrent, then resume the research.",
        )
    retryable = status >= 500 or status in (408, 409)
    return ProviderError(
        f"{provider} answered HTTP {status}: {detail[:300]}",
        provider=provider,
        status_code=status,
        retryable=retryable,
    )
