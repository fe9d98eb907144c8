"""Claude Code's ``claude -p`` as an LLM provider, answering on the user's Claude login.

One call runs, in a private empty directory::

    claude -p --output-format json --system-prompt-file system.md --tools "" \\
        --strict-mcp-config --max-turns 1 --no-session-persistence [--model MODEL]

with the user prompt on stdin (``-p`` with no prompt argument reads it from there) and the
system prompt in ``system.md`` of that directory. Why each option:

- ``--system-prompt-file`` replaces Claude Code's own system prompt (the coding agent's) with
  ours, read from a file rather than the command line;
- ``--tools ""`` gives the model no built-in tool at all: it answers, it cannot read, edit or
  run anything of the user's;
- ``--strict-mcp-config`` with no ``--mcp-config`` loads no MCP server, neither the user's nor
  a project's: Claude Code never starts foundry-mcp (or anything else) from inside a research;
- ``--max-turns 1``: one answer, no agent loop; ``--no-session-persistence``: the thousands of
  calls of a research are not saved as resumable sessions.

The answer is the ``result`` message ``--output-format json`` prints: ``type: "result"``,
``subtype`` (``success`` or ``error_*``), ``is_error``, ``result`` (the text), ``usage``
(``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``,
``output_tokens``), ``modelUsage`` (by model name), ``total_cost_usd``, ``session_id``; on an
API failure ``is_error`` is true, ``result`` holds the message ("Not logged in · Please run
/login", "You've hit your limit · resets 3pm") and ``api_error_status`` the HTTP status when
there was one. ``total_cost_usd`` is the API list price of the call, not what a subscription
costs: it is not used.

Sources followed: the Claude Code CLI reference and "Run Claude Code programmatically"
(code.claude.com/docs, headless mode), the Agent SDK's ``SDKResultMessage`` type, the Claude
Code CHANGELOG (github.com/anthropics/claude-code: ``--tools``, ``--strict-mcp-config``,
``--system-prompt-file``, ``--no-session-persistence``), and the error texts users report on
its issue tracker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foundry_mcp.providers.llm.base import LLMRequest
from foundry_mcp.providers.llm.programs.base import (
    CLIAnswer,
    CLICall,
    CLIProvider,
    int_or_none,
    json_documents,
    model_options,
    prompt_text,
)
from foundry_mcp.providers.llm.programs.errors import CLIProgram
from foundry_mcp.providers.llm.programs.runner import CLIOutput

SYSTEM_FILE = "system.md"
OPTIONS = [
    "-p",
    "--output-format",
    "json",
    "--tools",
    "",
    "--strict-mcp-config",
    "--max-turns",
    "1",
    "--no-session-persistence",
]


NESTING_MARKERS = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")


class ClaudeCLI(CLIProvider):
    """Claude models through Claude Code (``claude``), on the user's subscription."""

    program = CLIProgram(
        product="Claude Code",
        program="claude",
        kind="claude-cli",
        env_var="FOUNDRY_MCP_CLAUDE_CLI",
        install="npm install -g @anthropic-ai/claude-code",
        login="Run `claude` once in a terminal and log in (/login).",
    )

    def call_for(self, request: LLMRequest, work_dir: Path) -> CLICall:
        args = [
            *OPTIONS,
            "--system-prompt-file",
            str(work_dir / SYSTEM_FILE),
            *model_options(request.model),
        ]
        return CLICall(
            args=args,
            stdin=prompt_text(request),
            files={SYSTEM_FILE: request.system},
            # Claude Code marks the processes it starts (foundry-mcp among them, when it is the
            # MCP client) with CLAUDECODE, and since 2.1.39 refuses to start where it is set:
            # "cannot be launched inside another Claude Code session". A call here is a separate,
            # non-interactive session, not a nested one.
            unset_env=NESTING_MARKERS,
        )

    def read(self, output: CLIOutput) -> CLIAnswer:
        result = _result_message(output.stdout)
        if result is None:
            raise self.unreadable("no result message in its JSON", output)
        text = result.get("result")
        failed = result.get("is_error") is True or result.get("subtype", "success") != "success"
        if failed or output.exit_code != 0:
            raise self.failed(
                _error_text(result), output, status=int_or_none(result.get("api_error_status"))
            )
        if not isinstance(text, str):
            raise self.unreadable("its result has no text", output)
        usage = result.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return CLIAnswer(
            text=text,
            model=_main_model(result.get("modelUsage")),
            input_tokens=_input_tokens(usage),
            output_tokens=int_or_none(usage.get("output_tokens")),
        )


def _result_message(stdout: str) -> dict[str, Any] | None:
    """The final ``result`` message: the one object of ``json``, or the last of an array
    (``--verbose``)."""
    found: dict[str, Any] | None = None
    for document in json_documents(stdout):
        candidates = document if isinstance(document, list) else [document]
        for item in candidates:
            if isinstance(item, dict) and (
                item.get("type") == "result" or ("is_error" in item and "type" not in item)
            ):
                found = item
    return found


def _error_text(result: dict[str, Any]) -> str:
    text = result.get("result")
    if isinstance(text, str) and text.strip():
        return text
    errors = result.get("errors")
    if isinstance(errors, list) and errors:
        return "; ".join(str(error) for error in errors)
    return f"the call ended with {result.get('subtype') or 'an error'}"


def _input_tokens(usage: dict[str, Any]) -> int | None:
    """All input tokens: fresh, written to the prompt cache and read from it."""
    parts = [
        int_or_none(usage.get(key))
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    counted = [part for part in parts if part is not None]
    return sum(counted) if counted else None


def _main_model(model_usage: Any) -> str | None:
    """The model that wrote the most output (Claude Code may use a small one on the side)."""
    if not isinstance(model_usage, dict) or not model_usage:
        return None

    def output_of(name: str) -> int:
        entry = model_usage.get(name)
        return int_or_none(entry.get("outputTokens")) or 0 if isinstance(entry, dict) else 0

    return max((str(name) for name in model_usage), key=output_of)
