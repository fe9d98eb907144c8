"""Principals through the research service (the team server's callers, without the server):
a research belongs to the principal that started it, is unknown to every other one, and each
principal's limits hold. The local user (no principal) sees everything, as before."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import QuotaExceededError, ResearchNotFoundError, StoreUnavailableError
from foundry_mcp.research.models import utcnow
from foundry_mcp.research.principal import Principal
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

ALICE = Principal("alice")
BOB = Principal("bob")
UNKNOWN_ID = "deepres-000000000000"
QUESTION = "How does WAL mode work in SQLite?"


async def _completed(service: ResearchService, principal: Principal | None) -> str:
    started = await service.start(QUESTION, effort="quick", principal=principal)
    status = await wait_until(service, started["research_id"], TERMINAL)
    assert status["status"] == "completed", status
    return str(started["research_id"])


def _refusal(error: ResearchNotFoundError, research_id: str) -> tuple[str, str, str]:
    return (
        error.message.replace(research_id, "<id>"),
        error.remediation,
        error.error_code,
    )


async def test_a_research_exists_for_its_principal_and_the_local_user_only(
    settings: Settings,
) -> None:
    async with research_runtime(settings, warm=False) as service:
        alices = await _completed(service, ALICE)
        local = await _completed(service, None)
        assert service.store.load(alices).principal == "alice"
        assert service.store.load(local).principal is None

        reads: dict[str, Any] = {
            "status": lambda rid: service.status(rid, principal=BOB),
            "events": lambda rid: service.events(rid, principal=BOB),
            "report": lambda rid: service.report(rid, principal=BOB),
            "full_report": lambda rid: service.full_report(rid, BOB),
            "claims": lambda rid: service.claims(rid, BOB),
            "sources": lambda rid: service.sources(rid, BOB),
            "all_events": lambda rid: service.all_events(rid, BOB),
            "export": lambda rid: service.export(rid, format="json", principal=BOB),
            "restore": lambda rid: service.restore_content(rid, "src-00000000", BOB),
            "resume": lambda rid: service.resume(rid, max_iterations=3, principal=BOB),
            "cancel": lambda rid: service.cancel(rid, BOB),
            "delete": lambda rid: service.delete(rid, BOB),
        }
        for name, use in reads.items():
            refusals = []
            for research_id in (alices, local, UNKNOWN_ID):
                with pytest.raises(ResearchNotFoundError) as refused:
                    answer = use(research_id)
                    if hasattr(answer, "__await__"):
                        await answer
                refusals.append(_refusal(refused.value, research_id))
            assert refusals[0] == refusals[1] == refusals[2], name

        assert (await service.list(principal=BOB))["items"] == []
        assert [i["research_id"] for i in (await service.list(principal=ALICE))["items"]] == [
            alices
        ]
        everyone = {i["research_id"] for i in (await service.list())["items"]}
        assert everyone == {alices, local}  # the local user, as ever, sees all
        assert [rid for rid, _ in await service.recent_reports(10, 80, ALICE)] == [alices]
        assert await service.recent_reports(10, 80, BOB) == []

        # Alice reads and manages her own.
        assert (await service.status(alices, principal=ALICE))["status"] == "completed"
        assert (await service.report(alices, principal=ALICE))[0]["research_id"] == alices
        assert (await service.delete(alices, ALICE))["deleted"] is True
        events = (await service.events(local))["events"]
        assert not any("principal" in e["data"] for e in events if e["kind"] == "created")


async def test_a_principal_runs_at_most_its_limit_at_once(settings: Settings) -> None:
    limited = Principal("alice", max_concurrent_researches=1)
    async with research_runtime(settings, warm=False) as service:
        first = await service.start(QUESTION, effort="quick", principal=limited)
        with pytest.raises(QuotaExceededError) as refused:
            await service.start("What is a bloom filter?", effort="quick", principal=limited)
        assert refused.value.error_code == "QUOTA_EXCEEDED"
        assert "at most 1 at once (max_concurrent_researches)" in refused.value.message
        assert refused.value.details["active"] == 1
        other = await service.start("What is a bloom filter?", effort="quick", principal=BOB)
        for research_id in (first["research_id"], other["research_id"]):
            await wait_until(service, research_id, TERMINAL)
        again = await service.start("What is a skip list?", effort="quick", principal=limited)
        await wait_until(service, again["research_id"], TERMINAL)
        # A resume starts a run too.
        busy = await service.start(QUESTION, effort="quick", principal=limited)
        with pytest.raises(QuotaExceededError):
            await service.resume(first["research_id"], max_iterations=2, principal=limited)
        await wait_until(service, busy["research_id"], TERMINAL)


async def test_a_principal_stops_at_its_daily_cost(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        await _completed(service, ALICE)
        spent = service.store.spent_since("alice", utcnow() - timedelta(hours=24))
        assert spent > 0  # the fake model is priced
        await service.check_spending(Principal("alice", max_cost_usd_per_day=spent * 2))
        with pytest.raises(QuotaExceededError) as refused:
            await service.check_spending(Principal("alice", max_cost_usd_per_day=spent))
        assert "max_cost_usd_per_day" in refused.value.message
        assert refused.value.details["limit"] == "max_cost_usd_per_day"
        await service.check_spending(Principal("bob", max_cost_usd_per_day=spent))
        await service.check_spending(None)


async def test_the_spend_survives_deleting_the_research(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        research_id = await _completed(service, ALICE)
        spent = service.store.spent_since("alice", utcnow() - timedelta(hours=24))
        assert spent > 0
        await service.delete(research_id)
        # Deleting the research does not give its money back.
        assert service.store.spent_since("alice", utcnow() - timedelta(hours=24)) == spent
        with pytest.raises(QuotaExceededError):
            await service.check_spending(Principal("alice", max_cost_usd_per_day=spent))


async def test_the_quota_refuses_a_start_when_the_spend_cannot_be_read(
    settings: Settings,
) -> None:
    async with research_runtime(settings, warm=False) as service:
        service.io.reader.close()  # the store's reading side is gone (a database out of reach)
        with pytest.raises(StoreUnavailableError) as refused:
            await service.check_spending(Principal("alice", max_cost_usd_per_day=100.0))
        assert "not started" in refused.value.message
        await service.check_spending(Principal("bob"))  # no daily limit: nothing to read
