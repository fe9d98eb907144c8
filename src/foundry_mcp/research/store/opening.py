"""Opening the research store the configuration names: SQLite under ``research_dir`` (the
default), or the PostgreSQL database of ``[research] store_url`` shared by a team's servers."""

from __future__ import annotations

from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.errors import ConfigError
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.sqlite.store import ResearchStore


def open_async_store(research: ResearchSettings) -> AsyncStore:
    """The store of ``research`` settings, to be called from the event loop. SQLite gets a
    second connection for the reads, so that they never queue behind a write waiting for the
    database's lock; PostgreSQL's pool serves both."""
    store = open_store(research)
    reader = ResearchStore(research.research_dir) if isinstance(store, ResearchStore) else None
    return AsyncStore(store, reader)


def open_store(research: ResearchSettings) -> Store:
    """The store of ``research`` settings, opened (and migrated); ``FoundryError`` if it cannot be."""
    if research.store_url is None:
        return ResearchStore(research.research_dir)
    try:  # an optional dependency: imported only by the servers that use it
        from foundry_mcp.research.store.postgres.store import PostgresStore
    except ImportError:
        raise ConfigError(
            "[research] store_url names a PostgreSQL database, but the PostgreSQL driver is "
            "not installed.",
            remediation="Install the postgres extra from the foundry-mcp clone: "
            "pip install '.[postgres]'.",
        ) from None
    try:
        research.research_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(
            f"Cannot create research_dir {research.research_dir}: {exc.strerror}.",
            remediation="Set [research] research_dir or FOUNDRY_MCP_RESEARCH_DIR to a "
            "writable local folder (it keeps this server's caches beside the shared store).",
        ) from None
    return PostgresStore(research.store_url.get_secret_value(), research.research_dir)
