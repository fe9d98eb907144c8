"""One server over stdio researching several questions, so many at once; what each cost.

A fresh ``python -m foundry_mcp`` (the code of ``code``, or this checkout's) is started as an
editor starts it, through the MCP SDK's stdio client, and left to finish its warm-up (no CPU for
0.3 s) and answer one call. Then the questions are researched, ``at_once`` at a time, each by a ``deep-research``
call and status long-polls to its end; its events (``research://{id}/events``) and report are
read after. Measured per research:

- wall: from the ``deep-research`` call to the status answer that says it ended;
- start: the ``deep-research`` call's own answer time; first request: from the call to the
  first provider request the fakes received for it;
- provider intervals (the fakes' requests attributed to it): their union is the time a
  provider call was in flight; overhead = wall - union (the server's own time, and waits on
  nothing a provider does); concurrency = the summed intervals over their union;
- prompt tokens, in all and by phase (the status's usage);
- facts: of those the searches returned, how many reached an analyst's prompt and the report;
- the critical path per phase, from the events' trace (code that records one).

The fakes' records are attributed to the researches once the run's wall and CPU are taken (over
thousands of long requests, the harness's own reading would otherwise share the two cores
with the researches it measures). The server's CPU time over the run is read from its process, divided by the researches, and so
is its reading processes' (the pages are read in processes of their own).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import Client, StdioServerParameters

from benchmarks.docpages.runs import report_body
from benchmarks.speed.world import World, environment
from foundry_mcp.research.llm.trace import critical_path
from tests.fakes import Exchange
from tests.fakes.docpages import DocQuestion
from tests.fakes.planted import facts_in

OPTIONS: dict[str, Any] = {
    "max_concurrent": 4,
    "max_sub_queries": 3,
    "max_sources_per_query": 3,
    "max_iterations": 1,
    "mode": "hierarchical",
}
TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted"}
CALL_EVENTS = ("llm_call", "search", "fetch")


@dataclass
class Research:
    """What one research measured (see the module)."""

    question: str
    called: float = 0.0  # when its deep-research call was made (time.time())
    research_id: str = ""
    status: str = "not run"
    error: str | None = None
    wall: float = 0.0
    start_ms: float = 0.0
    first_request_ms: float | None = None
    busy: float = 0.0  # union of its provider intervals
    summed: float = 0.0  # sum of its provider intervals
    requests: int = 0
    prompt_tokens: int = 0
    tokens_by_phase: dict[str, int] = field(default_factory=dict)
    searched: set[str] = field(default_factory=set)
    in_prompts: set[str] = field(default_factory=set)
    in_report: set[str] = field(default_factory=set)
    path: dict[str, float] = field(default_factory=dict)  # phase -> seconds on the critical path
    path_gaps: float = 0.0
    traced: bool = False

    @property
    def overhead(self) -> float:
        return max(0.0, self.wall - self.busy)

    @property
    def concurrency(self) -> float:
        return self.summed / self.busy if self.busy else 0.0


@dataclass
class Scenario:
    """One server's run: its researches, its CPU time, its wall time."""

    label: str
    researches: list[Research]
    wall: float
    cpu: float
    reading_cpu: float = 0.0  # of its reading processes (context/reading/elsewhere.py)
    harness_cpu: float = 0.0  # of this process meanwhile: the fakes and the client

    @property
    def machine_cpu(self) -> float:
        """The CPU the run took of this machine: server, reading processes, fakes, client."""
        return self.cpu + self.reading_cpu + self.harness_cpu

    @property
    def cpu_per_research(self) -> float:
        return self.cpu / max(1, len(self.researches))

    @property
    def reading_cpu_per_research(self) -> float:
        return self.reading_cpu / max(1, len(self.researches))


def union(intervals: Sequence[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


async def call(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("research", arguments)
    envelope = result.structured_content
    assert envelope is not None, result
    return envelope


def wait_until_idle(pid: int, quiet: float = 0.3, limit: float = 30.0) -> None:
    """Until the server has used (almost) no CPU for ``quiet`` s: its warm-up is done."""
    process = psutil.Process(pid)
    began = quiet_since = time.monotonic()
    last = sum(process.cpu_times()[:2])
    while time.monotonic() - began < limit:
        time.sleep(0.05)
        now = sum(process.cpu_times()[:2])
        if now - last > 0.005:
            quiet_since = time.monotonic()
        last = now
        if time.monotonic() - quiet_since >= quiet:
            return


def children_cpu(server: psutil.Process) -> float:
    """The CPU time of the server's child processes (its reading processes) so far."""
    total = 0.0
    for child in server.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += sum(child.cpu_times()[:2])
    return total


def server_process(before: set[int]) -> psutil.Process:
    """The server the stdio client started: the new child running foundry_mcp."""
    for child in psutil.Process().children(recursive=True):
        if child.pid not in before and "foundry_mcp" in " ".join(child.cmdline()):
            return child
    raise RuntimeError("the server process was not found")


async def research_one(client: Client, question: DocQuestion, effort: str) -> Research:
    measured = Research(question.text)
    called = measured.called = time.time()
    started = await call(
        client, action="deep-research", query=question.text, effort=effort, **OPTIONS
    )
    measured.start_ms = (time.time() - called) * 1000
    if not started["success"]:
        measured.status, measured.error = "refused", str(started.get("error"))
        return measured
    research_id = measured.research_id = started["data"]["research_id"]
    while True:
        envelope = await call(
            client,
            action="deep-research-status",
            research_id=research_id,
            wait=True,
            wait_timeout=30,
        )
        status = envelope["data"]
        if status["status"] in TERMINAL:
            break
    measured.wall = time.time() - called
    measured.status, measured.error = status["status"], status.get("error")
    usage = status.get("usage", {})
    measured.prompt_tokens = int(usage.get("total", {}).get("input_tokens", 0))
    measured.tokens_by_phase = {
        phase: int(item.get("input_tokens", 0)) for phase, item in usage.get("by_phase", {}).items()
    }
    report = await call(client, action="deep-research-report", research_id=research_id)
    text = (report.get("data") or {}).get("report") or ""
    measured.in_report = facts_in(report_body(text))
    events = await client.read_resource(f"research://{research_id}/events")
    _trace(measured, events.contents[0].text)  # type: ignore[union-attr]
    return measured


def attribute(researches: Sequence[Research], world: World) -> None:
    """Each research's provider side, from the fakes' records: after the run, so the
    harness's own reading of thousands of requests is not in the measured wall and CPU."""
    exchanges = world.exchanges_by_question()
    prompts = world.prompts_by_question("analyzer")
    for measured in researches:
        _provider_side(measured, world, exchanges, prompts)


def _provider_side(
    measured: Research,
    world: World,
    exchanges_by_question: dict[str, list[tuple[str, Exchange]]],
    prompts_by_question: dict[str, list[str]],
) -> None:
    exchanges = exchanges_by_question.get(measured.question, [])
    called = measured.called
    intervals = [(e.request.timestamp, e.sent) for _, e in exchanges]
    measured.requests = len(intervals)
    measured.busy = union(intervals)
    measured.summed = sum(stop - start for start, stop in intervals)
    if intervals:
        measured.first_request_ms = (min(start for start, _ in intervals) - called) * 1000
    corpus = world.library.corpus_of(measured.question)
    assert corpus is not None
    measured.searched = corpus.served_facts(e.request for kind, e in exchanges if kind == "search")
    measured.in_prompts = facts_in("\n".join(prompts_by_question.get(measured.question, [])))


def _trace(measured: Research, text: str) -> None:
    import json

    events = json.loads(text)
    events = events.get("events", events) if isinstance(events, dict) else events
    calls = [
        {**event["data"], "call": event["data"].get("call", event["kind"])}
        for event in events
        if event.get("kind") in CALL_EVENTS and "step" in event.get("data", {})
    ]
    if not calls:
        return
    measured.traced = True
    by_phase: dict[str, float] = defaultdict(float)
    for step in critical_path(calls):
        by_phase[step.phase or "?"] += (step.end_s - step.start_s) + step.gap_s
        measured.path_gaps += step.gap_s
    measured.path = dict(by_phase)


async def run_scenario(
    label: str,
    world: World,
    questions: Sequence[DocQuestion],
    *,
    at_once: int,
    effort: str,
    code: Path | None,
    research: Sequence[str] = (),
) -> Scenario:
    """Research ``questions`` on one fresh server, ``at_once`` at a time (see the module)."""
    with tempfile.TemporaryDirectory(prefix="speed-") as tmp:
        env = environment(Path(tmp), world, code, research)
        base = {key: os.environ[key] for key in ("PATH", "LANG") if key in os.environ}
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "foundry_mcp"], env={**base, **env}
        )
        before = {child.pid for child in psutil.Process().children(recursive=True)}
        async with Client(params, mode="legacy") as client:
            server = server_process(before)
            await anyio.to_thread.run_sync(wait_until_idle, server.pid)
            # One call first, as an editor makes (tools/list, a status): the SDK client here
            # imports its result validator on its first call (~0.1 s), which is not the
            # server's time to answer a start.
            await call(client, action="deep-research-list")
            await anyio.to_thread.run_sync(wait_until_idle, server.pid)
            cpu_before = sum(server.cpu_times()[:2])
            reading_before = children_cpu(server)
            harness_before = time.process_time()
            limiter = anyio.Semaphore(at_once)
            done: list[Research] = []

            async def one(question: DocQuestion) -> None:
                async with limiter:
                    done.append(await research_one(client, question, effort))

            began = time.time()
            async with anyio.create_task_group() as group:
                for question in questions:
                    group.start_soon(one, question)
            wall = time.time() - began
            cpu = sum(server.cpu_times()[:2]) - cpu_before
            reading = children_cpu(server) - reading_before
            harness = time.process_time() - harness_before
    attribute(done, world)
    return Scenario(label, done, wall, cpu, reading, harness)


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0
