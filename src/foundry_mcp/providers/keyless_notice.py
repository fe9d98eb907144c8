"""Saying where questions go when the web search with no key is chosen for lack of keys.

With no search key configured, a research searches through ``ddgs``, which sends the search
queries written from the user's question to public search engines (DuckDuckGo, Brave,
Mojeek...). That is a fair default, but not one to make silently: the first research that
uses it says so once, in the start answer's warnings (which the terminal prints) and in the
log (INFO), together with how to turn it off. A marker file in ``research_dir`` remembers that it was
said; a research directory that cannot be written to says it once per process instead.
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


def announce_once(settings: Settings, searching: list[str]) -> str | None:
    """The statement of :func:`keyless_search_statement` the first time it applies to this
    ``research_dir`` (then logged and remembered), else None."""
    statement = keyless_search_statement(settings, searching)
    if statement is None:
        return None
    statement += f" {SAID_ONCE}"
    folder = settings.research.research_dir
    marker = folder / MARKER_FILE
    with _lock:
        if folder in _said_in_process:
            return None
        _said_in_process.add(folder)  # said now, or by an earlier process: no file look again
        if marker.exists():
            return None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{datetime.now(UTC).isoformat(timespec='seconds')}\n{statement}\n")
        except OSError as exc:  # said once per process instead
            log.debug("cannot write %s: %s", marker, exc)
    log.info("%s", statement)  # the warnings carry it to the user; the log keeps a trace
    return statement


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
