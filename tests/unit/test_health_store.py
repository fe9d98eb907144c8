"""``GET /health`` reports the store from the outage the store records, and probes it with at
most one cheap statement every few seconds (issue 31, item 5)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from foundry_mcp.errors import StoreUnavailableError
from foundry_mcp.server.team.http import HealthProbe

pytestmark = pytest.mark.anyio


class _Store:
    def __init__(self) -> None:
        self.outage: StoreUnavailableError | None = None
        self.statements = 0

    def unavailable(self) -> StoreUnavailableError | None:
        return self.outage

    def fingerprint(self, research_id: str) -> None:
        self.statements += 1


class _Service:
    """A service whose store's reading side is ``store`` (``AsyncStore.reader``)."""

    def __init__(self, store: Any) -> None:
        self.io = SimpleNamespace(reader=store)


class _Host:
    readiness = "ready"

    def __init__(self, store: Any) -> None:
        self.current = _Service(store)


async def _answer(probe: HealthProbe) -> tuple[int, dict[str, Any]]:
    answer = await probe.answer(None)  # type: ignore[arg-type]
    return answer.status_code, json.loads(bytes(answer.body))


async def test_the_store_outage_makes_the_worker_not_ready() -> None:
    store = _Store()
    probe = HealthProbe(probe_seconds=3600)
    probe.attach(_Host(store))  # type: ignore[arg-type]
    code, body = await _answer(probe)
    assert code == 200 and body["store"] == "ok" and body["research_service"] == "ready"
    store.outage = StoreUnavailableError("The research store db cannot be reached: refused.")
    code, body = await _answer(probe)
    assert code == 503 and body["status"] == "unavailable", body
    assert body["store"] == "unavailable" and body["research_service"] == "unavailable"
    assert body["store_error"] == "The research store db cannot be reached: refused."
    store.outage = None
    code, body = await _answer(probe)
    assert code == 200 and body["store"] == "ok"
    assert store.statements == 1  # one probe for the three answers


async def test_without_a_probe_interval_every_answer_probes_the_store() -> None:
    store = _Store()
    store.outage = StoreUnavailableError("down")
    probe = HealthProbe(probe_seconds=0)
    probe.attach(_Host(store))  # type: ignore[arg-type]
    code, body = await _answer(probe)
    assert code == 503 and body["store_error"] == "down"
    await _answer(probe)
    assert store.statements == 2  # probe_seconds=0: one statement per answer
