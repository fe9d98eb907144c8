"""What a mode's playbook works with: the research's LLMs, searches, pages and saving."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from foundry_mcp.context.reading.focus import RepeatLedger
from foundry_mcp.providers.pages.fetch import PageFetcher
from foundry_mcp.providers.search.base import SearchProvider
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.workflow.agents.pool import SourcePool
from foundry_mcp.research.workflow.agents.privacy import PrivateWords
from foundry_mcp.research.workflow.reading.readings import Readings
from foundry_mcp.research.workflow.supervisor import SupervisorHooks

Checkpoint = Callable[[], Awaitable[None]]


class BranchStore(Protocol):
    """Where the researchers of a research keep their own states (one per sub-question)."""

    def save_soon(self, branch: ResearchState) -> None:
        """Queue a save of one researcher's state (fenced by the research's lease) and go on;
        a queued save of it that failed since is raised here."""
        ...

    async def load(self) -> dict[str, ResearchState]:
        """Every saved researcher state of the research, by branch id."""
        ...


@dataclass
class ResearchKit:
    """The tools of one research run, handed to its mode's playbook."""

    llm: ResearchLLM
    search: list[SearchProvider]
    calls: CallLog
    checkpoint: Checkpoint
    fetcher: PageFetcher | None = None
    hooks: SupervisorHooks | None = None
    branches: BranchStore | None = None
    pool: SourcePool = field(default_factory=SourcePool)
    local_providers: frozenset[str] = frozenset()  # the search providers of the user's documents
    # Names a few of the user's documents, most relevant to a question first: (question, limit).
    local_sample: Callable[[str, int], Awaitable[list[str]]] | None = None
    # The passages the analyst has read in this research, so that a repeat is read once.
    repeats: RepeatLedger = field(default_factory=RepeatLedger)
    # The research's readings: who reads which page (each page once), what was read of it, and
    # findings filed between parts.
    readings: Readings | None = None
    # The words only the user's own sources hold, left out of public searches (None: no guard).
    private: PrivateWords | None = None
