"""What goes wrong when an assistant's program answers, as ``ProviderError`` kinds with a fix.

The kinds are the resilience policy's (see ``providers.http.errors``):

=================  ===================================================  =========  ==========
kind               when                                                 retried    falls back
=================  ===================================================  =========  ==========
auth               not logged in, login expired, key refused            no         yes
rate_limit         the plan's usage limit or a rate limit; retried      when the   yes
                   only when the program says to wait a minute or less  wait is
                                                                        short
context_overflow   the prompt is too long for the model                 no         no
bad_request        the program refused foundry-mcp's options (too old)  no         no
not_found          the program is not installed or not at ``command``   no         yes
transient          a crash, a timeout, output that cannot be read       yes        yes
=================  ===================================================  =========  ==========

The programs report failures in prose (their JSON carries the message, sometimes an HTTP
status): the patterns below are the phrases their documentation and issue trackers show.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.http.errors import is_context_overflow, scrub_secrets

# A wait the policy may sit out before trying again (longer ones go to a fallback provider).
SHORT_WAIT_SECONDS = 60.0

_LIMIT = re.compile(
    r"usage limit|hit your (?:\w+ )?limit|limit (?:reached|exceeded|will reset)|rate.?limit"
    r"|quota|\b429\b|too many requests|resource.?exhausted|exhausted your|out of credits",
    re.IGNORECASE,
)
_AUTH = re.compile(
    r"not logged in|run /login|/login\b|invalid api key|api key .*(?:invalid|missing)"
    r"|unauthori[sz]ed|\b401\b|\b403\b|authenticat|auth method|login required|log ?in again"
    r"|credentials? (?:expired|invalid|missing|not found)|token (?:has )?expired",
    re.IGNORECASE,
)
_OUTDATED = re.compile(
    r"unknown option|unknown argument|unexpected argument|unrecognized (?:option|argument)"
    r"|invalid value .* for '--",
    re.IGNORECASE,
)
# "Claude AI usage limit reached|1755615600": the reset as a Unix time.
_RESET_EPOCH = re.compile(r"\|(\d{10})\b")
_RESET_IN_SECONDS = re.compile(r"resets?_in_seconds\W{0,3}(\d+)", re.IGNORECASE)
_WAIT_PHRASE = re.compile(r"(?:try again|retry|resets?) in ((?:[\s,]*(?:and\s+)?[\d.]+\s*[a-z]+)+)")
_WAIT_PART = re.compile(r"([\d.]+)\s*([a-z]+)")


@dataclass(frozen=True)
class CLIProgram:
    """One assistant's program: what people call it, and how to install it and log in."""

    product: str  # "Claude Code"
    program: str  # the command, "claude"
    kind: str  # the provider kind, "claude-cli"
    env_var: str  # the variable that overrides its path, "FOUNDRY_MCP_CLAUDE_CLI"
    install: str  # "npm install -g @anthropic-ai/claude-code"
    login: str  # one sentence: how to log in


def failure(
    provider: str,
    program: CLIProgram,
    detail: str,
    *,
    exit_code: int | None = None,
    status: int | None = None,
) -> ProviderError:
    """The ProviderError for a program that ran and said it failed.

    ``detail`` is its own message (secrets are scrubbed), ``status`` an HTTP status it
    reported, ``exit_code`` how it exited.
    """
    detail = " ".join(scrub_secrets(detail or "").split())[:400] or "no message"
    name = program.product
    if status == 429 or (status is None and _LIMIT.search(detail)):
        wait = retry_after(detail)
        when = f" It resets in about {_duration(wait)}." if wait is not None else ""
        return ProviderError(
            f"{name} ({provider}) refused the request: usage or rate limit reached ({detail}).",
            provider=provider,
            status_code=status,
            kind="rate_limit",
            retryable=wait is not None and wait <= SHORT_WAIT_SECONDS,
            retry_after=wait,
            remediation=(
                f"Your {name} plan's usage limit is reached.{when} Wait until it resets, or "
                "configure a fallback provider ([research] deep_research_<phase>_providers); "
                "then resume the research."
            ),
        )
    if status in (401, 403) or (status is None and _AUTH.search(detail)):
        return ProviderError(
            f"{name} ({provider}) is not logged in or its login expired ({detail}).",
            provider=provider,
            status_code=status,
            kind="auth",
            remediation=(
                f"{program.login} foundry-mcp uses the program's own login (no API key); "
                "then resume the research."
            ),
        )
    if is_context_overflow(detail):
        return ProviderError(
            f"The request is too long for {name}'s model ({detail}).",
            provider=provider,
            status_code=status,
            kind="context_overflow",
            remediation=(
                "Use a model with a larger context window (provider_id="
                f"'{provider}:<model>'), or lower max_sources_per_query, then resume the research."
            ),
        )
    if _OUTDATED.search(detail):
        return ProviderError(
            f"{name} did not accept foundry-mcp's options ({detail}).",
            provider=provider,
            kind="bad_request",
            remediation=(
                f"Update {name} ({program.install}); foundry-mcp needs a recent version. Then "
                "resume the research."
            ),
        )
    code = f" with status {exit_code}" if exit_code is not None else ""
    return ProviderError(
        f"{name} ({provider}) failed{code}: {detail}",
        provider=provider,
        status_code=status,
        kind="transient",
        retryable=True,
        remediation=(
            f"foundry-mcp retried. Run `{program.program}` in a terminal to check that it works "
            "and is logged in, then resume the research."
        ),
    )


def unreadable(provider: str, program: CLIProgram, what: str) -> ProviderError:
    """The ProviderError for output that is not the program's documented JSON (retryable)."""
    return ProviderError(
        f"{program.product} ({provider}) printed an answer foundry-mcp cannot read ({what}).",
        provider=provider,
        kind="transient",
        retryable=True,
        remediation=(
            f"Usually passing. If it persists, update {program.product} ({program.install}); "
            f"check that [providers.{provider}] command names the real `{program.program}`."
        ),
    )


def oversized_output(provider: str, program: CLIProgram, cap: int) -> ProviderError:
    """The ProviderError for a program that printed more than ``cap`` bytes."""
    return unreadable(provider, program, f"more than {cap:,} bytes of output")


def spawn_error(provider: str, program: CLIProgram, command: str, exc: OSError) -> ProviderError:
    """The ProviderError for a program that could not be started (not installed, no access)."""
    if isinstance(exc, PermissionError):
        problem = f"{command} is not executable"
    else:
        problem = f"`{command}` was not found"
    return ProviderError(
        f"Cannot start {program.product} for the LLM provider '{provider}': {problem}.",
        provider=provider,
        kind="not_found",
        remediation=(
            f"Install {program.product} ({program.install}) and log in once, or set "
            f'[providers.{provider}] command = "/path/to/{program.program}" (or the '
            f"{program.env_var} environment variable); then resume the research."
        ),
    )


def retry_after(detail: str, now: float | None = None) -> float | None:
    """Seconds until a limit resets, when the message says so; else None."""
    epoch = _RESET_EPOCH.search(detail)
    if epoch:
        return max(0.0, float(epoch.group(1)) - (time.time() if now is None else now))
    seconds = _RESET_IN_SECONDS.search(detail)
    if seconds:
        return float(seconds.group(1))
    phrase = _WAIT_PHRASE.search(detail.lower())
    if not phrase:
        return None
    total = 0.0
    for number, unit in _WAIT_PART.findall(phrase.group(1)):
        factor = _unit_seconds(unit)
        try:
            value = float(number)
        except ValueError:
            return None
        if factor is None:
            return None
        total += value * factor
    return total if total > 0 else None


def _unit_seconds(unit: str) -> float | None:
    if unit == "ms" or unit.startswith("milli"):
        return 0.001
    for prefix, seconds in (("s", 1.0), ("m", 60.0), ("h", 3600.0), ("d", 86400.0)):
        if unit.startswith(prefix):
            return seconds
    return None


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
