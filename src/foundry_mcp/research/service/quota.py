"""A team server principal's limits: how many of its researches may run at once, and what its
researches may cost in a day. Both are checked when one of its researches starts or resumes;
a run already going is bounded by ``[research] max_cost_usd`` alone.

The count of running research and the save of the new one happen under the store's admission
lock of the principal, so two starts at the same moment, on one server or on two servers of a
team, cannot both pass the last free place.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import anyio

from foundry_mcp.errors import FoundryError, QuotaExceededError, StoreUnavailableError
from foundry_mcp.research.models import Status, utcnow
from foundry_mcp.research.principal import Principal
from foundry_mcp.research.service.ownership import OwnershipWatch
from foundry_mcp.research.store.access.aio import AsyncStore

ACTIVE = [status for status in Status if status.is_active]
MOST_ACTIVE = 1000  # more active research than this per principal is beyond any limit allowed
COST_WINDOW = timedelta(hours=24)


@asynccontextmanager
async def admitted(watch: OwnershipWatch, principal: Principal | None) -> AsyncIterator[None]:
    """Save the principal's new (or resumed) research within: on entry its running research
    were counted (``QuotaExceededError`` at its limit) under its admission lock, held until
    the block ends. The lock is taken and given back on a worker thread: waiting for it (another
    server admitting a start) never holds up the event loop."""
    if principal is None or principal.max_concurrent_researches is None:
        yield
        return
    lock = watch.io.sync.admitting(principal.name)
    await anyio.to_thread.run_sync(lock.__enter__)
    try:
        await check_running(watch, principal)
        yield
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(lock.__exit__, None, None, None)


async def check_running(watch: OwnershipWatch, principal: Principal) -> None:
    """``QuotaExceededError`` when the principal's active research reach its limit."""
    limit = principal.max_concurrent_researches
    if limit is None:
        return
    items, _ = await watch.io.read(
        lambda store: store.list_page(MOST_ACTIVE, statuses=ACTIVE, principal=principal.name)
    )
    running = sum([await _still_active(watch, item.research_id) for item in items])
    if running >= limit:
        raise QuotaExceededError(
            f"{principal.name} already has {running} research running or queued, and may run "
            f"at most {limit} at once (max_concurrent_researches).",
            details={"limit": "max_concurrent_researches", "allowed": limit, "active": running},
        )


async def check_spending(io: AsyncStore, principal: Principal) -> None:
    """``QuotaExceededError`` when the principal's research spent its daily limit in the last
    24 hours (estimates from list prices), read from the store's spend ledger, which deleting
    research does not reset; ``StoreUnavailableError`` when the ledger cannot be read."""
    limit = principal.max_cost_usd_per_day
    if limit is None:
        return
    since = utcnow() - COST_WINDOW
    try:
        spent = await io.read(lambda store: store.spent_since(principal.name, since))
    except StoreUnavailableError as exc:  # fail closed: an unknown spend admits nothing
        raise StoreUnavailableError(
            f"{principal.name}'s spending of the last 24 hours cannot be read, so the research "
            f"is not started: {exc.message}",
            remediation=exc.remediation,
        ) from None
    if spent >= limit:
        raise QuotaExceededError(
            f"{principal.name}'s research spent an estimated ${spent:.2f} in the last 24 hours, "
            f"and the limit is ${limit:.2f} a day (max_cost_usd_per_day).",
            remediation=(
                "Wait until earlier spending falls out of the 24-hour window, or ask the "
                "server's administrator to raise max_cost_usd_per_day in its [server] section."
            ),
            details={"limit": "max_cost_usd_per_day", "allowed": limit, "spent": round(spent, 4)},
        )


async def _still_active(watch: OwnershipWatch, research_id: str) -> bool:
    """Whether a research stored as active really is (its owner may have died)."""
    if watch.jobs.is_running(research_id):
        return True
    try:
        return (await watch.load_checked(research_id)).status.is_active
    except FoundryError:
        return False
