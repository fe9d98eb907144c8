"""A delete that failed leaves the research as it was, saving as usual (issue 38).

The runner skips every write of a research deleted while it runs (``ResearchRunner.deleted``).
That mark used to be set before the delete was made, and never taken back: when the store
refused the delete, the research stayed, but nothing this process ran of it was saved again.
Now the mark is set once the delete is done.
"""

from __future__ import annotations

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import ResearchNotFoundError, StoreUnavailableError
from foundry_mcp.research.models import (
    Phase,
    ResearchState,
    Source,
    Status,
    SubQuery,
    SubQueryStatus,
)
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


def _interrupted(service: ResearchService) -> ResearchState:
    """A research stopped before it analysed the one source it found."""
    provider, model = service.providers.resolve_llm(None, None)
    search, _ = service.providers.search_providers()
    source = Source(
        title="Ice core study",
        url="https://cores.example/a",
        snippet="Ice cores.",
        content="Ice cores hold snow layers year by year; each keeps the air of its year.",
    )
    state = ResearchState(
        query="What do ice cores tell about past climates?",
        llm_provider=provider,
        llm_model=model,
        search_providers=search,
        status=Status.INTERRUPTED,
        phase=Phase.ANALYSIS,
        research_brief="How ice cores keep the air and snow of past climates.",
        sub_queries=[
            SubQuery(
                query="ice core climate records",
                status=SubQueryStatus.COMPLETED,
                source_ids=[source.id],
                providers=search,
            )
        ],
        sources=[source],
    )
    state.limits.max_iterations = 1
    return state


async def test_a_research_whose_delete_failed_resumes_and_saves(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with research_runtime(settings, warm=False) as service:
        state = _interrupted(service)
        service.store.save(state)

        def refused(research_id: str) -> bool:
            raise StoreUnavailableError("The research store cannot be reached: refused.")

        monkeypatch.setattr(service.io.sync, "delete", refused)
        with pytest.raises(StoreUnavailableError):
            await service.delete(state.id)

        await service.resume(state.id)
        status = await wait_until(service, state.id, TERMINAL)
        assert status["status"] == "completed", status
        stored = service.store.load(state.id)
        assert stored.status is Status.COMPLETED
        assert stored.report


async def test_a_running_research_once_deleted_stays_deleted(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    """The delete cancels the run first; nothing the run writes after brings a row back."""
    tavily_server.latency = 0.5  # the run is still searching when the delete comes
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What do ice cores tell about past climates?")
        research_id = started["research_id"]
        await wait_until(service, research_id, {"running"})
        assert (await service.delete(research_id))["deleted"] is True
        await service.jobs.wait(research_id, 10)
        await service.io.drain()
        with pytest.raises(ResearchNotFoundError):
            service.store.load(research_id)
        assert service.store.events(research_id, 0, 10) == []
        assert research_id in service.runner.deleted
