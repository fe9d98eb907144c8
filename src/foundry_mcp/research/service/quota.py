"""A team server principal's limits: how many of its researches may run at once, and what its
researches may cost in a day. Both are checked when one of its researches starts or resumes;
a run already going is bounded by ``[research] max_cost_usd`` alone.

The count of running research and the save of the new one happen under the store's admission
lock of the principal, so two starts at the same moment, on one server or on two servers of a
team, cannot both pass the last free place.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import anyio

from foundry_mcp.errors import FoundryError, QuotaExceededError
from foundry_mcp.research.models import Status, utcnow
from foundry_mcp.research.principal import Principal
from foundry_mcp.research.service.ownership import OwnershipWatch
from foundry_mcp.research.store.protocol import Store

ACTIVE = [status for status in Status if status.is_active]
MOST_ACTIVE = 1000  # more active research than this per principal is beyond any limit allowed
COST_WINDOW = timedelta(hours=24)
COST_PAGE = 100


@contextmanager
def admitted(watch: OwnershipWatch, principal: Principal | None) -> Iterator[None]:
    """Save the principal's new (or resumed) research within: on entry its running research
    were counted (``QuotaExceededError`` at its limit) under its admission lock, held until
    the block ends."""
    if principal is None or principal.max_concurrent_researches is None:
        yield
        return
    with watch.store.admitting(principal.name):
        check_running(watch, principal)
        yield


def check_running(watch: OwnershipWatch, principal: Principal) -> None:
    """``QuotaExceededError`` when the principal's active research reach its limit."""
    limit = principal.max_concurrent_researches
    if limit is None:
        return
    items, _ = watch.store.list_page(MOST_ACTIVE, statuses=ACTIVE, principal=principal.name)
    running = sum(1 for item in items if _still_active(watch, item.research_id))
    if running >= limit:
        raise QuotaExceededError(
            f"{principal.name} already has {running} research running or queued, and may run "
            f"at most {limit} at once (max_concurrent_researches).",
            details={"limit": "max_concurrent_researches", "allowed": limit, "active": running},
        )


async def check_spending(store: Store, principal: Principal) -> None:
    """``QuotaExceededError`` when the principal's research of the last 24 hours cost as much
    as its daily limit (estimates from list prices). Reads the states in a worker thread."""
    limit = principal.max_cost_usd_per_day
    if limit is None:
        return
    spent = await anyio.to_thread.run_sync(spent_recently, store, principal.name)
    if spent >= limit:
        raise QuotaExceededError(
            f"{principal.name}'s research of the last 24 hours cost an estimated "
            f"${spent:.2f}, and the limit is ${limit:.2f} a day (max_cost_usd_per_day).",
            remediation=(
                "Wait until earlier research falls out of the 24-hour window, or ask the "
                "server's administrator to raise max_cost_usd_per_day in its [server] section."
            ),
            details={"limit": "max_cost_usd_per_day", "allowed": limit, "spent": round(spent, 4)},
        )


def spent_recently(store: Store, principal: str) -> float:
    """The estimated cost of the principal's research started in the last 24 hours."""
    cutoff = (utcnow() - COST_WINDOW).isoformat()
    total = 0.0
    cursor: str | None = None
    while True:
        items, cursor = store.list_page(COST_PAGE, cursor, principal=principal)
        for item in items:
            if item.created_at < cutoff:  # newest first: the rest is older still
                return total
            try:
                total += store.load(item.research_id).llm_usage.spent_usd
            except FoundryError:  # deleted meanwhile, or unreadable: it costs nothing more
                continue
        if cursor is None:
            return total


def _still_active(watch: OwnershipWatch, research_id: str) -> bool:
    """Whether a research stored as active really is (its owner may have died)."""
    if watch.jobs.is_running(research_id):
        return True
    try:
        return watch.load_checked(research_id).status.is_active
    except FoundryError:
        return False
