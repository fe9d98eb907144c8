"""Warming the providers off the event loop, so the first research does not wait for them.

Importing an LLM SDK takes from a few hundred milliseconds (openai, google-genai) to well over
a second (anthropic), creating its client tens of milliseconds more, and its first call again
tens (lazy resources, request type hints, response validators). Done inside the event loop at
the first research, all of it would stall every other request meanwhile. These functions do it
in the calling worker thread instead, in the order the first research needs it:

1. :func:`warm_defaults`: the default LLM and the per-phase LLMs (:func:`default_llms`; client
   built, first call rehearsed against an in-memory answer, see ``llm.warm``), the usable
   search providers and the page fetcher;
2. :func:`warm_others`: the other LLM providers that have keys, for a ``provider_id`` naming
   them. The SDK of a provider without a key is never imported: it could not be used.

Nothing is sent over the network. Every step that fails is logged at debug level and skipped:
the real call path builds whatever is missing, and reports its errors as it always does.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from foundry_mcp.config import DEFAULT_MODELS
from foundry_mcp.errors import ProviderNotConfiguredError

if TYPE_CHECKING:
    from foundry_mcp.providers.registry import ProviderRegistry

log = logging.getLogger(__name__)


def default_llms(registry: ProviderRegistry) -> list[tuple[str, str]]:
    """The (provider, model) pairs a research started with the defaults calls, its own first.

    Pairs that cannot be resolved (no key, no model) are left out: starting a research
    reports them.
    """
    pairs: list[tuple[str, str]] = []
    with contextlib.suppress(ProviderNotConfiguredError):
        pairs.append(registry.resolve_llm(None, None))
    with contextlib.suppress(ProviderNotConfiguredError):
        for routed in registry.resolve_routes().values():
            pairs.extend(pair for pair in routed if pair not in pairs)
    return pairs


def warm_defaults(
    registry: ProviderRegistry,
    pairs: list[tuple[str, str]],
    stop: threading.Event | None = None,
) -> None:
    """Build what a research started with the defaults uses before its first call.

    ``pairs`` are its LLMs (:func:`default_llms`). Once ``stop`` is set, the steps left are
    skipped.
    """
    for name, model in pairs:
        quietly(f"the {name} LLM", _warm_llm, registry, name, model, stop=stop)
    with contextlib.suppress(ProviderNotConfiguredError):
        usable, _ = registry.search_providers(announce=False)
        for search in usable:
            quietly(f"the {search} search", registry.search, search, stop=stop)
    quietly("the page fetcher", registry.fetcher, stop=stop)


def warm_others(registry: ProviderRegistry, stop: threading.Event | None = None) -> None:
    """Build the adapters of the other LLM providers that have keys (until ``stop`` is set)."""
    from foundry_mcp.providers.registry import LLM_KINDS

    settings = registry.settings
    for name in sorted({*DEFAULT_MODELS, *settings.providers}):
        if registry.is_built(name) or settings.provider_kind(name) not in LLM_KINDS:
            continue
        try:
            registry.resolve_llm(name, None)
        except ProviderNotConfiguredError:
            continue
        quietly(f"the {name} LLM", registry.llm_adapter, name, stop=stop)


def _warm_llm(registry: ProviderRegistry, name: str, model: str) -> None:
    registry.llm_adapter(name)
    registry.llm_class(name).warm_up(model, registry.settings.provider(name).base_url)


def quietly(
    what: str, step: Callable[..., object], *args: object, stop: threading.Event | None = None
) -> bool:
    """Run one warm-up step unless ``stop`` is set; True if it ran and succeeded.

    A failure is logged at debug level and otherwise ignored.
    """
    if stop is not None and stop.is_set():
        return False
    try:
        step(*args)
    except Exception:
        log.debug("warming %s failed; it is built on first use instead", what, exc_info=True)
        return False
    return True
