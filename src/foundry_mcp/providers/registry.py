"""Builds provider adapters from settings, once per provider, and checks they are usable."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from foundry_mcp.config import (
    DEFAULT_MODELS,
    KNOWN_PROVIDER_KINDS,
    MCP_PREFIX,
    ProviderKind,
    Settings,
)
from foundry_mcp.config.provider_settings import (
    CLI_DEFAULT_MODEL,
    CLI_LLM_KINDS,
)
from foundry_mcp.errors import ProviderNotConfiguredError
from foundry_mcp.providers.detection import LLMChoice, default_provider_origin, zero_key_hint
from foundry_mcp.providers.llm.base import LLMProvider
from foundry_mcp.providers.resilience import ResilienceRegistry
from foundry_mcp.providers.search.base import SearchProvider, SourceType
from foundry_mcp.providers.search.bounds import SourceBounds
from foundry_mcp.providers.search_selection import (
    SearchSelection,
    key_hint,
)

if TYPE_CHECKING:
    from foundry_mcp.providers.mcp_sources.sources import McpSources
    from foundry_mcp.providers.pages.fetch import PageFetcher

LLM_KINDS: frozenset[ProviderKind] = CLI_LLM_KINDS | {"openai", "anthropic", "gemini"}

# The groups of LLM calls that can have their own provider lists, and the configuration keys
# that hold them ("provider[:model]" specs, primary first).
LLM_ROUTE_GROUPS: dict[str, tuple[str, str]] = {
    "planning": ("deep_research_planning_provider", "deep_research_planning_providers"),
    "analysis": ("deep_research_analysis_provider", "deep_research_analysis_providers"),
    "synthesis": ("deep_research_synthesis_provider", "deep_research_synthesis_providers"),
    "refinement": ("deep_research_refinement_provider", "deep_research_refinement_providers"),
    "summarization": ("summarization_provider", "summarization_providers"),
}
LENIENT_ROUTE_GROUPS = frozenset({"summarization"})  # unusable specs are skipped, not errors


def parse_provider_spec(spec: str) -> tuple[str, str | None]:
    """Split ``"openai:gpt-4.1-mini"`` into ``("openai", "gpt-4.1-mini")``."""
    name, _, model = spec.strip().partition(":")
    return name.strip().lower(), (model.strip() or None)


class ProviderRegistry:
    """The provider adapters of one process, created on first use and reused."""

    def __init__(self, settings: Settings, llm_choice: LLMChoice | None = None) -> None:
        self._settings = settings
        # The default LLM and why (configured, or found on this machine: providers.detection).
        self.llm_choice = llm_choice
        self._llms: dict[str, LLMProvider] = {}
        self._searches: dict[str, SearchProvider] = {}
        self._fetcher: PageFetcher | None = None
        self.mcp_sources: McpSources | None = None  # the process's, attached by the runtime
        # Adapters may be built in worker threads (their SDKs are slow to import and their
        # clients slow to create): one lock per adapter, so a slow one never holds up another.
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.warmed = threading.Event()  # set once runtime.warm_up is over, however it went
        # Timeout, retries, rate limits and circuit breakers: one policy per provider, shared
        # by every research of this process.
        self.resilience = ResilienceRegistry(settings)
        self._selection = SearchSelection(settings, self.search_class)

    @property
    def settings(self) -> Settings:
        return self._settings

    # ------------------------------------------------------------------ LLMs

    def resolve_llm(self, provider_id: str | None, model: str | None) -> tuple[str, str]:
        """The (provider, model) to use, or ``ProviderNotConfiguredError`` saying why not."""
        spec = provider_id or self._settings.research.default_provider
        name, spec_model = parse_provider_spec(spec)
        kind = self._settings.provider_kind(name)
        if kind not in LLM_KINDS:
            known = sorted(
                n
                for n in {*KNOWN_PROVIDER_KINDS, *self._settings.providers}
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
        # An assistant's program (claude-cli...) answers on its own login: no key.
        if settings.key() is None and not keyless_ok and kind not in CLI_LLM_KINDS:
            # The default provider, set in a file or variable: say where, it may be a surprise.
            named_by = None if provider_id else default_provider_origin(self._settings)
            raise ProviderNotConfiguredError(
                f"No API key is configured for the LLM provider '{name}'"
                + (f", named by {named_by}." if named_by else "."),
                remediation=f"{key_hint(name)} {zero_key_hint(self._settings)}",
            )
        # A program-backed provider (claude-cli...) lets its program choose when none is named.
        default = CLI_DEFAULT_MODEL if kind in CLI_LLM_KINDS else DEFAULT_MODELS.get(name)
        chosen = model or spec_model or settings.model or default
        if not chosen:
            raise ProviderNotConfiguredError(
                f"No model is configured for the LLM provider '{name}'.",
                remediation=f"Pass model=..., use provider_id='{name}:<model>', or set `model` "
                f"in [providers.{name}].",
            )
        return name, chosen

    def route_specs(self, group: str) -> list[str]:
        """The configured "provider[:model]" specs of a route group (empty: not configured)."""
        keys = LLM_ROUTE_GROUPS.get(group)
        if keys is None:
            return []
        research = self._settings.research
        primary, fallbacks = (getattr(research, key) for key in keys)
        return [spec for spec in [primary, *fallbacks] if spec and spec.strip()]

    def resolve_routes(self) -> dict[str, list[tuple[str, str]]]:
        """The configured per-phase provider lists, each as resolved (provider, model) pairs.

        Raises ``ProviderNotConfiguredError`` naming the configuration key of the first phase
        spec that is not usable (unknown provider, missing key or model). Unusable
        summarization specs are left out instead (token management warns about them).
        """
        routes: dict[str, list[tuple[str, str]]] = {}
        research = self._settings.research
        for group, (primary_key, fallbacks_key) in LLM_ROUTE_GROUPS.items():
            resolved = []
            primary = getattr(research, primary_key)
            for spec in self.route_specs(group):
                key = primary_key if spec == primary else fallbacks_key
                try:
                    resolved.append(self.resolve_llm(spec, None))
                except ProviderNotConfiguredError as exc:
                    if group in LENIENT_ROUTE_GROUPS:
                        continue
                    where = self._settings.origin_of("research", key)
                    raise ProviderNotConfiguredError(
                        f"[research] {key}{f' (set in {where})' if where else ''} names "
                        f"'{spec}': {exc.message}",
                        remediation=f"{exc.remediation} Or correct [research] {key}.",
                    ) from None
            if resolved:
                routes[group] = resolved
        return routes

    def llm(self, name: str) -> LLMProvider:
        """The adapter for an LLM provider behind its resilience policy (resolve it first).

        The first call for a provider creates its SDK client, which takes tens to hundreds of
        milliseconds (TLS setup): call it from a worker thread, not the event loop.
        """
        return self.resilience.wrap_llm(self.llm_adapter(name))

    def llm_adapter(self, name: str) -> LLMProvider:
        """The bare adapter, without retries or limits (for health probes)."""
        found = self._llms.get(name)
        if found is not None:
            return found
        with self._lock_for(f"llm:{name}"):
            return self._llm_locked(name)

    def is_built(self, name: str) -> bool:
        """Whether the adapter of provider ``name`` (an LLM or a search) exists already."""
        return name in self._llms or name in self._searches

    def _llm_locked(self, name: str) -> LLMProvider:
        if name not in self._llms:
            settings = self._settings.provider(name)
            kind = self._settings.provider_kind(name)
            if kind in CLI_LLM_KINDS:
                from foundry_mcp.providers.llm.programs.adapters import cli_adapter

                self._llms[name] = cli_adapter(kind, name, settings)
                return self._llms[name]
            # SDK retries stay off: the resilience policy is the only one that retries.
            args = (name, settings.key(), settings.base_url, settings.timeout_for("llm"), 0)
            self._llms[name] = self.llm_class(name)(*args)
        return self._llms[name]

    def llm_class(self, name: str) -> type[LLMAdapter]:
        """The adapter class of an LLM provider (importing it imports nothing of its SDK)."""
        kind = self._settings.provider_kind(name)
        if kind in CLI_LLM_KINDS:
            from foundry_mcp.providers.llm.programs.adapters import CLI_ADAPTERS

            return CLI_ADAPTERS[kind]
        if kind == "anthropic":
            from foundry_mcp.providers.llm.anthropic import AnthropicProvider

            return AnthropicProvider
        if kind == "gemini":
            from foundry_mcp.providers.llm.gemini import GeminiProvider

            return GeminiProvider
        from foundry_mcp.providers.llm.openai import OpenAIProvider

        return OpenAIProvider

    # ------------------------------------------------------------------ search

    def search_providers(
        self, source_types: Sequence[str] = (), *, announce: bool = True
    ) -> tuple[list[str], list[str]]:
        """The search providers of a research asking for ``source_types``, and warnings (see
        :meth:`SearchSelection.for_research`).

        With ``announce`` (a research is starting), while the web search with no key, chosen
        for lack of keys, has sent no search yet, the warnings say where the questions go and
        how to turn it off (:mod:`foundry_mcp.providers.keyless_notice`); pass False to only
        look.
        """
        usable, warnings = self._selection.for_research(source_types)
        if announce:
            from foundry_mcp.providers.keyless_notice import pending_statement

            notice = pending_statement(self._settings, usable)
            if notice is not None:
                warnings = [*warnings, notice]
        return usable, warnings

    def usable_search_providers(self, names: list[str]) -> tuple[list[str], list[str]]:
        """The named search providers that can run, and warnings for the rest."""
        return self._selection.usable(names)

    def search_types(self, name: str) -> tuple[SourceType, ...]:
        """The kinds of sources search provider ``name`` serves."""
        return self._selection.types(name)

    def search_problem(self, name: str) -> str | None:
        """Why search provider ``name`` cannot run (a warning with the fix), or None."""
        return self._selection.problem(name)

    def search(self, name: str) -> SearchProvider:
        """The adapter for a search provider (check it with ``usable_search_providers``).

        Adapters are built once and reused.
        """
        with self._lock_for(f"search:{name}"):
            return self._search_locked(name)

    def _search_locked(self, name: str) -> SearchProvider:
        if name not in self._searches:
            self._searches[name] = self._new_search(name)
        return self._searches[name]

    def attach_mcp_sources(self, sources: McpSources) -> None:
        """The process's connections to its MCP sources, for their search adapters."""
        self.mcp_sources = sources

    def bounds_report(self, names: Sequence[str], bounds: SourceBounds) -> dict[str, Any]:
        """See :meth:`SearchSelection.bounds_report`."""
        return self._selection.bounds_report(names, bounds)

    def search_class(self, name: str) -> type:
        """The adapter class of a search provider (importing it imports no SDK)."""
        kind = self._settings.provider_kind(name)
        if kind == "mcp":
            from foundry_mcp.providers.mcp_sources.search import McpSourceSearch

            return McpSourceSearch
        if kind == "google":
            from foundry_mcp.providers.search.google import GoogleSearch

            return GoogleSearch
        if kind == "semantic_scholar":
            from foundry_mcp.providers.search.semantic_scholar import SemanticScholarSearch

            return SemanticScholarSearch
        if kind == "local":
            from foundry_mcp.providers.search.local import LocalDocuments

            return LocalDocuments
        if kind == "ddgs":
            from foundry_mcp.providers.search.keyless import KeylessSearch

            return KeylessSearch
        from foundry_mcp.providers.search.tavily import TavilySearch

        return TavilySearch

    def _new_search(self, name: str) -> SearchProvider:
        settings = self._settings.provider(name)
        kind = self._settings.provider_kind(name)
        if kind == "mcp":
            from foundry_mcp.providers.mcp_sources.search import McpSourceSearch

            if self.mcp_sources is None:  # a registry used outside a runtime
                raise ProviderNotConfiguredError(
                    f"MCP source {name!r} can only be searched inside a running server or command.",
                    remediation="Run the research through foundry-mcp (server or CLI).",
                )
            return McpSourceSearch(self.mcp_sources.connections[name.removeprefix(MCP_PREFIX)])
        if kind == "google":
            from foundry_mcp.providers.search.google import GoogleSearch

            return GoogleSearch(
                name,
                settings.key() or "",
                (settings.cse_id or "").strip(),
                settings.base_url,
                settings.timeout_for("search"),
            )
        if kind == "semantic_scholar":
            from foundry_mcp.providers.search.semantic_scholar import SemanticScholarSearch

            return SemanticScholarSearch(
                name, settings.key(), settings.base_url, settings.timeout_for("search")
            )
        if kind == "local":
            from foundry_mcp.providers.search.local import INDEX_FILE, LocalDocuments

            research = self._settings.research
            return LocalDocuments(name, research.local, research.research_dir / INDEX_FILE)
        if kind == "ddgs":
            from foundry_mcp.providers.keyless_notice import mark_sent
            from foundry_mcp.providers.search.keyless import KeylessSearch

            return KeylessSearch(
                name,
                settings.timeout_for("search"),
                on_sent=partial(mark_sent, self._settings, name),
                region=settings.region,
                safesearch=settings.safesearch,
                backends=settings.backends,
                news_backends=settings.news_backends,
            )
        from foundry_mcp.providers.search.tavily import TavilySearch

        return TavilySearch(
            name,
            settings.key() or "",
            settings.base_url,
            settings.timeout_for("search"),
            search_depth=self._settings.research.tavily_search_depth,
            max_page_chars=self._settings.research.fetch.max_page_chars,
        )

    def fetcher(self) -> PageFetcher:
        """The page fetcher of this process (``[research.fetch]``), created on first use."""
        with self._lock_for("fetcher"):
            return self._fetcher_locked()

    def _fetcher_locked(self) -> PageFetcher:
        if self._fetcher is None:
            from foundry_mcp.providers.pages.fetch import PageFetcher

            self._fetcher = PageFetcher(self._settings.research.fetch)
        return self._fetcher

    def _lock_for(self, key: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    async def aclose(self) -> None:
        """Close every HTTP client this registry opened."""
        for llm in list(self._llms.values()):
            await llm.aclose()
        for search in list(self._searches.values()):
            await search.aclose()
        if self._fetcher is not None:
            await self._fetcher.aclose()
            self._fetcher = None
        self._llms.clear()
        self._searches.clear()


class LLMAdapter(LLMProvider, Protocol):
    """The constructor and warm-up the registry expects of an LLM adapter class."""

    def __init__(
        self,
        name: str,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_retries: int = 0,
    ) -> None: ...

    @classmethod
    def warm_up(cls, model: str, base_url: str | None) -> None: ...
