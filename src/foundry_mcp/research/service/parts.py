"""What the start and the resume of a research work with, built once by the service."""

from __future__ import annotations

from dataclasses import dataclass

from foundry_mcp.config import Settings
from foundry_mcp.context.runtime import ContextServices
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.research.runs.jobs import JobRunner
from foundry_mcp.research.runs.runner import ResearchRunner
from foundry_mcp.research.service.ownership import OwnershipWatch
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner


@dataclass
class ServiceParts:
    """The settings, the store, the providers, the runs and this process's ownership: the
    starter (``starting/starter.py``) and the writer (``writes.py``) are each made of them."""

    settings: Settings
    io: AsyncStore
    providers: ProviderRegistry
    jobs: JobRunner
    runner: ResearchRunner
    owner: Owner
    context: ContextServices
    watch: OwnershipWatch
