"""How the assistants' programs' failure messages become the resilience policy's kinds."""

from __future__ import annotations

import pytest

from foundry_mcp.providers.llm.programs.claude import ClaudeCLI
from foundry_mcp.providers.llm.programs.errors import failure, retry_after

PROGRAM = ClaudeCLI.program


@pytest.mark.parametrize(
    ("message", "seconds"),
    [
        ("Claude AI usage limit reached|1755615600", 15_600.0),  # the reset as a Unix time
        ('{"resets_in_seconds":13872}', 13_872.0),
        ("Quota exceeded. Please retry in 3.5s.", 3.5),
        ("Please retry in 250ms", 0.25),
        ("try again in 4 days 20 hours 9 minutes.", 4 * 86_400 + 20 * 3600 + 9 * 60),
        ("You've hit your usage limit ... try again at 12:16 PM.", None),  # a clock time
        ("You've hit your limit · resets 3pm (America/New_York)", None),
    ],
)
def test_the_wait_is_read_when_the_message_gives_one(message: str, seconds: float | None) -> None:
    assert retry_after(message, now=1_755_600_000) == seconds


@pytest.mark.parametrize(
    ("message", "status", "kind"),
    [
        ("Not logged in · Please run /login", None, "auth"),
        ("Invalid API key · Please run /login", None, "auth"),
        ("exceeded retry limit, last status: 401 Unauthorized", None, "auth"),
        ("Please set an Auth method in your ~/.gemini/settings.json", None, "auth"),
        ("anything", 403, "auth"),
        # A quota message that also mentions another /auth method is still a limit.
        ("Quota exceeded ... or switch to another /auth method", None, "rate_limit"),
        ("You've hit your session limit · resets 1:30am", None, "rate_limit"),
        ("API Error", 429, "rate_limit"),
        ("prompt is too long: 250000 tokens > 200000 maximum", None, "context_overflow"),
        ("error: unknown option '--no-session-persistence'", None, "bad_request"),
        ("error: unexpected argument '--json' found", None, "bad_request"),
        ("FATAL ERROR: Reached heap limit", None, "transient"),
    ],
)
def test_each_message_gets_its_kind(message: str, status: int | None, kind: str) -> None:
    error = failure("claude-cli", PROGRAM, message, exit_code=1, status=status)
    assert error.kind == kind
    assert error.retryable == (kind == "transient")
    assert error.provider == "claude-cli" and error.remediation


def test_a_short_wait_is_retried_and_a_long_one_left_to_a_fallback() -> None:
    short = failure("gemini-cli", PROGRAM, "Resource exhausted. Please retry in 20s.")
    assert short.kind == "rate_limit" and short.retryable and short.retry_after == 20.0
    long = failure("gemini-cli", PROGRAM, "Resource exhausted. Please retry in 2 hours.")
    assert long.kind == "rate_limit" and not long.retryable and "about 2.0 h" in long.remediation


def test_secrets_never_reach_the_message() -> None:
    error = failure("claude-cli", PROGRAM, "Invalid API key sk-ant-api03-abcdefghijkl given")
    assert "sk-ant-api03" not in error.message
