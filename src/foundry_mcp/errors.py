"""Every error foundry-mcp reports to a user, each with a code, a type and a remediation.

The MCP layer turns a ``FoundryError`` into the response envelope's error fields; the CLI prints
the message and the remediation. Anything that is not a ``FoundryError`` is a bug and is reported
as ``INTERNAL_ERROR`` without internals.
"""

from __future__ import annotations

from typing import Any


class FoundryError(Exception):
    """Base of the errors a user can see and act on."""

    error_code = "INTERNAL_ERROR"
    error_type = "internal"
    default_remediation = "This is a bug in foundry-mcp; please report it with the server log."

    def __init__(
        self,
        message: str,
        *,
        remediation: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.remediation = remediation or self.default_remediation
        self.details = details or {}


class InputError(FoundryError):
    """A tool argument is missing, malformed or out of range."""

    error_code = "VALIDATION_ERROR"
    error_type = "validation"
    default_remediation = "Correct the named parameter and call again."


class UnknownActionError(InputError):
    error_code = "UNKNOWN_ACTION"


class InvalidResearchIdError(InputError):
    error_code = "INVALID_RESEARCH_ID"
    default_remediation = (
        "Pass the research_id exactly as returned by deep-research: 'deepres-' followed by "
        "12 lowercase hex digits. Use action='deep-research-list' to see known ids."
    )


class ResearchNotFoundError(FoundryError):
    error_code = "RESEARCH_NOT_FOUND"
    error_type = "not_found"
    default_remediation = (
        "Check the id with action='deep-research-list'; a deleted research cannot be recovered."
    )


class ConfigError(FoundryError):
    """The configuration file or an environment variable holds an invalid value."""

    error_code = "CONFIG_INVALID"
    error_type = "configuration"
    default_remediation = "Fix the named key in the named file (see docs/configuration.md)."


class StoreUnavailableError(FoundryError):
    """The shared research store (a PostgreSQL server) cannot be reached or refused us."""

    error_code = "STORE_UNAVAILABLE"
    error_type = "unavailable"
    default_remediation = (
        "Check that the PostgreSQL server named by [research] store_url is running and "
        "reachable from this host, then try again."
    )


class ProviderNotConfiguredError(FoundryError):
    """No usable provider: unknown name, or no API key."""

    error_code = "PROVIDER_NOT_CONFIGURED"
    error_type = "configuration"


class InvalidStateError(FoundryError):
    """The research is not in a state that allows the requested action."""

    error_code = "INVALID_STATE"
    error_type = "conflict"


class ReportNotReadyError(FoundryError):
    error_code = "REPORT_NOT_READY"
    error_type = "conflict"
    default_remediation = (
        "Wait for the research to reach synthesis: call action='deep-research-status' with "
        "wait=true, then ask for the report again."
    )


class ProviderError(FoundryError):
    """A provider call failed. ``retryable`` says whether trying again may help.

    ``kind`` classifies the failure: ``rate_limit``, ``transient`` (5xx, connection, timeout),
    ``auth``, ``bad_request``, ``context_overflow``, ``not_found``, ``circuit_open``,
    ``budget`` (the research's cost ceiling) or ``unknown``.
    """

    error_code = "PROVIDER_ERROR"
    error_type = "provider"
    default_remediation = (
        "Check the provider's status and your API key, then resume the research by its id."
    )

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        retryable: bool = False,
        status_code: int | None = None,
        remediation: str | None = None,
        kind: str = "unknown",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(
            message,
            remediation=remediation,
            details={"provider": provider, "status_code": status_code, "kind": kind},
        )
        self.provider = provider
        self.retryable = retryable
        self.status_code = status_code
        self.kind = kind
        self.retry_after = retry_after


class ResearchStoppedError(FoundryError):
    """A research ended without completing (failed, timed out, interrupted); it can be resumed."""

    error_code = "RESEARCH_STOPPED"
    error_type = "conflict"


class QuotaExceededError(FoundryError):
    """A team server's principal is at one of the limits set for it ([server] tokens)."""

    error_code = "QUOTA_EXCEEDED"
    error_type = "quota"
    default_remediation = (
        "Wait for one of your running researches to end (or cancel one), or ask the server's "
        "administrator to raise your limit in the [server] section of its configuration."
    )
