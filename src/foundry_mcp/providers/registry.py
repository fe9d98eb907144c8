"""Builds provider adapters from settings, once per provider, and checks they are usable."""

from __future__ import annotations

import threading

from foundry_mcp.config import DEFAULT_MODELS, PROVIDER_ENV, ProviderKind, Settings
from foundry_mcp.errors import ProviderNotConfiguredError
from foundry_mcp.providers.llm.base import LLMProvider
from foundry_mcp.providers.search.base import SearchProvider

LLM_KINDS: frozenset[ProviderKind] = frozenset({"openai", "anthropic"})
SEARCH_KINDS: frozenset[ProviderKind] = frozenset({"tavily"})


def parse_provider_spec(spec: str) -> tuple[str, str | None]:
    """Split ``"openai:gpt-4.1-mini"`` into ``("openai", "gpt-4.1-mini")``."""
    name, _, model = spec.strip().partition(":")
    return name.strip().lower(), (model.strip() or None)


def _key_hint(name: str) -> str:
    variables = [variable for variable, key in PROVIDER_ENV.get(name, ()) if key == "api_key"]
    where = f"`api_key` in [providers.{name}] of ~/.foundry-mcp.toml"
    if variables:
        where = f"{variables[0]} in the MCP server's env block, or {where}"
    return f"Set {where}."


class ProviderRegistry:
    """The provider adapters of one process, created on first use and reused."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._llms: dict[str, LLMProvider] = {}
        self._searches: dict[str, SearchProvider] = {}
        # Adapters may be built in a worker thread (their SDK clients are slow to create).
        self._lock = threading.Lock()
        self.warmed = threading.Event()

    # ------------------------------------------------------------------ LLMs

    def resolve_llm(self, provider_id: str | None, model: str | None) -> tuple[str, str]:
        """The (provider, model) to use, or ``ProviderNotConfiguredError`` saying why not."""
        spec = provider_id or self._settings.research.default_provider
        name, spec_model = parse_provider_spec(spec)
        kind = self._settings.provider_kind(name)
        if kind not in LLM_KINDS:
            known = sorted(
                n
                for n in {*DEFAULT_MODELS, *self._settings.providers}
                if self._settings.provider_kind(n) in LLM_KINDS
            )
            raise ProviderNotConfiguredError(
                f"'{name}' is not an LLM provider foundry-mcp knows.",
                remediation=(
                    f"Use one of {', '.join(known)} (e.g. provider_id='openai:gpt-4.1-mini'), "
                    "or declare an OpenAI-compatible server as [providers.<name>] with "
                    'type = "openai" and base_url.'
                ),
            )
        settings = self._settings.provider(name)
        # A keyless OpenAI-compatible server (Ollama, vLLM) is fine once a base_url is set.
        keyless_ok = kind == "openai" and settings.base_url is not None and name != "openai"
        if settings.key() is None and not keyless_ok:
            raise ProviderNotConfiguredError(
                f"No API key is configured for the LLM provider '{name}'.",
                remediation=_key_hint(name),
            )
        chosen = model or spec_model or settings.model or DEFAULT_MODELS.get(name)
        if not chosen:
            raise ProviderNotConfiguredError(
                f"No model is configured for the LLM provider '{name}'.",
                remediation=f"Pass model=..., use provider_id='{name}:<model>', or set `model` "
                f"in [providers.{name}].",
            )
        return name, chosen

    def llm(self, name: str) -> LLMProvider:
        """The adapter for an LLM provider (resolve it first with ``resolve_llm``).

        The first call for a provider creates its SDK client, which takes tens to hundreds of
        milliseconds (TLS setup): call it from a worker thread, not the event loop.
        """
        with self._lock:
            return self._llm_locked(name)

    def _llm_locked(self, name: str) -> LLMProvider:
        if name not in self._llms:
            settings = self._settings.provider(name)
            kind = self._settings.provider_kind(name)
            args = (name, settings.key(), settings.base_url, settings.timeout, settings.max_retries)
            if kind == "anthropic":
                from foundry_mcp.providers.llm.anthropic import AnthropicProvider

                self._llms[name] = AnthropicProvider(*args)
            else:
                from foundry_mcp.providers.llm.openai import OpenAIProvider

                self._llms[name] = OpenAIProvider(*args)
        return self._llms[name]

    # ------------------------------------------------------------------ search

    def usable_search_providers(self, names: list[str]) -> tuple[list[str], list[str]]:
        """The configured search providers that can run, in order, and warnings for the rest.

        Raises ``ProviderNotConfiguredError`` when none is usable.
        """
        usable: list[str] = []
        warnings: list[str] = []
        for raw in names:
            name = raw.strip().lower()
            kind = self._settings.provider_kind(name)
            if kind not in SEARCH_KINDS:
                warnings.append(f"Search provider '{name}' is not supported yet; skipped.")
                continue
            if self._settings.provider(name).key() is None:
                warnings.append(f"Search provider '{name}' has no API key; skipped.")
                continue
            usable.append(name)
        if not usable:
            detail = " ".join(warnings) or "deep_research_providers is empty."
            raise ProviderNotConfiguredError(
                f"No usable search provider. {detail}",
                remediation=(
                    f"{_key_hint('tavily')} Then list it in [research] deep_research_providers."
                ),
            )
        return usable, warnings

    def search(self, name: str) -> SearchProvider:
        """The adapter for a search provider (check it with ``usable_search_providers``)."""
        with self._lock:
            return self._search_locked(name)

    def _search_locked(self, name: str) -> SearchProvider:
        if name not in self._searches:
            settings = self._settings.provider(name)
            from foundry_mcp.providers.search.tavily import TavilySearch

            self._searches[name] = TavilySearch(
                name, settings.key() or "", settings.base_url, settings.timeout
            )
        return self._searches[name]

    async def aclose(self) -> None:
        """Close every HTTP client this registry opened."""
        for llm in self._llms.values():
            await llm.aclose()
        for search in self._searches.values():
            await search.aclose()
        self._llms.clear()
        self._searches.clear()

    def warm_up(self) -> None:
        """Build the default providers' clients, then import the other SDKs.

        Run it in a worker thread at start-up: importing the SDKs takes seconds in total, and a
        first import inside the event loop would stall every other request meanwhile.
        """
        research = self._settings.research
        try:
            try:
                name, _ = self.resolve_llm(None, None)
                self.llm(name)
                for search in self.usable_search_providers(research.deep_research_providers)[0]:
                    self.search(search)
            except ProviderNotConfiguredError:
                pass  # reported to the user when they start a research
            import anthropic  # noqa: F401
            import openai  # noqa: F401
            import tavily  # noqa: F401
        finally:
            self.warmed.set()
