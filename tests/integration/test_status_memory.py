"""The statuses a server remembers are bounded, and a deleted research's are forgotten (issue 38).

A status the store does not give in time is the last one this server read of that research
(``reads.LastReads``). That memory used to keep a decoded state for every research ever polled,
never evicted, even after a delete: a deleted research could still be answered as running. Each
test reads statuses, then makes the store unreachable, and asks again: a research still
remembered answers its last status (with a warning), one forgotten ``STORE_UNAVAILABLE``.
"""

from __future__ import annotations

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import ResearchNotFoundError, StoreUnavailableError
from foundry_mcp.research.models import Phase, Status
from foundry_mcp.research.service import reads
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.records import StatusRead
from foundry_mcp.runtime import research_runtime
from tests.support import stored_state

pytestmark = pytest.mark.anyio


def _stored(service: ResearchService, count: int) -> list[str]:
    """``count`` research of another server's, running; their ids."""
    ids = []
    for index in range(count):
        state = stored_state(index, status=Status.RUNNING, phase=Phase.GATHERING)
        service.store.create(state, Owner(), 600)
        ids.append(state.id)
    return ids


def _store_out_of_reach(service: ResearchService, monkeypatch: pytest.MonkeyPatch) -> None:
    def out_of_reach(research_id: str, known: object = None) -> StatusRead:
        raise StoreUnavailableError("The research store cannot be reached: refused.")

    monkeypatch.setattr(service.io.reader, "load_status", out_of_reach)


async def _remembered(service: ResearchService, research_id: str) -> bool:
    """Whether a status of ``research_id`` answers from memory (the store being out of reach)."""
    try:
        status = await service.status(research_id)
    except StoreUnavailableError:
        return False
    assert "This is the status as read at" in status["warnings"][0]
    return True


async def test_a_deleted_research_is_not_answered_from_memory(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with research_runtime(settings, warm=False, serving=False) as service:
        deleted, kept = _stored(service, 2)
        for research_id in (deleted, kept):
            await service.status(research_id)
        await service.delete(deleted)
        _store_out_of_reach(service, monkeypatch)
        assert not await _remembered(service, deleted)
        assert await _remembered(service, kept)


async def test_a_research_deleted_by_another_server_is_forgotten_when_found_gone(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with research_runtime(settings, warm=False, serving=False) as service:
        (research_id,) = _stored(service, 1)
        await service.status(research_id)
        service.store.delete(research_id)  # as another server would
        with pytest.raises(ResearchNotFoundError):
            await service.status(research_id)
        _store_out_of_reach(service, monkeypatch)
        assert not await _remembered(service, research_id)


async def test_only_the_research_read_most_recently_are_remembered(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reads, "LAST_READS_KEPT", 2, raising=False)
    async with research_runtime(settings, warm=False, serving=False) as service:
        first, second, third = _stored(service, 3)
        for research_id in (first, second, first, third):  # ``second`` read least recently
            await service.status(research_id)
        _store_out_of_reach(service, monkeypatch)
        assert not await _remembered(service, second)
        assert await _remembered(service, first)
        assert await _remembered(service, third)
