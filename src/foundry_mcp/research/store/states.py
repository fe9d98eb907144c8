"""A research state as every store keeps it: JSON (without page text), written from a snapshot,
upgraded when read, and the tables it spans.

A run's state is edited on the event loop while its save is written on the store's writer
thread (:class:`~foundry_mcp.research.store.access.aio.AsyncStore`). So a save never reads the
live state on that thread: a :class:`StateReading` takes it where it is edited, in one call of
pydantic's serializer (the dump, with its page texts as the same string objects, never copied)
and a note of which sources' texts the store already holds. Only that reading crosses to the
writer, where :meth:`Snapshot.of_reading` works out what the save sets: its time
(``updated_at``), the JSON the store keeps (all of the state but its sources' page text), and
the page texts its sources got since the store last kept theirs, with their hashes
(:mod:`foundry_mcp.research.store.pages`). (The serializer alone does not make a reading on
another thread safe: it runs Python code for every enum value, and the loop may run and change
the state in between.) The store writes the snapshot. :meth:`Snapshot.apply` then records on
the state what was saved, where the state is edited: a run does it on the event loop once the
write returns. A store given a state rather than a snapshot (a caller whose state no other
thread edits: a start, a restore, the tests) takes the snapshot itself and applies it once the
write committed (:func:`snapshot_to_save`), so its caller finds the state as saved.

A stored state written by an older foundry-mcp is upgraded when it is read: each step takes the
JSON of version ``n`` and returns version ``n + 1``, and reading applies every step from the
stored ``schema_version`` up to ``STATE_SCHEMA_VERSION``. (A state saved before page text had
its own table holds it inline, and is read as it is.)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pydantic_core
from pydantic import ValidationError

from foundry_mcp.context.tokens import content_hash
from foundry_mcp.errors import ResearchNotFoundError
from foundry_mcp.research.models import STATE_SCHEMA_VERSION, ResearchState, Source, utcnow

log = logging.getLogger(__name__)

# The tables that hold a research's rows besides its own: deleted with it (and then the pages
# no research links to any more: store/pages.py). Not the spend ledger, which outlives it.
RESEARCH_TABLES = ("events", "branches", "llm_journal", "archived", "research_pages")

State = dict[str, Any]


def _v1_to_v2(state: State) -> State:
    """Version 2 keeps ownership in the store's lease columns, not in the state."""
    state.pop("owner_pid", None)
    state.pop("owner_host", None)
    state.setdefault("options", {})
    state.setdefault("contradictions", [])
    state.setdefault("claim_checks", [])
    return state


def _v2_to_v3(state: State) -> State:
    """Version 3 keeps token totals only in ``llm_usage`` (they were also in ``usage``)."""
    old = state.pop("usage", None) or {}
    usage = state.setdefault("llm_usage", {})
    total = usage.setdefault("total", {})
    if not total.get("calls") and old.get("calls"):
        total.update(
            input_tokens=old.get("input_tokens", 0),
            output_tokens=old.get("output_tokens", 0),
            calls=old["calls"],
            unpriced_calls=old["calls"],
        )
    return state


def _v3_to_v4(state: State) -> State:
    """Version 4 adds the research modes; a research started before them ran in simple mode."""
    state.setdefault("mode", "simple")
    return state


def _v4_to_v5(state: State) -> State:
    """Version 5 takes ``runtime_overhead`` from every call's window, as the specification says;
    what it meant before (the calling assistant's share) is ``assistant_overhead``."""
    budget = state.get("options", {}).get("token_budget")
    if isinstance(budget, dict) and "assistant_overhead" not in budget:
        budget["assistant_overhead"] = budget.pop("runtime_overhead", 60_000)
        budget["runtime_overhead"] = 0
    return state


STEPS: dict[int, Callable[[State], State]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
}


def migrate_state(state: State) -> State:
    """``state`` upgraded to the current schema version.

    Raises ``ValueError`` for a state written by a newer foundry-mcp.
    """
    version = int(state.get("schema_version", 1))
    if version > STATE_SCHEMA_VERSION:
        raise ValueError(f"state schema {version} is newer than {STATE_SCHEMA_VERSION}")
    while version < STATE_SCHEMA_VERSION:
        state = STEPS[version](state)
        version += 1
        state["schema_version"] = version
    return state


@dataclass(frozen=True)
class KeptText:
    """A source's text as the save read it (None: set aside), and the hash it was kept under."""

    source: Source
    text: str | None
    digest: str | None


@dataclass(frozen=True)
class StateReading:
    """A state read at one instant, where it is edited: its dump, and for each source whether
    the store held its text then. Turned into a :class:`Snapshot` on any thread, once."""

    state: ResearchState
    # ``model_dump()``: new dicts and lists holding the state's values, which are immutable
    # (strings, numbers, enums, datetimes; page texts are the live string objects). The JSON
    # is made from it on the writer (a third cheaper on the loop than a dump in JSON mode).
    data: dict[str, Any]
    kept: dict[str, tuple[Source, bool]]  # by source id: the source, whether its text was kept

    @classmethod
    def of(cls, state: ResearchState) -> StateReading:
        """Read ``state`` now (call it where it is edited)."""
        return cls(
            state,
            state.model_dump(),
            {source.id: (source, source.text_is_kept) for source in state.sources},
        )


@dataclass(frozen=True)
class Snapshot:
    """What one save of ``state`` writes: the state's columns and JSON, and its new pages."""

    state: ResearchState  # the live state it was read from: only ``apply`` changes it
    status: str
    phase: str
    iteration: int
    updated_at: datetime
    json: str  # the stored JSON: all of the state but its sources' page text
    pages: dict[str, str]  # new page texts by hash, kept in the save's transaction
    spent_usd: float  # the state's running cost, booked in the spend ledger
    kept: tuple[KeptText, ...]  # the sources whose kept text the save changes

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def branch(self) -> str | None:
        return self.state.branch

    @property
    def query(self) -> str:
        return self.state.query

    @property
    def principal(self) -> str | None:
        return self.state.principal

    @property
    def created_at(self) -> datetime:
        return self.state.created_at

    @classmethod
    def of(cls, state: ResearchState) -> Snapshot:
        """``state`` as a save made now writes it, read on this thread (which must be the one
        that edits it); ``state`` is read, never changed."""
        return cls.of_reading(StateReading.of(state))

    @classmethod
    def of_reading(cls, reading: StateReading) -> Snapshot:
        """What a save of ``reading`` writes (on any thread; the reading is used up).

        Its page texts were read in the same call as the rest, so a source's stored hash is
        that of the text the state held at that instant. Only texts the store did not hold
        then are hashed.
        """
        state, data = reading.state, reading.data
        updated_at = utcnow()
        data["updated_at"] = updated_at
        pages, kept = _texts_apart(data["sources"], reading.kept)
        return cls(
            state=state,
            status=str(data["status"]),  # a StrEnum's str() is its value
            phase=str(data["phase"]),
            iteration=data["iteration"],
            updated_at=updated_at,
            json=pydantic_core.to_json(data).decode(),
            pages=pages,
            spent_usd=_spent_usd(data),
            kept=kept,
        )

    def apply(self) -> None:
        """Record on the state what this save wrote: its time, and on each source whose text
        is still the one saved, that text's hash and that the store holds it. Call it once the
        write returned, where the state is edited (a run: on the event loop). A text changed
        or set aside since is left to the next save."""
        self.state.updated_at = self.updated_at
        for item in self.kept:
            source = item.source
            if source.content is not item.text:
                continue
            if item.digest is not None:
                source.content_hash = item.digest
            source.keep_text(item.text)


@contextmanager
def snapshot_to_save(state: ResearchState | Snapshot) -> Iterator[Snapshot]:
    """The snapshot a store's save writes within the block: ``state`` itself when the caller
    took it (the caller applies it), else one taken now and applied once the block ends
    without an error (the write committed)."""
    if isinstance(state, Snapshot):
        yield state
        return
    snapshot = Snapshot.of(state)
    yield snapshot
    snapshot.apply()


def _texts_apart(
    stored: list[dict[str, Any]], live: dict[str, tuple[Source, bool]]
) -> tuple[dict[str, str], tuple[KeptText, ...]]:
    """Take the page text out of the dumped sources, ``stored``; the texts the store did not
    hold when they were read (``live``), by hash (written into their sources as
    ``content_hash``), and what ``apply`` records on the live sources."""
    pages: dict[str, str] = {}
    kept: list[KeptText] = []
    for dumped in stored:
        text = dumped.pop("content", None)
        source, held = live.get(dumped["id"], (None, False))
        if held:
            continue
        digest = None
        if text is not None:
            digest = content_hash(text)
            pages.setdefault(digest, text)
            dumped["content_hash"] = digest
        if source is not None:
            kept.append(KeptText(source, text, digest))
    return pages, tuple(kept)


def _spent_usd(data: dict[str, Any]) -> float:
    """``LLMUsage.spent_usd`` of a dumped state."""
    return float(data["llm_usage"]["total"]["cost_usd"] or 0.0)


def decode_state(text: str | bytes, research_id: str) -> ResearchState:
    """The stored JSON of a research as its state; ``ResearchNotFoundError`` when unreadable."""
    try:
        return ResearchState.model_validate(migrate_state(json.loads(text)))
    except (ValidationError, ValueError):
        raise ResearchNotFoundError(
            f"The stored state of {research_id} cannot be read.",
            remediation="Delete it with action='deep-research-delete' and start again.",
        ) from None


def decode_branches(rows: list[tuple[str, str]], research_id: str) -> dict[str, ResearchState]:
    """``(branch_id, JSON)`` rows as the researchers' states, by branch id; a state that
    cannot be read is logged and left out."""
    branches: dict[str, ResearchState] = {}
    for branch_id, text in rows:
        try:
            branches[branch_id] = decode_state(text, research_id)
        except ResearchNotFoundError:
            log.warning("the saved state of %s/%s cannot be read", research_id, branch_id)
    return branches
