"""OpenAI Codex's ``codex exec`` as an LLM provider, answering on the user's ChatGPT login.

One call runs, in a private empty directory::

    codex -c features.shell_tool=false -c web_search="disabled" \\
        [-c mcp_servers.<name>.enabled=false ...] \\
        exec --json --sandbox read-only --skip-git-repo-check [--model MODEL] -

with the whole prompt on stdin (``-`` tells ``codex exec`` to read it there). Why each option:

- ``--sandbox read-only``: whatever the model tries, nothing is written and no command reaches
  the network; ``features.shell_tool=false`` removes the shell tool itself and
  ``web_search="disabled"`` the web search: the model answers, it does not act;
- every MCP server of the user's ``$CODEX_HOME/config.toml`` is switched off for the call
  (``mcp_servers.<name>.enabled=false``), so Codex never starts foundry-mcp (or anything else)
  from inside a research;
- ``--skip-git-repo-check``: the call runs in an empty directory, not a repository.

``codex exec`` has no system-prompt option that every version knows, so the system prompt goes
first in the stdin text, inside ``<instructions>`` tags, followed by the user prompt.

``--json`` prints JSON Lines events: ``thread.started``, ``turn.started``, ``item.completed``
(an ``agent_message`` item carries the answer's ``text``), ``turn.completed`` (``usage``:
``input_tokens``, ``cached_input_tokens``, ``output_tokens``), and on failure ``error``
(``message``) and ``turn.failed`` (``error.message``), e.g. "You've hit your usage limit ...
try again at 12:16 PM" or "unexpected status 401 Unauthorized". The events do not name the
model.

Sources followed: Codex's ``docs/exec.md`` and ``docs/config.md`` (``-c key=value`` overrides,
``mcp_servers.<id>.enabled``, sandbox modes), ``codex-rs/exec/src/exec_events.rs`` and
``cli.rs`` (the event types and ``exec`` options) in github.com/openai/codex, its feature table
(``shell_tool``) and config (``web_search`` modes), and error texts reported on its tracker.
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
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

log = logging.getLogger(__name__)

TOOLS_OFF = ["-c", "features.shell_tool=false", "-c", 'web_search="disabled"']
EXEC_OPTIONS = ["exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check"]
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")  # addressable in a dotted -c key


class CodexCLI(CLIProvider):
    """OpenAI models through Codex (``codex``), on the user's ChatGPT plan."""

    program = CLIProgram(
        product="Codex",
        program="codex",
        kind="codex-cli",
        env_var="FOUNDRY_MCP_CODEX_CLI",
        install="npm install -g @openai/codex",
        login="Run `codex login` in a terminal (or `codex` and sign in with ChatGPT).",
    )

    def call_for(self, request: LLMRequest, work_dir: Path) -> CLICall:
        args = [*TOOLS_OFF, *_mcp_servers_off(), *EXEC_OPTIONS, *model_options(request.model)]
        args.append("-")  # the prompt is on stdin
        stdin = f"<instructions>\n{request.system}\n</instructions>\n\n{prompt_text(request)}"
        return CLICall(args=args, stdin=stdin)

    def read(self, output: CLIOutput) -> CLIAnswer:
        answer: str | None = None
        usage: dict[str, Any] = {}
        failure: str | None = None
        for event in json_documents(output.stdout):
            if not isinstance(event, dict):
                continue
            kind = event.get("type")
            if kind == "item.completed":
                item = event.get("item")
                if isinstance(item, dict) and item.get("type") == "agent_message":
                    text = item.get("text")
                    answer = text if isinstance(text, str) else answer
            elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
                usage = event["usage"]
            elif kind == "turn.failed":
                error = event.get("error")
                message = error.get("message") if isinstance(error, dict) else None
                failure = str(message or "the turn failed")
            elif kind == "error" and failure is None:
                failure = str(event.get("message") or "an error")
        if failure is not None and (answer is None or output.exit_code != 0):
            raise self.failed(failure, output)
        if answer is None:
            raise self.unreadable("no agent_message in its JSON events", output)
        if output.exit_code != 0:
            raise self.failed(output.stderr or f"exit status {output.exit_code}", output)
        return CLIAnswer(
            text=answer,
            input_tokens=int_or_none(usage.get("input_tokens")),
            output_tokens=int_or_none(usage.get("output_tokens")),
        )


def _mcp_servers_off() -> list[str]:
    """``-c mcp_servers.<name>.enabled=false`` for each MCP server the user configured."""
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    try:
        with (home / "config.toml").open("rb") as config:
            servers = tomllib.load(config).get("mcp_servers")
    except (OSError, tomllib.TOMLDecodeError):
        return []  # no configuration (or one Codex will report itself)
    args: list[str] = []
    for name in servers if isinstance(servers, dict) else {}:
        if _SERVER_NAME.match(str(name)):
            args += ["-c", f"mcp_servers.{name}.enabled=false"]
        else:
            log.warning("Codex MCP server %r cannot be switched off for a call", name)
    return args
