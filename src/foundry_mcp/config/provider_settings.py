"""The ``[providers.<name>]`` and ``[pricing."provider:model"]`` tables, and the provider kinds
and default models they name."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    SecretStr,
    field_validator,
)

from foundry_mcp.config.effects import (
    LOWER_SPENDS,
    LOWER_THAN_SET,
    OFF_SPENDS,
    RUNS,
    SENDS,
    SPENDS,
    Harmless,
)
from foundry_mcp.config.section import Section

ProviderType = Literal[
    "openai",
    "anthropic",
    "gemini",
    "tavily",
    "google",
    "semantic_scholar",
    "local",
    "ddgs",
    "claude-cli",
    "codex-cli",
    "gemini-cli",
]
# What a provider name stands for: a [providers.*] type, or "mcp" for the search of an
# [mcp_sources.<name>] server (named "mcp.<name>": see Settings.provider_kind).
ProviderKind = ProviderType | Literal["mcp"]
MCP_PREFIX = "mcp."

# The API flavour of each provider name we know; other names must say `type = ...`.
KNOWN_PROVIDER_KINDS: dict[str, ProviderKind] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "tavily": "tavily",
    "google": "google",
    "semantic_scholar": "semantic_scholar",
    "local": "local",
    "ddgs": "ddgs",  # web search with no key ("web (no key)")
    # Assistants' programs that answer on their user's subscription (providers/llm/programs/).
    "claude-cli": "claude-cli",
    "codex-cli": "codex-cli",
    "gemini-cli": "gemini-cli",
}
CLI_LLM_KINDS: frozenset[ProviderKind] = frozenset({"claude-cli", "codex-cli", "gemini-cli"})
# The model of a program-backed provider when none is named: the program's own choice.
CLI_DEFAULT_MODEL = "default"
# Calls a program-backed provider runs at once when its table does not say: each is a whole
# program on the user's one subscription (providers/llm/programs/runner.py).
CLI_MAX_IN_FLIGHT = 2

DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4.1-mini",
    "anthropic": "claude-sonnet-5",
    "gemini": "gemini-2.5-flash",
}


class ProviderSettings(Section):
    """One ``[providers.<name>]`` table."""

    type: Annotated[ProviderType | None, SENDS] = None
    api_key: Annotated[SecretStr | None, SENDS] = None
    base_url: Annotated[str | None, SENDS] = None
    model: Annotated[str | None, SPENDS] = None
    # Seconds one request may take; None: see timeout_for.
    timeout: Annotated[float | None, LOWER_THAN_SET] = Field(None, gt=0, le=3600)
    max_retries: Annotated[int, LOWER_SPENDS] = Field(2, ge=0, le=10)
    cse_id: Annotated[str | None, SENDS] = None  # Google Custom Search engine id
    requests_per_minute: Annotated[float | None, LOWER_THAN_SET] = Field(None, gt=0)
    max_in_flight: Annotated[int | None, LOWER_THAN_SET] = Field(None, ge=1, le=100)
    circuit_breaker_failures: Annotated[
        int, Harmless("when a failing provider is paused; it sends and spends nothing more")
    ] = Field(5, ge=1, le=100)
    circuit_breaker_reset_seconds: Annotated[
        float, Harmless("how long a failing provider stays paused")
    ] = Field(30.0, gt=0, le=3600)
    # Search providers only: a slow search is sent again, which may cost a credit.
    hedge_requests: Annotated[bool, OFF_SPENDS] = True
    # The program of a claude-cli, codex-cli or gemini-cli provider (None: found on PATH).
    command: Annotated[str | None, RUNS] = None
    # The keyless web search (type "ddgs"): its region ("us-en", "de-de", "wt-wt" for none),
    # safe search, and the ddgs backends asked in order (None: the adapter's defaults).
    region: Annotated[
        str | None,
        Harmless(
            "the region the keyless search asks results for; the question goes to the same engines"
        ),
    ] = Field(None, pattern=r"^[A-Za-z]{2}-[A-Za-z]{2}$")
    safesearch: Annotated[
        Literal["on", "moderate", "off"] | None,
        Harmless("the safe-search level of the keyless search"),
    ] = None
    backends: Annotated[list[str] | None, SENDS] = None
    news_backends: Annotated[list[str] | None, SENDS] = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    def key(self) -> str | None:
        """The API key in clear, for handing to an SDK only."""
        if self.api_key is None:
            return None
        secret = self.api_key.get_secret_value().strip()
        return secret or None

    def timeout_for(self, role: Literal["llm", "search"]) -> float:
        """Seconds one request may take: ``timeout``, else 120 for an LLM and 30 for a search."""
        if self.timeout is not None:
            return self.timeout
        return 30.0 if role == "search" else 120.0


class PriceSettings(Section):
    """One ``[pricing."provider:model"]`` table: US dollars per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
