"""A research is never lost: SIGKILL the server in any phase, resume it in a new process.

Each test drives real ``python -m foundry_mcp`` processes over stdio (``tests.rawmcp``) against
the fake providers. Work finished before the kill must not be repeated after the resume: a
search whose answer had been saved is not sent again, and a source whose analysis had been
saved is not analysed again. "Saved before the kill" is decided conservatively from what the
test saw: a request the fake received at least ``latency + 0.5`` s before the kill, or before a
status read that showed the research already past that phase.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.fakes import FakeHTTPServer, RecordedRequest, ResearchBrain
from tests.fakes.brain import SOURCE_BLOCK_RE
from tests.rawmcp import RawServer

pytestmark = pytest.mark.stdio

LLM_LATENCY = 0.4
SEARCH_LATENCY = 0.5
SAVE_MARGIN = 0.5  # time a finished provider call needs to be checkpointed, generously
QUERY = "How do heat pumps perform in cold climates?"
LIMITS = {
    "max_iterations": 2,  # the default brain reports a gap in iteration 1: one refinement
    "max_sub_queries": 3,
    "max_sources_per_query": 3,
    "max_concurrent": 1,  # sequential searches, so a kill can fall between two of them
}
ACTIVE = {"queued", "running", "cancelling"}
TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted"}
# Sources are analysed as their searches return, during gathering, so the gathering kill also
# finds analyses saved and in flight; the analysis phase itself only sweeps up what is left.
PHASES = ["planning", "gathering", "synthesis", "refinement"]
# Once the research is seen in one of these phases, every earlier call of that kind is saved.
AFTER_GATHERING = {"analysis", "synthesis", "refinement"}
AFTER_ANALYSIS = {"synthesis", "refinement"}


@dataclass
class Observation:
    """One status read: when it was sent and what it said."""

    sent: float
    status: str
    phase: str
    iteration: int


@dataclass
class Timeline:
    observations: list[Observation] = field(default_factory=list)

    def first_sent_in(self, phases: set[str]) -> float | None:
        """When the first status read that showed one of ``phases`` was sent."""
        return next((o.sent for o in self.observations if o.phase in phases), None)


def ok(envelope: dict[str, Any]) -> dict[str, Any]:
    assert envelope["success"], envelope
    return dict(envelope["data"])


def status(server: RawServer, research_id: str, **extra: Any) -> dict[str, Any]:
    timeout = float(extra.get("wait_timeout", 0)) + 15
    return ok(
        server.call(
            {"action": "deep-research-status", "research_id": research_id, **extra}, timeout
        )
    )


def observe(server: RawServer, research_id: str, timeline: Timeline, **extra: Any) -> Observation:
    sent = time.time()
    data = status(server, research_id, **extra)
    seen = Observation(sent, data["status"], data["phase"], data["iteration"])
    timeline.observations.append(seen)
    return seen


def wait_for_phase(
    server: RawServer, research_id: str, phase: str, timeline: Timeline, timeout: float = 30
) -> None:
    """Poll until the research is running in ``phase`` (of its first iteration)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = observe(server, research_id, timeline, wait=True, wait_timeout=0.3)
        if seen.status == "running" and seen.phase == phase:
            return
        assert seen.status in ACTIVE, f"the research ended before {phase}: {seen}"
        assert seen.iteration == 1, f"the research went past {phase} unseen: {timeline}"
    pytest.fail(f"the research never reached {phase}: {timeline.observations[-3:]}")


def run_to_end(server: RawServer, research_id: str, timeout: float = 40) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = status(server, research_id, wait=True, wait_timeout=2)
        if data["status"] in TERMINAL:
            return data
    pytest.fail(f"the research did not finish within {timeout:g} s")


def wait_for_request(fake: FakeHTTPServer, path: str, timeout: float = 10) -> float:
    """When the fake received its first request to ``path``."""
    deadline = time.monotonic() + timeout
    while not fake.requests_to(path):
        assert time.monotonic() < deadline, f"no request to {path} within {timeout:g} s"
        time.sleep(0.02)
    return fake.requests_to(path)[0].timestamp


def start(server: RawServer) -> str:
    data = ok(server.call({"action": "deep-research", "query": QUERY, **LIMITS}))
    assert data["status"] == "queued"
    return str(data["research_id"])


def searched(requests: Iterable[RecordedRequest]) -> list[str]:
    return [str((r.json or {}).get("query")) for r in requests]


def analysed(requests: Iterable[RecordedRequest]) -> set[str]:
    """Source ids sent to the analyzer in these LLM requests."""
    ids: set[str] = set()
    for request in requests:
        messages = (request.json or {}).get("messages") or []
        system = "\n".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        if ResearchBrain.identify(system) == "analyzer":
            user = "\n".join(str(m.get("content")) for m in messages if m.get("role") == "user")
            ids.update(SOURCE_BLOCK_RE.findall(user))
    return ids


def saved_before(
    requests: Iterable[RecordedRequest],
    latency: float,
    killed_at: float,
    phase_seen_at: float | None,
) -> list[RecordedRequest]:
    """Requests whose answer the dead server had certainly received and checkpointed."""
    horizon = killed_at - (latency + SAVE_MARGIN)
    if phase_seen_at is not None:
        horizon = max(horizon, phase_seen_at)
    return [r for r in requests if r.timestamp <= horizon]


@pytest.mark.parametrize("phase", PHASES)
def test_sigkill_in_any_phase_then_resume_in_a_new_process(
    phase: str,
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
) -> None:
    openai_server.latency, tavily_server.latency = LLM_LATENCY, SEARCH_LATENCY
    timeline = Timeline()
    with RawServer(research_env) as first:
        research_id = start(first)
        wait_for_phase(first, research_id, phase, timeline)
        if phase == "gathering":
            # Searches run one at a time: kill once the first one counts as saved, while the
            # second is in flight and the third has not started.
            first_search = wait_for_request(tavily_server, "/search")
            time.sleep(max(0.0, first_search + SEARCH_LATENCY + SAVE_MARGIN + 0.05 - time.time()))
        killed_at = time.time()
        first.kill()
    assert first.process.returncode == -9

    searches_before = saved_before(
        tavily_server.requests_to("/search"),
        SEARCH_LATENCY,
        killed_at,
        timeline.first_sent_in(AFTER_GATHERING),
    )
    analyses_before = saved_before(
        openai_server.requests_to("/v1/chat/completions"),
        LLM_LATENCY,
        killed_at,
        timeline.first_sent_in(AFTER_ANALYSIS),
    )
    if phase in ("gathering", *AFTER_GATHERING):  # the check must not be vacuous
        assert searches_before, tavily_server.requests
    if phase in AFTER_ANALYSIS:
        assert analysed(analyses_before)

    openai_server.latency = tavily_server.latency = 0
    with RawServer(research_env) as second:
        # The store opens cleanly and tells the truth about the dead run.
        after_kill = status(second, research_id)
        assert after_kill["status"] == "interrupted", after_kill
        assert after_kill["phase"] == phase, after_kill
        assert after_kill["error"], after_kill
        listed = ok(second.call({"action": "deep-research-list"}))
        assert [(i["research_id"], i["status"]) for i in listed["items"]] == [
            (research_id, "interrupted")
        ]

        resumed_at = time.time()
        resumed = ok(second.call({"action": "deep-research-resume", "research_id": research_id}))
        assert resumed["status"] == "queued"
        assert resumed["resumed_from"] == "interrupted"
        assert resumed["phase"] == phase

        final = run_to_end(second, research_id)
        assert final["status"] == "completed", final
        assert final["iteration"] == 2, final
        # Deterministic planner and refiner: three planned queries and one follow-up, once each.
        assert final["progress"]["sub_queries_total"] == 4, final
        assert final["progress"]["sub_queries_done"] == 4, final

        report = ok(second.call({"action": "deep-research-report", "research_id": research_id}))
        assert report["status"] == "completed"
        assert report["report"].startswith("# "), report["report"][:200]
        assert report["sources"], report
        assert "Traceback" not in second.stderr_text()

    searches_after = [r for r in tavily_server.requests_to("/search") if r.timestamp >= resumed_at]
    repeated = set(searched(searches_before)) & set(searched(searches_after))
    assert not repeated, f"searches done before the kill ran again: {sorted(repeated)}"

    llm_after = [
        r for r in openai_server.requests_to("/v1/chat/completions") if r.timestamp >= resumed_at
    ]
    reanalysed = analysed(analyses_before) & analysed(llm_after)
    assert not reanalysed, f"sources analysed before the kill were analysed again: {reanalysed}"


def test_a_second_server_neither_interrupts_nor_resumes_a_live_research(
    research_env: dict[str, str],
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
) -> None:
    openai_server.latency, tavily_server.latency = LLM_LATENCY, SEARCH_LATENCY
    with RawServer(research_env) as owner:
        research_id = start(owner)
        timeline = Timeline()
        wait_for_phase(owner, research_id, "planning", timeline)

        with RawServer(research_env) as other:  # its start-up sweep must leave the research be
            seen = status(other, research_id)
            assert seen["status"] == "running", seen
            refused = other.call({"action": "deep-research-resume", "research_id": research_id})
            assert not refused["success"], refused
            assert refused["data"]["error_code"] == "INVALID_STATE", refused
            listed = ok(other.call({"action": "deep-research-list"}))
            assert [i["status"] for i in listed["items"]] == ["running"], listed

            openai_server.latency = tavily_server.latency = 0.05
            final = run_to_end(owner, research_id)
            assert final["status"] == "completed", final

            seen = status(other, research_id)
            assert seen["status"] == "completed", seen
            report = ok(other.call({"action": "deep-research-report", "research_id": research_id}))
            assert report["status"] == "completed"
            assert report["report"].startswith("# ")
            assert report["sources"]
