"""Saying where questions go when the web search with no key is chosen for lack of keys.

With no search key configured, a research searches through ``ddgs``, which sends the search
queries written from the user's question to public search engines (DuckDuckGo, Brave,
Mojeek...). That is a fair default, but not one to make silently: a research that is to use
it says so in the start answer's warnings (which the terminal prints), together with how to turn
it off, until a search has actually been sent to those engines; from then on it has been said
(and logged, INFO). A marker file in ``research_dir`` remembers that; a research directory that
cannot be written to remembers it for the process instead. A start that fails before it
searches (not logged in, say) uses nothing up.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from pathlib import Path

from foundry_mcp.config import Settings

log = logging.getLogger(__name__)

MARKER_FILE = "keyless-search-notice.txt"
SAID_ONCE = "This is said once (docs/providers.md#web-search-with-no-key-ddgs-web-no-key)."
# How ddgs's backend names are written for people; others are capitalised.
ENGINE_NAMES = {"duckduckgo": "DuckDuckGo", "yandex": "Yandex", "yahoo": "Yahoo"}

_said_in_process: set[Path] = set()
_lock = threading.Lock()


def keyless_search_statement(settings: Settings, searching: list[str]) -> str | None:
    """Where a research's questions go when the keyless web search was chosen for it because
    no search provider has a key, and how to turn that off; None when it was not (no keyless
    provider among ``searching``, or the user listed the providers themselves)."""
    if "deep_research_providers" in settings.research.model_fields_set:
        return None  # the user chose the providers, the keyless one included
    keyless = [name for name in searching if settings.provider_kind(name) == "ddgs"]
    if not keyless:
        return None
    name = keyless[0]
    web, news = _engines(settings, name)
    return (
        f"No search provider has an API key, so the web is searched with '{name}' (no key): "
        "the search queries written from your questions are sent from this machine to public "
        f"search engines ({web}; news: {news}). To keep your questions off them, set "
        "a search key (TAVILY_API_KEY, or GOOGLE_API_KEY and GOOGLE_CSE_ID), or choose the "
        "search providers yourself in [research] deep_research_providers (e.g. "
        '["semantic_scholar"] or ["local"]).'
    )


def pending_statement(settings: Settings, searching: list[str]) -> str | None:
    """The statement of :func:`keyless_search_statement` for a research about to search,
    until a keyless search has been sent from this ``research_dir`` (:func:`mark_sent`)."""
    statement = keyless_search_statement(settings, searching)
    if statement is None or _said(settings.research.research_dir):
        return None
    return f"{statement} {SAID_ONCE}"


def mark_sent(settings: Settings, name: str) -> None:
    """Record that provider ``name`` sent a search to public engines: the statement has now
    been said for this ``research_dir`` (the marker file is written, the log says it once).
    Called from the worker thread that sent the search."""
    statement = keyless_search_statement(settings, [name])
    if statement is None:
        return  # the user chose the keyless search: there was nothing to say
    folder = settings.research.research_dir
    with _lock:
        if folder in _said_in_process:
            return
        _said_in_process.add(folder)
        marker = folder / MARKER_FILE
        if marker.exists():
            return
        try:
            folder.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{datetime.now(UTC).isoformat(timespec='seconds')}\n{statement}\n")
        except OSError as exc:  # remembered for this process instead
            log.debug("cannot write %s: %s", marker, exc)
    log.info("%s", statement)


def _said(folder: Path) -> bool:
    with _lock:
        return folder in _said_in_process or (folder / MARKER_FILE).exists()


def _engines(settings: Settings, name: str) -> tuple[str, str]:
    """The web and news engines the keyless provider asks, as a phrase each."""
    from foundry_mcp.providers.search.keyless import DEFAULT_BACKENDS

    provider = settings.provider(name)
    web = provider.backends or list(DEFAULT_BACKENDS["web"])
    news = provider.news_backends or list(DEFAULT_BACKENDS["news"])
    return _listed(web), _listed(news)


def _listed(backends: list[str]) -> str:
    names = [ENGINE_NAMES.get(b.lower(), b.capitalize()) for b in backends]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
