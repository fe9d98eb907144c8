"""The rows every store hands back, whatever keeps them: the types both backends share.

A research id is checked here before it touches any store; an unknown id and another
principal's research get the same error, so that ids cannot be probed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from foundry_mcp.errors import InvalidResearchIdError, ResearchNotFoundError
from foundry_mcp.research.models import RESEARCH_ID_PATTERN, ResearchState, Status
from foundry_mcp.research.store.owners import Ownership

# (status, phase, iteration, updated_at) of a research, read without loading its state.
Fingerprint = tuple[str, str, int, str]


def validate_research_id(research_id: object) -> str:
    """The id if it is well formed; ``InvalidResearchIdError`` otherwise."""
    if not isinstance(research_id, str) or not research_id.strip():
        raise InvalidResearchIdError("research_id is required for this action.")
    if not RESEARCH_ID_PATTERN.fullmatch(research_id):
        shown = research_id if len(research_id) <= 40 else research_id[:40] + "..."
        raise InvalidResearchIdError(f"research_id {shown!r} is not a valid research id.")
    return research_id


def research_not_found(research_id: str) -> ResearchNotFoundError:
    """The error for an id with no research, and for another principal's research alike."""
    return ResearchNotFoundError(f"No research with id {research_id}.")


@dataclass(frozen=True)
class ResearchSummary:
    """One row of the research list."""

    research_id: str
    query: str
    status: Status
    phase: str
    iteration: int
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class StatusRead:
    """What a status answer needs of one research, read in one statement: its state (without
    page text), who holds it, whose it is, and when its newest event was recorded."""

    state: ResearchState
    ownership: Ownership
    principal: str | None
    last_event_at: str | None


@dataclass(frozen=True)
class Event:
    """One entry of a research's audit trail."""

    seq: int
    at: str
    kind: str
    data: dict[str, Any]


def event_json(data: dict[str, Any]) -> str:
    """An event's data as stored: JSON, with times in ISO 8601 and anything else as text."""
    return json.dumps(data, default=_json_default, ensure_ascii=False)


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


@dataclass(frozen=True)
class JournalEntry:
    """A saved LLM answer and the usage record of the call that bought it."""

    answer: str
    record: dict[str, Any]


@dataclass(frozen=True)
class StoreInfo:
    """Where a store keeps research and which schema it holds (``foundry-mcp doctor``)."""

    backend: str  # "sqlite" or "postgresql"
    location: str  # the database file, or the URL with its password hidden
    schema_version: int
    server_version: str | None = None  # PostgreSQL's, e.g. "15.8"

    def as_dict(self) -> dict[str, Any]:
        shown = {
            "backend": self.backend,
            "location": self.location,
            "schema_version": self.schema_version,
        }
        if self.server_version is not None:
            shown["server_version"] = self.server_version
        return shown
