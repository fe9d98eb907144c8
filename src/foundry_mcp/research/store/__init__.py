"""Where research is kept: the ``Store`` every backend offers, and the two backends.

``protocol`` (the ``Store`` interface the service, the runner and the CLI use), ``records`` (the
rows both backends hand back, and the check of a research id), ``owners`` (who runs a research
and whether it lives), ``states`` (a state's stored JSON, upgraded when read), ``pages`` (page
text kept once, outside the states), ``paging``, ``waits``, ``delegates`` and ``url`` are
shared; ``sqlite/`` (the default, under ``research_dir``) and ``postgres/`` (a team's shared
database) each build on them and never on each other. ``opening.open_store`` picks the backend the configuration names.
"""

from foundry_mcp.research.store.owners import LeaseLostError, Owner, Ownership
from foundry_mcp.research.store.protocol import Journal, Store
from foundry_mcp.research.store.records import (
    Event,
    Fingerprint,
    JournalEntry,
    ResearchSummary,
    StoreInfo,
    research_not_found,
    validate_research_id,
)

__all__ = [
    "Event",
    "Fingerprint",
    "Journal",
    "JournalEntry",
    "LeaseLostError",
    "Owner",
    "Ownership",
    "ResearchSummary",
    "Store",
    "StoreInfo",
    "research_not_found",
    "validate_research_id",
]
