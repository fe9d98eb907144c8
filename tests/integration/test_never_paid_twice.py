"""No LLM answer is bought twice: the journal replays what a stopped research already paid for."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import LLMCallRecord, ResearchState
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, FakeResponse, RecordedRequest, ResearchBrain
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


class Provider:
    """An LLM that answers from a counter, so a second real call would answer differently."""

    name = "fake"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        return LLMResponse(
            text=f"answer {self.calls}",
            model=request.model,
            provider=self.name,
            input_tokens=100,
            output_tokens=10,
        )

    async def aclose(self) -> None:
        return None


class Journal:
    def __init__(self) -> None:
        self.saved: dict[str, tuple[str, LLMCallRecord]] = {}

    async def get(self, key: str) -> tuple[str, LLMCallRecord] | None:
        return self.saved.get(key)

    async def put(self, key: str, answer: str, record: LLMCallRecord) -> None:
        self.saved[key] = (answer, record)


def _llm(provider: Provider, journal: Journal, state: ResearchState) -> ResearchLLM:
    return ResearchLLM(provider, "m", state, CallLog(), journal=journal)  # type: ignore[arg-type]


def _state() -> ResearchState:
    return ResearchState(query="q", llm_provider="fake", llm_model="m")


async def test_a_journaled_answer_is_replayed_and_counted_once() -> None:
    provider, journal = Provider(), Journal()
    state = _state()
    first = await _llm(provider, journal, state).ask("planning", "sys", "user", json_mode=True)
    # A restart: a new process, the state as saved after the call.
    again = await _llm(provider, journal, state).ask("planning", "sys", "user", json_mode=True)
    assert first == again == "answer 1" and provider.calls == 1
    assert state.llm_usage.total.calls == 1 and state.llm_usage.total.input_tokens == 100


async def test_a_crash_before_the_state_was_saved_counts_the_call_when_replayed() -> None:
    provider, journal = Provider(), Journal()
    await _llm(provider, journal, _state()).ask("analysis", "sys", "user", json_mode=True)
    fresh = _state()  # the state saved before the call: the call is not counted in it
    answer = await _llm(provider, journal, fresh).ask("analysis", "sys", "user", json_mode=True)
    assert answer == "answer 1" and provider.calls == 1
    assert fresh.llm_usage.total.calls == 1 and fresh.llm_usage.total.output_tokens == 10


async def test_another_request_is_not_a_replay() -> None:
    provider, journal = Provider(), Journal()
    state = _state()
    llm = _llm(provider, journal, state)
    await llm.ask("analysis", "sys", "user", json_mode=True)
    await llm.ask("analysis", "sys", "user, changed", json_mode=True)
    await llm.ask("analysis", "sys", "user", json_mode=False)
    assert provider.calls == 3 and len(journal.saved) == 3


async def test_a_failed_call_is_not_journaled() -> None:
    class Failing(Provider):
        async def complete(self, request: LLMRequest) -> LLMResponse:
            raise ProviderError("down", provider="fake", kind="bad_request")

    journal = Journal()
    with pytest.raises(ProviderError):
        await _llm(Failing(), journal, _state()).ask("planning", "s", "u", json_mode=True)
    assert journal.saved == {}


async def test_a_stopped_research_does_not_buy_its_report_again(
    settings: Settings, brain: ResearchBrain, openai_server: FakeHTTPServer
) -> None:
    # The fact-checker is slow: the research is cancelled while it checks the report, after the
    # writer's answer was paid for but before the synthesis phase was saved.
    def slow_checks(request: RecordedRequest, response: FakeResponse) -> float:
        system = str((request.json or {}).get("messages", [{}])[0].get("content", ""))
        return 1.5 if "fact-checker" in system else 0.0

    openai_server.delay = slow_checks
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(
            "How do B-trees stay balanced?", mode="simple", max_iterations=1
        )
        research_id = started["research_id"]
        with anyio.fail_after(30):
            while brain.calls["verifier"] == 0:
                await anyio.sleep(0.02)
        await service.cancel(research_id)
        stopped = await wait_until(service, research_id, TERMINAL)
        assert stopped["status"] == "cancelled" and stopped["phase"] == "synthesis"
        asked_before = _requests(openai_server)
        openai_server.delay = None
        await service.resume(research_id)
        final = await wait_until(service, research_id, TERMINAL)
        events = (await service.events(research_id, limit=500))["events"]
        journaled = service.store.journal.count(research_id)
    assert final["status"] == "completed", final["error"]
    asked = _requests(openai_server)
    repeated = [body for body, n in asked.items() if n > 1]
    # Only the fact-check calls in flight at the cancel (concurrent batches) may have been
    # sent again.
    assert all("fact-checker" in body for body in repeated)
    writer_requests = [body for body in asked if "research writer" in body]
    assert writer_requests and brain.calls["writer"] == len(writer_requests)  # each part once
    replays = [e for e in events if e["kind"] == "llm_replayed"]
    assert any(e["data"]["purpose"] == "synthesis" for e in replays)
    assert sum(asked_before.values()) < sum(asked.values())
    # Every distinct request was paid once and counted once.
    assert final["usage"]["total"]["calls"] == len(asked) == journaled


def _requests(server: FakeHTTPServer) -> Counter[str]:
    bodies: list[Any] = [r.json for r in server.requests if r.path.endswith("/chat/completions")]
    return Counter(str([m.get("content") for m in body.get("messages", [])]) for body in bodies)


async def test_a_fresh_run_looks_for_no_answer_of_its_own(
    settings: Settings, brain: ResearchBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the journal holds answers is read once, as the run is prepared: none, so no call
    of the run asks the store for its answer."""
    async with research_runtime(settings, warm=False) as service:
        # The run reads through the store's reading threads, each with a store of its own.
        journals = type(service.store.journal)
        count, get = journals.count, journals.get
        asked: list[str] = []

        def counting(self: Any, research_id: str) -> int:
            asked.append("count")
            return count(self, research_id)

        def getting(self: Any, research_id: str, key: str) -> Any:
            asked.append("get")
            return get(self, research_id, key)

        monkeypatch.setattr(journals, "count", counting)
        monkeypatch.setattr(journals, "get", getting)
        started = await service.start(
            "How do B-trees stay balanced?", mode="simple", max_iterations=1
        )
        final = await wait_until(service, started["research_id"], TERMINAL)
    assert final["status"] == "completed", final["error"]
    assert final["usage"]["total"]["calls"] > 3
    assert asked == ["count"]


async def test_a_journal_known_empty_is_not_read_and_one_known_full_is() -> None:
    from types import SimpleNamespace

    from foundry_mcp.research.runs.records import RunJournal

    reads: list[str] = []
    store = SimpleNamespace(journal=SimpleNamespace(count=lambda rid: 0, get=lambda rid, key: None))

    async def read(action: Any, patient: bool = False) -> Any:
        reads.append("read")
        return action(store)

    io: Any = SimpleNamespace(read=read)
    empty = RunJournal(io, None, "deepres-0123456789ab", set(), any_saved=False)  # type: ignore[arg-type]
    assert await empty.get("key") is None and reads == []
    full = RunJournal(io, None, "deepres-0123456789ab", set(), any_saved=True)  # type: ignore[arg-type]
    assert await full.get("key") is None and reads == ["read"]
    unknown = RunJournal(io, None, "deepres-0123456789ab", set())  # type: ignore[arg-type]
    reads.clear()
    await unknown.get("key")
    assert reads == ["read"]  # the count, then nothing saved: no entry read
