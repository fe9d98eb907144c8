"""Google's Gemini CLI as an LLM provider, answering on the user's Google login.

One call runs, in a private empty directory::

    gemini --output-format json --approval-mode default --extensions none \\
        --allowed-mcp-server-names foundry-mcp-none --policy no-tools.toml [--model MODEL]

with the prompt on stdin (a non-terminal stdin runs Gemini CLI headless and is its prompt) and
two variables: ``GEMINI_SYSTEM_MD`` names ``system.md`` of that directory, which replaces Gemini
CLI's own system prompt with ours, and ``GEMINI_CLI_TRUST_WORKSPACE=true`` trusts that empty
directory (headless Gemini CLI refuses to run in an untrusted folder). Why each option:

- ``--policy no-tools.toml``: a policy rule that denies every tool (``toolName = "*"``); a
  denied tool is not even shown to the model. ``--approval-mode default`` keeps a user's
  ``yolo`` default from applying;
- ``--allowed-mcp-server-names`` naming a server nobody has starts none of the user's MCP
  servers, and ``--extensions none`` loads no extension (they bring servers and tools too): Gemini
  CLI never starts foundry-mcp (or anything else) from inside a research.

``--output-format json`` prints one object: ``response`` (the answer), ``stats`` (``models``:
by model name, ``tokens`` with ``prompt``, ``candidates``, ``thoughts``, ``cached``...), and on
failure ``error`` (``type``, ``message``, ``code``), printed on stderr: e.g. "Please set an Auth
method ..." (exit 41) or a ``TerminalQuotaError``.

Sources followed: Gemini CLI's docs in github.com/google-gemini/gemini-cli
(``docs/cli/headless.md``, ``cli-reference.md``, ``system-prompt.md``,
``trusted-folders.md``, ``reference/policy-engine.md``) and its sources for the JSON shapes
(``packages/core/src/output/types.ts``, ``telemetry/uiTelemetry.ts``, ``cli/src/utils/
errors.ts``, ``validateNonInterActiveAuth.ts``).
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
POLICY_FILE = "no-tools.toml"
NO_MCP_SERVER = "foundry-mcp-none"  # allowing only a server nobody has starts none
NO_TOOLS_POLICY = """\
# foundry-mcp asks for answers only: every tool, built-in or MCP, is denied.
[[rule]]
toolName = "*"
decision = "deny"
priority = 999
"""
OPTIONS = [
    "--output-format",
    "json",
    "--approval-mode",
    "default",
    "--extensions",
    "none",
    "--allowed-mcp-server-names",
    NO_MCP_SERVER,
]


class GeminiCLI(CLIProvider):
    """Gemini models through Gemini CLI (``gemini``), on the user's Google login."""

    program = CLIProgram(
        product="Gemini CLI",
        program="gemini",
        kind="gemini-cli",
        env_var="FOUNDRY_MCP_GEMINI_CLI",
        install="npm install -g @google/gemini-cli",
        login="Run `gemini` once in a terminal and sign in with Google.",
    )

    def call_for(self, request: LLMRequest, work_dir: Path) -> CLICall:
        args = [*OPTIONS, "--policy", str(work_dir / POLICY_FILE), *model_options(request.model)]
        return CLICall(
            args=args,
            stdin=prompt_text(request),
            files={SYSTEM_FILE: request.system, POLICY_FILE: NO_TOOLS_POLICY},
            env={
                "GEMINI_SYSTEM_MD": str(work_dir / SYSTEM_FILE),
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
            },
        )

    def read(self, output: CLIOutput) -> CLIAnswer:
        document = _output_object(output.stdout) or _output_object(output.stderr)
        if document is None:
            raise self.unreadable("no JSON object in its output", output)
        error = document.get("error")
        if isinstance(error, dict):
            kind = str(error.get("type") or "")
            message = str(error.get("message") or "an error")
            raise self.failed(f"{kind}: {message}" if kind else message, output)
        text = document.get("response")
        if not isinstance(text, str):
            raise self.unreadable("its JSON has no response", output)
        if output.exit_code != 0:
            raise self.failed(output.stderr or f"exit status {output.exit_code}", output)
        model, input_tokens, output_tokens = _usage(document.get("stats"))
        return CLIAnswer(
            text=text, model=model, input_tokens=input_tokens, output_tokens=output_tokens
        )


def _output_object(text: str) -> dict[str, Any] | None:
    """The last JSON object with a response or an error in ``text``."""
    found: dict[str, Any] | None = None
    for document in json_documents(text):
        if isinstance(document, dict) and ("response" in document or "error" in document):
            found = document
    return found


def _usage(stats: Any) -> tuple[str | None, int | None, int | None]:
    """(the model that answered, input tokens, output tokens incl. thoughts) from ``stats``."""
    models = stats.get("models") if isinstance(stats, dict) else None
    if not isinstance(models, dict) or not models:
        return None, None, None
    main: str | None = None
    most = -1
    input_tokens = output_tokens = 0
    for name, metrics in models.items():
        tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
        if not isinstance(tokens, dict):
            continue
        prompt = int_or_none(tokens.get("prompt")) or 0
        written = (int_or_none(tokens.get("candidates")) or 0) + (
            int_or_none(tokens.get("thoughts")) or 0
        )
        input_tokens += prompt
        output_tokens += written
        if written > most:
            main, most = str(name), written
    if main is None:
        return None, None, None
    return main, input_tokens, output_tokens
