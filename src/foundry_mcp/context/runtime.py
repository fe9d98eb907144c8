"""Token management's links to one server process: settings, provider checks, caches, archive.

The research service owns one ``ContextServices``. When a research starts or resumes, the
service resolves the ``[research]`` token keys into the research's ``TokenBudgetOptions`` (so a
run, and a resume after a settings change, uses the settings of that moment). Summaries are
asked through ``ResearchLLM.ask("summarization", ...)``, which routes them to
``summarization_provider(s)``; the specs are checked here so that unusable ones are reported.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from foundry_mcp.context.archive import ContentArchive, archive_dir
from foundry_mcp.context.budget import runtime_overhead_for
from foundry_mcp.context.cache import SummaryCache
from foundry_mcp.context.limits import client_window, model_limits
from foundry_mcp.context.options import TokenBudgetOptions
from foundry_mcp.errors import FoundryError

if TYPE_CHECKING:
    from foundry_mcp.config import Settings
    from foundry_mcp.providers.registry import ProviderRegistry

log = logging.getLogger(__name__)

_caches: dict[Path, SummaryCache] = {}
_lock = threading.Lock()


class ContextServices:
    """What token management needs from the process: settings and provider adapters."""

    def __init__(self, settings: Settings, providers: ProviderRegistry | None = None) -> None:
        self.settings = settings
        self.providers = providers

    # ------------------------------------------------------------------ options

    def token_options(self, provider: str, model: str) -> tuple[TokenBudgetOptions, list[str]]:
        """The research's token options from ``[research]``, and warnings about them."""
        research = self.settings.research
        narrowing = self.settings.narrowing  # an untrusted file's: it only lowers what is read
        ceilings = narrowing.model_context_overrides
        warnings: list[str] = []
        limits = model_limits(model, provider, research.model_context_overrides, ceilings)
        if limits.source == "default":
            warnings.append(
                f"The context window of model '{model}' is not known; {limits.context_window:,} "
                "tokens are assumed. If it is larger, set it in [research] "
                f'model_context_overrides, e.g. {{ "{model}" = 128000 }}.'
            )
        given = [research.summarization_provider, *research.summarization_providers]
        specs = [spec.strip() for spec in given if spec and spec.strip()]
        usable: list[str] = []
        for spec in specs:
            resolved = self._resolve(spec, warnings)
            if resolved and resolved not in usable:
                usable.append(resolved)
        if specs and not usable:
            warnings.append("No summarization provider is usable; the research's model summarizes.")
        archive = archive_dir(research.research_dir, research.research_archive_dir)
        options = TokenBudgetOptions(
            enabled=research.token_management_enabled,
            safety_margin=research.token_safety_margin,
            runtime_overhead=runtime_overhead_for(
                provider, research.runtime_overhead, narrowing.runtime_overhead
            ),
            assistant_overhead=research.assistant_overhead,
            client_window=client_window(research.model_context_overrides),
            context_window=limits.context_window,
            max_output=limits.max_output,
            limits_source=limits.source,
            model_context_overrides=dict(research.model_context_overrides),
            model_window_ceilings=dict(ceilings),
            summarization_providers=usable,
            summarization_timeout=research.summarization_timeout,
            summarization_cache=research.summarization_cache_enabled,
            allow_content_dropping=research.allow_content_dropping,
            archive_enabled=research.content_archive_enabled,
            archive_dir=str(archive),
            archive_ttl_hours=research.content_archive_ttl_hours,
            cache_dir=str(research.research_dir),
        )
        return options, warnings

    def _resolve(self, spec: str, warnings: list[str]) -> str | None:
        if self.providers is None:
            return spec
        try:
            name, model = self.providers.resolve_llm(spec, None)
        except FoundryError as exc:
            warnings.append(
                f"Summarization provider '{spec}' is not usable ({exc.message}); skipped."
            )
            return None
        return f"{name}:{model}"

    # ------------------------------------------------------------------ housekeeping

    def archive(self) -> ContentArchive:
        research = self.settings.research
        return ContentArchive(
            archive_dir(research.research_dir, research.research_archive_dir),
            research.content_archive_ttl_hours,
        )

    def purge_archive(self) -> int:
        """Remove archive records older than ``content_archive_ttl_hours`` (at start-up)."""
        try:
            return self.archive().purge_expired()
        except OSError as exc:
            log.warning("content archive cleanup failed: %s", exc)
            return 0


def summary_cache(directory: Path) -> SummaryCache:
    """The process's summary cache for a research directory (opened once: call it from a
    worker thread, it may open a database)."""
    key = directory.expanduser().resolve()
    with _lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = SummaryCache(key)
        _caches[directory] = cache  # found again as it was named, without the file system
        return cache


def opened_summary_cache(directory: Path) -> SummaryCache | None:
    """The summary cache :func:`summary_cache` opened for ``directory`` as named, if it did
    (no file system call: for the event loop)."""
    with _lock:
        return _caches.get(directory)
