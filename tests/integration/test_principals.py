"""Principals through the research service (the team server's callers, without the server):
a research belongs to the principal that started it, is unknown to every other one, and each
principal's limits hold. The local user (no principal) sees everything, as before."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import QuotaExceededError, ResearchNotFoundError
from foundry_mcp.research.models import ResearchState, Status, utcnow
from foundry_mcp.research.principal import Principal
from foundry_mcp.research.service.quota import spent_recently
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

ALICE = Principal("alice")
BOB = Principal("bob")
UNKNOWN_ID = "deepres-000000000000"
QUESTION = "How does WAL mode work in SQLite?"


async def _completed(service: ResearchService, principal: Principal | None) -> str:
    started = service.start(QUESTION, effort="quick", principal=principal)
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

        assert service.list(principal=BOB)["items"] == []
        assert [i["research_id"] for i in service.list(principal=ALICE)["items"]] == [alices]
        everyone = {i["research_id"] for i in service.list()["items"]}
        assert everyone == {alices, local}  # the local user, as ever, sees all
        assert [rid for rid, _ in service.recent_reports(10, 80, ALICE)] == [alices]
        assert service.recent_reports(10, 80, BOB) == []

        # Alice reads and manages her own.
        assert (await service.status(alices, principal=ALICE))["status"] == "completed"
        assert service.report(alices, principal=ALICE)[0]["research_id"] == alices
        assert (await service.delete(alices, ALICE))["deleted"] is True
        events = service.events(local)["events"]
        assert not any("principal" in e["data"] for e in events if e["kind"] == "created")


async def test_a_principal_runs_at_most_its_limit_at_once(settings: Settings) -> None:
    limited = Principal("alice", max_concurrent_researches=1)
    async with research_runtime(settings, warm=False) as service:
        first = service.start(QUESTION, effort="quick", principal=limited)
        with pytest.raises(QuotaExceededError) as refused:
            service.start("What is a bloom filter?", effort="quick", principal=limited)
        assert refused.value.error_code == "QUOTA_EXCEEDED"
        assert "at most 1 at once (max_concurrent_researches)" in refused.value.message
        assert refused.value.details["active"] == 1
        other = service.start("What is a bloom filter?", effort="quick", principal=BOB)
        for research_id in (first["research_id"], other["research_id"]):
            await wait_until(service, research_id, TERMINAL)
        again = service.start("What is a skip list?", effort="quick", principal=limited)
        await wait_until(service, again["research_id"], TERMINAL)
        # A resume starts a run too.
        busy = service.start(QUESTION, effort="quick", principal=limited)
        with pytest.raises(QuotaExceededError):
            service.resume(first["research_id"], max_iterations=2, principal=limited)
        await wait_until(service, busy["research_id"], TERMINAL)


async def test_a_principal_stops_at_its_daily_cost(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        await _completed(service, ALICE)
        spent = spent_recently(service.store, "alice")
        assert spent > 0  # the fake model is priced
        await service.check_spending(Principal("alice", max_cost_usd_per_day=spent * 2))
        with pytest.raises(QuotaExceededError) as refused:
            await service.check_spending(Principal("alice", max_cost_usd_per_day=spent))
        assert "max_cost_usd_per_day" in refused.value.message
        assert refused.value.details["limit"] == "max_cost_usd_per_day"
        await service.check_spending(Principal("bob", max_cost_usd_per_day=spent))
        await service.check_spending(None)


async def test_only_the_last_24_hours_count(settings: Settings) -> None:
    async with research_runtime(settings, warm=False) as service:
        for hours, cost in ((1, 0.25), (23, 0.5), (25, 4.0)):
            state = ResearchState(
                query=f"{hours} hours ago?",
                llm_provider="openai",
                llm_model="m",
                principal="alice",
                created_at=utcnow() - timedelta(hours=hours),
            )
            state.status = Status.COMPLETED
            state.llm_usage.total.cost_usd = cost
            service.store.save(state)
        assert spent_recently(service.store, "alice") == pytest.approx(0.75)
        assert spent_recently(service.store, "bob") == 0
