"""A research's status in one statement (``PostgresStore.load_status``): the statement, its
parameters and the answer read from its row."""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.store.postgres.database import iso
from foundry_mcp.research.store.postgres.leases import OWNERSHIP_COLUMNS, ownership_of
from foundry_mcp.research.store.records import StatusRead, research_not_found
from foundry_mcp.research.store.states import decode_state

# The state unless it is the one the caller read (the same updated_at), whose it is, who holds
# it, and when its newest event was recorded.
STATUS_QUERY = (
    "SELECT CASE WHEN updated_at = %s THEN NULL ELSE state END, principal, "
    f"{OWNERSHIP_COLUMNS}, (SELECT at FROM events WHERE research_id = research.id "
    "ORDER BY seq DESC LIMIT 1) FROM research WHERE id = %s"
)


def status_parameters(research_id: str, known: ResearchState | None) -> tuple[Any, ...]:
    """The parameters of ``STATUS_QUERY``."""
    return (known.updated_at if known else None, research_id)


def status_read(found: Any, research_id: str, known: ResearchState | None) -> StatusRead:
    """The status in a row of ``STATUS_QUERY`` (``known`` when the state is unchanged);
    ``ResearchNotFoundError`` without a row."""
    if found is None:
        raise research_not_found(research_id)
    last_event = None if found[8] is None else iso(found[8])
    state = known if found[0] is None and known else decode_state(found[0], research_id)
    return StatusRead(state, ownership_of(found[2:8]), found[1], last_event)
