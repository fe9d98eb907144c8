"""Which LLM a research uses when the configuration does not say: what the machine has.

Configuration always wins: a ``[research] default_provider`` (or ``FOUNDRY_MCP_DEFAULT_PROVIDER``)
is used as it is. Otherwise the first of these is chosen:

1. an API key for OpenAI, Anthropic or Gemini (in that order);
2. an assistant's command-line program on ``PATH`` (or at its configured ``command``), which
   answers on the user's subscription: Claude Code (``claude``), Codex (``codex``), Gemini CLI
   (``gemini``);
3. an OpenAI-compatible server on its default local port: Ollama (11434), LM Studio (1234).

The choice carries its reason, which ``doctor``, the first status of a research and its report
state, so it is never silent. With nothing found, the default provider stays, and its error says
what the machine could offer. A configured default that cannot run (no key) has an error naming
the file or environment variable that set it: a copied configuration is a common surprise.
"""

from __future__ import annotations

import http.client
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from foundry_mcp.config import ProviderSettings, Settings

KEYED_LLMS = ("openai", "anthropic", "gemini")
# Provider name, program and what users call it.
ASSISTANT_CLIS = (
    ("claude-cli", "claude", "Claude Code"),
    ("codex-cli", "codex", "Codex"),
    ("gemini-cli", "gemini", "Gemini CLI"),
)
# Provider name, port and product of the local servers probed.
LOCAL_SERVERS = (("ollama", 11434, "Ollama"), ("lmstudio", 1234, "LM Studio"))
PROBE_TIMEOUT_S = 0.3
# The setting that turns detection off, as a key for ``Settings.origin_of``.
DEFAULT_PROVIDER_KEY = ("research", "default_provider")

Which = Callable[[str], str | None]
# Asks a local server for its models: the first model id, or None when nothing answers.
Probe = Callable[[int], str | None]


@dataclass(frozen=True)
class LLMChoice:
    """The LLM provider a research uses by default, and why."""

    provider: str
    reason: str
    detected: bool  # chosen from what the machine has, not from the configuration
    base_url: str | None = None  # a local server found by its port
    model: str | None = None

    @property
    def statement(self) -> str:
        """One sentence for people: what was chosen and why."""
        if not self.detected:
            return f"LLM provider: {self.provider} ({self.reason})."
        return (
            f"LLM provider: {self.provider}, chosen because {self.reason}. Set [research] "
            "default_provider to choose another."
        )


def choose_llm(
    settings: Settings, *, which: Which = shutil.which, probe: Probe | None = None
) -> LLMChoice:
    """The default LLM provider for these settings on this machine (see the module)."""
    configured = settings.research.default_provider
    if "default_provider" in settings.research.model_fields_set:
        reason = (
            f"configured by {default_provider_origin(settings) or '[research] default_provider'}"
        )
        return LLMChoice(configured, reason, detected=False)
    for name in KEYED_LLMS:
        if settings.provider(name).key() is not None:
            reason = "its API key is configured"
            return LLMChoice(name, reason, detected=name != configured)
    for name, program, product in ASSISTANT_CLIS:
        path = cli_path(settings, name, program, which)
        if path is not None:
            reason = f"no API key is configured and the {product} program is at {path}"
            return LLMChoice(name, reason, detected=True)
    for name, port, product in LOCAL_SERVERS:
        model = (probe or probe_local_server)(port)
        if model is not None:
            reason = f"no API key is configured and {product} answers on 127.0.0.1:{port}"
            return LLMChoice(
                name,
                reason,
                detected=True,
                base_url=f"http://127.0.0.1:{port}/v1",
                model=model,
            )
    return LLMChoice(configured, "the default; nothing else was found", detected=False)


def cli_path(
    settings: Settings, name: str, program: str, which: Which = shutil.which
) -> str | None:
    """Where an assistant's program is: its configured ``command``, else ``program`` on PATH."""
    command = getattr(settings.provider(name), "command", None)
    return which(str(command) if command else program)


def probe_local_server(port: int) -> str | None:
    """The first model an OpenAI-compatible server on ``127.0.0.1:port`` lists, if one answers.

    Asked with the standard library's client: importing httpx for this one request would cost
    every command that opens the service a fifth of a second.
    """
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_TIMEOUT_S)
    try:
        connection.request("GET", "/v1/models")
        response = connection.getresponse()
        models = json.loads(response.read()).get("data") if response.status == 200 else None
    except (OSError, http.client.HTTPException, ValueError, AttributeError):
        return None
    finally:
        connection.close()
    if not isinstance(models, list) or not models:
        return None
    first = models[0].get("id") if isinstance(models[0], dict) else None
    return first if isinstance(first, str) and first else None


def apply_choice(settings: Settings, choice: LLMChoice) -> Settings:
    """The settings with ``choice`` as their default provider (a found server declared)."""
    if not choice.detected:
        return settings
    research = settings.research.model_copy(update={"default_provider": choice.provider})
    providers = dict(settings.providers)
    if choice.base_url is not None and choice.provider not in providers:
        providers[choice.provider] = ProviderSettings(
            type="openai", base_url=choice.base_url, model=choice.model
        )
    return settings.model_copy(update={"research": research, "providers": providers})


def zero_key_hint(settings: Settings | None = None) -> str:
    """What a machine without API keys can use, for the remediation of a missing key.

    When ``settings`` set ``[research] default_provider``, the hint names where (the file or
    the environment variable), since that setting is what keeps those programs unused.
    """
    named = [f"{product} (`{program}`)" for _, program, product in ASSISTANT_CLIS]
    programs = f"{', '.join(named[:-1])} or {named[-1]}"
    hint = (
        f"Without an API key: install and log in to {programs}, or run Ollama or LM Studio; "
        "foundry-mcp uses it when [research] default_provider is not set."
    )
    where = settings.origin_of(*DEFAULT_PROVIDER_KEY) if settings else None
    if where is None:
        return hint
    if where.startswith("environment variable "):
        return f"{hint} It is set by the {where}: unset it to let foundry-mcp choose."
    return f"{hint} It is set in {where}: remove it there to let foundry-mcp choose."


def default_provider_origin(settings: Settings) -> str | None:
    """Who set ``[research] default_provider``, for a sentence ("named by ..."): the file, or
    the environment variable; None when it has its default."""
    where = settings.origin_of(*DEFAULT_PROVIDER_KEY)
    if where is None or where.startswith("environment variable "):
        return f"the {where}" if where else None
    return f"[research] default_provider in {where}"
