"""Start-up chores of a research service: research whose process died, retention, the
content archive's TTL, and auto-resume."""

from __future__ import annotations

import logging
from typing import Any, Protocol

import anyio

from foundry_mcp.config import Settings
from foundry_mcp.context.runtime import ContextServices
from foundry_mcp.errors import FoundryError
from foundry_mcp.research.models import Status
from foundry_mcp.research.store.access.aio import AsyncStore

log = logging.getLogger(__name__)

AUTO_RESUME_LIMIT = 20  # newest interrupted research resumed at start-up with auto_resume


class _Service(Protocol):
    """What the chores use of the research service."""

    settings: Settings
    io: AsyncStore
    context: ContextServices

    async def recover_orphans(self) -> list[str]: ...

    async def resume(self, research_id: Any) -> dict[str, Any]: ...


async def housekeeping(service: _Service, resume: bool = True) -> dict[str, Any]:
    """Orphans, retention, and (if configured and ``resume``) auto-resume; what was done."""
    research = service.settings.research
    recovered = await service.recover_orphans()
    removed = 0
    if days := research.retention_days:
        removed = await service.io.write(lambda store: store.delete_older_than(days))
    resumed = []
    if research.auto_resume and resume:
        interrupted, _ = await service.io.read(
            lambda store: store.list_page(AUTO_RESUME_LIMIT, statuses=[Status.INTERRUPTED])
        )
        for research_id in [item.research_id for item in interrupted]:
            try:
                await service.resume(research_id)
                resumed.append(research_id)
            except FoundryError as exc:
                log.warning("auto-resume of %s failed: %s", research_id, exc.message)
    archived = await anyio.to_thread.run_sync(service.context.purge_archive)  # its TTL
    ttl = research.content_archive_ttl_hours
    archived += await service.io.write(lambda store: store.purge_archived(ttl))
    return {
        "interrupted": recovered,
        "deleted": removed,
        "resumed": resumed,
        "archive_purged": archived,
    }
