"""The assistants' programs as LLM providers, by provider kind (see ``base``)."""

from __future__ import annotations

from foundry_mcp.config import ProviderSettings
from foundry_mcp.providers.llm.programs.base import CLIProvider
from foundry_mcp.providers.llm.programs.claude import ClaudeCLI
from foundry_mcp.providers.llm.programs.codex import CodexCLI
from foundry_mcp.providers.llm.programs.gemini import GeminiCLI

CLI_ADAPTERS: dict[str, type[CLIProvider]] = {
    "claude-cli": ClaudeCLI,
    "codex-cli": CodexCLI,
    "gemini-cli": GeminiCLI,
}


def cli_adapter(kind: str, name: str, settings: ProviderSettings) -> CLIProvider:
    """The adapter of provider ``name`` of program kind ``kind``, from its settings."""
    return CLI_ADAPTERS[kind](
        name,
        None,
        None,
        settings.timeout_for("llm"),
        command=settings.command,
        max_in_flight=settings.max_in_flight,
    )
