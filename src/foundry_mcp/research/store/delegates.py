"""The store methods both stores hand on unchanged to their leases and their event log.

SQLite (:mod:`foundry_mcp.research.store.sqlite.store`) and PostgreSQL (:mod:`foundry_mcp.research.store.postgres.store`)
each write their own lease and event SQL; what a store does with them is the same, and is
written here once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from foundry_mcp.research.store.owners import (
    Owner,
    Ownership,
)
from foundry_mcp.research.store.records import Event


class LeaseOperations(Protocol):
    """What a store's lease table offers (see :mod:`foundry_mcp.research.store.sqlite.leases`)."""

    def ownership(self, research_id: str) -> Ownership | None: ...
    def claim(
        self,
        research_id: str,
        owner: Owner,
        lease_seconds: float,
        expected_token: str | None,
        *,
        process_gone: bool = False,
    ) -> bool: ...
    def release(self, research_id: str, owner: Owner) -> None: ...
    def renew(
        self, owner: Owner, research_ids: Iterable[str], lease_seconds: float
    ) -> set[str]: ...
    def cancel_requests(self, owner: Owner, research_ids: Iterable[str]) -> set[str]: ...
    def request_cancel(self, research_id: str) -> None: ...
    def disown(
        self, research_id: str, expected_token: str | None, *, process_gone: bool = False
    ) -> bool: ...
    def takeover_candidates(
        self, me: Owner, window_seconds: float, limit: int
    ) -> list[tuple[str, Ownership]]: ...


class EventOperations(Protocol):
    """What a store's audit trail offers (see :mod:`foundry_mcp.research.store.sqlite.events`)."""

    def append(
        self, research_id: str, kind: str, data: dict[str, Any], owner: Owner | None = None
    ) -> int: ...
    def page(self, research_id: str, after: int, limit: int) -> list[Event]: ...
    def last_at(self, research_id: str) -> str | None: ...


class LeasesAndEvents:
    """Ownership and audit-trail methods of a store, handed on to ``_leases`` and ``_events``."""

    _leases: LeaseOperations
    _events: EventOperations

    def ownership(self, research_id: str) -> Ownership | None:
        return self._leases.ownership(research_id)

    def claim(
        self,
        research_id: str,
        owner: Owner,
        lease_seconds: float,
        expected_token: str | None,
        *,
        process_gone: bool = False,
    ) -> bool:
        """Take the research if its owner token is still ``expected_token`` (compare and swap)
        and that lease no longer runs (see ``Store.claim``)."""
        return self._leases.claim(
            research_id, owner, lease_seconds, expected_token, process_gone=process_gone
        )

    def release(self, research_id: str, owner: Owner) -> None:
        """Give up the lease (the run ended)."""
        self._leases.release(research_id, owner)

    def renew(self, owner: Owner, research_ids: Iterable[str], lease_seconds: float) -> set[str]:
        """Extend this owner's leases, on a connection of their own; returns the ids another
        process asked to cancel."""
        return self._leases.renew(owner, research_ids, lease_seconds)

    def cancel_requests(self, owner: Owner, research_ids: Iterable[str]) -> set[str]:
        """The ids among ``research_ids`` (owned by ``owner``) that someone asked to cancel."""
        return self._leases.cancel_requests(owner, research_ids)

    def request_cancel(self, research_id: str) -> None:
        self._leases.request_cancel(research_id)

    def disown(
        self, research_id: str, expected_token: str | None, *, process_gone: bool = False
    ) -> bool:
        """Clear a dead owner's lease so that a late write by it is refused, once the lease
        has run out (see ``Store.disown``)."""
        return self._leases.disown(research_id, expected_token, process_gone=process_gone)

    def takeover_candidates(
        self, me: Owner, window_seconds: float, limit: int
    ) -> list[tuple[str, Ownership]]:
        """Research a worker may have to take over, with its ownership (see ``Store``)."""
        return self._leases.takeover_candidates(me, window_seconds, limit)

    def append_event(
        self, research_id: str, kind: str, data: dict[str, Any], owner: Owner | None = None
    ) -> int:
        """Append to the research's audit trail; returns the event's sequence number. With
        ``owner``, fenced: ``LeaseLostError`` unless ``owner`` still holds the research."""
        return self._events.append(research_id, kind, data, owner)

    def events(self, research_id: str, after: int, limit: int) -> list[Event]:
        """Events with ``seq > after``, oldest first, at most ``limit``."""
        return self._events.page(research_id, after, limit)

    def last_event_at(self, research_id: str) -> str | None:
        return self._events.last_at(research_id)
