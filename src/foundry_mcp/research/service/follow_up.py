"""Follow-up questions on a completed research, answered from its saved sources (in progress)."""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.runs.runner import ResearchRunner
from foundry_mcp.research.service.ownership import OwnershipWatch
from foundry_mcp.research.store.access.aio import AsyncStore


class FollowUps:
    """Answers follow-up questions; see the module."""

    def __init__(self, io: AsyncStore, runner: ResearchRunner, watch: OwnershipWatch) -> None:
        self.io = io
        self.runner = runner
        self.watch = watch

    async def answer(self, research_id: Any, query: Any) -> dict[str, Any]:
        raise NotImplementedError
