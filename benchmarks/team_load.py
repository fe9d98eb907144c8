"""Team server under load: two workers on one PostgreSQL, one SIGKILLed in the middle.

What runs. A throwaway PostgreSQL (``tests/postgres.py``; or ``--store-url``), the fake OpenAI
and Tavily servers of ``tests/fakes`` with realistic latency (``benchmarks/simulated.py``: LLM
0.4 s + 5 ms per output token, search 0.3 s), and two workers, A and B: ``foundry-mcp serve
--http`` processes (``tests/e2e/teamserver.py``), each under its own host name (``worker-a``,
``worker-b``, and each its own node: only the lease tells one whether the other is alive, as
between two machines), its
own ``research_dir`` (local caches only) and its own provider keys (``sk-worker-a``,
``tvly-worker-a``, ...), so that every request a fake receives names the worker that sent it.
Both share the store, the tokens of two principals (alice, bob) and ``[research]
lease_seconds`` (``--lease``); ``take_over_interval`` keeps its default (5 s, jittered ±50%),
so a takeover comes at most about lease + 7.5 s after a kill.

``--researches`` researches (default 30) start at once through MCP over streamable HTTP, each
with its own client session and a distinct question (one topic each, so that every search and
LLM call names its research), principals alternating alice/bob, the first half on A and the
rest on B (one client talks to one worker, as behind a load balancer with session affinity).
Options: ``mode=simple``, ``max_iterations=1``, ``max_sub_queries=3``,
``max_sources_per_query=3``: alone, a research takes about 15 s; thirty on one worker take up
to 45 s, most of it waiting for one of the worker's 8 LLM request slots (``[providers.openai]
max_in_flight``). Every client polls ``deep-research-status`` (without ``wait``) about every
0.5 s. Once at least half of A's researches have a completed search (read from the store), A
is SIGKILLed and the store is read (after ``SNAPSHOT_DELAY``, so that a write A had already
sent lands first): each of A's researches' status, phase and completed sub-queries. A's
clients, on the connection error, reconnect to B (what a load balancer does on failover) and
keep polling. No client resumes anything: a research seen ``interrupted`` must be taken over.

The clients send their calls with the session's ``send_request``, skipping the SDK's check of
each result against the tool's output schema (``call_tool`` compiles the schema once per
session, about 0.5 s of CPU): thirty clients in this one Python process would otherwise time
their own contention for the interpreter, where real clients each pay it on their own machine.

What it prints, once every research has ended (or ``--timeout`` passed):

- completed / total, and lost: a research its principal's ``deep-research-list`` (on B) does
  not show, or that did not end ``completed``; each with its id, status and what its client saw;
- taken over: how many of A's researches still active at the kill got a ``taken_over`` event,
  the seconds from the kill to the first and last takeover and to the last completion; the
  clients that saw ``interrupted``, and when the last client had failed over to B;
- run twice at once: each research's holder over time is rebuilt from its events (A until the
  ``taken_over`` event, then the worker it names by pid; B's own research: B throughout); a
  ``run_started`` event (by pid) or a provider request (by key) for a research from a worker
  that did not hold it at that moment is a violation, and so are two ``taken_over`` events for
  one research, a takeover before the kill, and the takeover of one of B's research (must be 0);
- completed searches repeated: searches sent after the kill whose query was a completed
  sub-query of that research in the snapshot (must be 0); for information, searches A had sent
  but not saved by the kill (in flight) that were made again;
- LLM calls made again: requests after the kill equal (model, messages, parameters) to a
  request of that research the fake had answered at least ``ANSWERED_MARGIN`` s before the
  kill (must be 0: the journal replays them), and, for information, to one in flight at the
  kill (the resumed run often asks differently, e.g. one analysis of every source instead of
  one per search, so this is often 0 too);
- status latency under load: p50, p99 and max of the ``deep-research-status`` calls answered,
  from sending to reading the answer in this process, overall and before/after the kill, with
  the calls that answered an error and those that broke (no answer: the calls in flight to A
  at the kill); the latency of the ``deep-research`` starts (opening the session included);
  client errors (failed calls and sessions other than the failovers: must be 0); the wall time;
  the machine's CPU use (the benchmark's own process, each worker; a busy machine slows
  everything); the provider requests by worker and the most a worker had in flight at once;
- the workers' log lines by level (the first ERROR lines, if any; ``--logs DIR`` keeps them).

The last line is the verdict; the exit status is 0 when every check holds, 1 otherwise (2 when
something could not start). It needs PostgreSQL 12+ (Debian's ``postgresql`` package; as root
it runs as ``postgres``) or ``--store-url`` (an empty database is best: the workers take over
any orphan they find there, and the benchmark's research stays in it). Everything it starts
stops when it ends, fails, or is interrupted (Ctrl-C, SIGTERM); the workers and PostgreSQL die
with it even when it is SIGKILLed. A failed run keeps the workers' logs (``--logs DIR``: always).
About a minute on 2 cores. Run from the repository root:

    python benchmarks/team_load.py [--researches 30] [--lease 10] [--seed 7] [--store-url URL]
        [--timeout 300] [--logs DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import psutil
from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.crash_resume import content_key, prompts
from benchmarks.simulated import simulate_latency
from foundry_mcp.research.store.url import redact_url
from tests.e2e.teamserver import TeamServer, mcp_client
from tests.fakes import FakeHTTPServer, RecordedRequest, ResearchBrain, fake_openai, fake_tavily
from tests.postgres import PostgresStartError, PostgresUnavailable, running_postgres

if TYPE_CHECKING:
    from mcp import Client

    from foundry_mcp.research.store.postgres.store import PostgresStore

OPTIONS: dict[str, Any] = {
    "mode": "simple",
    "max_iterations": 1,
    "max_sub_queries": 3,
    "max_sources_per_query": 3,
}
TOPICS = [
    "How do heat pumps perform in cold climates?",
    "How does garbage collection work in the JVM?",
    "What limits the range of electric trucks?",
    "How do vaccines train the immune system?",
    "How is coffee decaffeinated?",
    "Why do suspension bridges resonate in the wind?",
    "How do coral reefs recover from bleaching?",
    "How does TCP congestion control work?",
    "What drives inflation in small open economies?",
    "How do honey bees navigate?",
    "How are lithium-ion batteries recycled?",
    "How does sourdough fermentation work?",
    "What causes the northern lights?",
    "How do noise-cancelling headphones work?",
    "How is seawater desalination powered?",
    "How do octopuses change colour?",
    "How does RAID 6 tolerate disk failures?",
    "Why do glaciers flow?",
    "How do solid-state drives wear out?",
    "How is hard cheese aged?",
    "What makes reinforced concrete crack?",
    "How do migratory birds time their journeys?",
    "How does a B-tree stay balanced?",
    "How are ocean tides predicted?",
    "How do wind turbines survive storms?",
    "How does photosynthesis fix carbon?",
    "How do vector databases index embeddings?",
    "How are earthquakes located?",
    "How does oxidation change the flavour of tea?",
    "What keeps geostationary satellites in place?",
    "How do compilers allocate registers?",
    "How is wool spun into yarn?",
]
TOKENS = {"alice": "alice-team-load-4c1f9e2a7b5d", "bob": "bob-team-load-8d3e6a1c5f09"}
ACTIVE = {"queued", "running", "cancelling"}
# A research in one of these will not move again by itself; ``interrupted`` is not among them:
# the surviving worker must take it over.
FINAL = {"completed", "failed", "cancelled", "timed_out"}
POLL_SECONDS = 0.5
CALL_TIMEOUT = 30.0  # a status call that takes longer counts as failed
SNAPSHOT_DELAY = 0.25  # after the kill, before reading the store: a write A sent lands first
ANSWERED_MARGIN = 0.05  # an LLM answer sent this long before the kill was journaled
KILL_CUT_SECONDS = 1.0  # a request of A's the fake finished reading this close to the kill
LLM_PATH = "/v1/chat/completions"
SEARCH_PATH = "/search"
# Runs foundry-mcp's command line as another machine: another host name (changed before
# foundry_mcp is imported: ``Owner.host`` reads it then) and another node (``Owner.node``: where
# a pid can be checked), so that only the lease tells one worker whether the other is alive. The
# worker dies with the benchmark (prctl PR_SET_PDEATHSIG, Linux), even when the benchmark is
# SIGKILLed.
LAUNCHER = """
import ctypes, signal, socket, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL)
host = sys.argv.pop(1)
socket.gethostname = lambda: host
from foundry_mcp.research.store import owners
owners.this_node = lambda: "node-of-" + host
from foundry_mcp.cli import main
sys.exit(main(sys.argv[1:]))
"""


# ----------------------------------------------------------------------------- the actors


@dataclass
class Worker:
    """One ``foundry-mcp serve --http`` process, as one machine of a team."""

    name: str  # "A" or "B"
    server: TeamServer
    killed: bool = False  # by the benchmark

    @property
    def pid(self) -> int:
        return self.server.process.pid

    @property
    def alive(self) -> bool:
        # ``poll`` alone is not enough: while another thread waits for the process, it says
        # None even after the kill.
        return not self.killed and self.server.process.poll() is None

    def kill(self) -> None:
        self.killed = True
        self.server.process.send_signal(signal.SIGKILL)


@dataclass
class Snapshot:
    """One of A's researches as the store held it right after the kill."""

    status: str
    phase: str
    completed: set[str]  # the queries of its completed sub-queries


@dataclass
class Research:
    """One research, its client's observations, and what the store says at the end."""

    question: str
    principal: str
    home: str  # the worker it is started on: "A" or "B"
    research_id: str = ""
    seen: list[str] = field(default_factory=list)  # statuses its client saw, in order
    start_seconds: float | None = None  # from opening its session to knowing its id
    failover_at: float | None = None  # when its client moved to the surviving worker
    errors: list[str] = field(default_factory=list)
    snapshot: Snapshot | None = None
    final_status: str = "unknown"  # from the store, at the end
    completed_at: float | None = None
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class Event:
    """An event of a research's audit trail, as the store has it."""

    at: float  # time.time() scale
    kind: str
    data: dict[str, Any]


@dataclass(frozen=True)
class StatusCall:
    """One ``deep-research-status`` call of a client."""

    sent: float  # time.time()
    seconds: float
    worker: str
    outcome: str  # "ok", "error" (an error envelope) or "broken" (no answer: connection, timeout)


@dataclass(frozen=True)
class ProviderCall:
    """A request a fake received, with the worker (by key) and research (by question) it is of."""

    request: RecordedRequest
    worker: str | None
    research: Research | None
    answered: float | None  # when the fake sent its answer (None: never)

    @property
    def at(self) -> float:
        return self.request.timestamp


def busy_cpu() -> float:
    """CPU seconds the whole machine has spent busy (not idle, not waiting on disk)."""
    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def process_cpu(pid: int) -> float:
    """CPU seconds process ``pid`` has used (its threads, not its children); 0 once gone."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return float(times.user + times.system)


@dataclass
class CpuMeter:
    """Where the machine's CPU went during the researches: the benchmark's own process (its
    clients and the fakes), each worker (A until its kill), and everything (PostgreSQL too)."""

    began: dict[str, float] = field(default_factory=dict)
    used: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0

    def begin(self, workers: dict[str, Worker]) -> None:
        self.wall = time.monotonic()
        self.began = {"machine": busy_cpu(), "benchmark": process_cpu(psutil.Process().pid)}
        self.began |= {name: process_cpu(worker.pid) for name, worker in workers.items()}

    def sample_worker(self, worker: Worker) -> None:
        self.used[worker.name] = process_cpu(worker.pid) - self.began[worker.name]

    def end(self, workers: dict[str, Worker]) -> None:
        self.wall = time.monotonic() - self.wall
        self.used["machine"] = busy_cpu() - self.began["machine"]
        self.used["benchmark"] = process_cpu(psutil.Process().pid) - self.began["benchmark"]
        for worker in workers.values():
            if worker.alive:
                self.sample_worker(worker)

    def line(self) -> str:
        cores = psutil.cpu_count() or 1
        used = self.used
        shown = ", ".join(
            f"{label} {used[key]:.0f} s"
            for key, label in (
                ("benchmark", "this process (clients, fakes)"),
                ("A", "worker A (until killed)"),
                ("B", "worker B"),
            )
            if key in used
        )
        return (
            f"CPU: {used.get('machine', 0):.0f} s busy of {cores} cores x {self.wall:.0f} s "
            f"({used.get('machine', 0) / max(1e-9, cores * self.wall):.0%}); {shown}"
        )


@dataclass
class Bench:
    """Everything one run shares: settings, workers, researches, and what was observed."""

    args: argparse.Namespace
    store: PostgresStore
    llm: FakeHTTPServer
    search: FakeHTTPServer
    workers: dict[str, Worker]
    researches: list[Research]
    deadline: float  # time.monotonic()
    calls: list[StatusCall] = field(default_factory=list)
    began: float = 0.0  # time.time() when the researches were started
    ended: float = 0.0  # when the last client saw its research end
    killed_at: float | None = None
    listed: dict[str, set[str]] = field(default_factory=dict)  # principal -> ids listed
    list_errors: list[str] = field(default_factory=list)
    cpu: CpuMeter = field(default_factory=CpuMeter)

    def survivor(self) -> Worker:
        return self.workers["B"]

    def of(self, worker: str) -> list[Research]:
        return [r for r in self.researches if r.home == worker]

    def by_pid(self, event: Event) -> str:
        """The worker whose pid an event names ("A", "B"), else "pid N"."""
        pid = event.data.get("pid")
        return next((n for n, w in self.workers.items() if w.pid == pid), f"pid {pid}")


def host_name(worker: str) -> str:
    return f"worker-{worker.lower()}"


def llm_key(worker: str) -> str:
    return f"sk-worker-{worker.lower()}"


def search_key(worker: str) -> str:
    return f"tvly-worker-{worker.lower()}"


def questions(count: int, seed: int) -> list[str]:
    """``count`` distinct questions, in an order shuffled by ``seed``; beyond the topics, each
    topic again as another case (no question is part of another)."""
    chosen = []
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        round_ = n // len(TOPICS)
        chosen.append(topic if round_ == 0 else f"{topic[:-1]}, case {round_ + 1}?")
    random.Random(seed).shuffle(chosen)
    return chosen


def plan_researches(count: int, seed: int) -> list[Research]:
    """The first half on A, the rest on B; principals alternate alice, bob."""
    on_a = math.ceil(count / 2)
    return [
        Research(
            question=question,
            principal="alice" if n % 2 == 0 else "bob",
            home="A" if n < on_a else "B",
        )
        for n, question in enumerate(questions(count, seed))
    ]


# ----------------------------------------------------------------------------- setting up


def write_config(path: Path, lease: float) -> None:
    """The workers' configuration: the lease, no page fetching, no SDK retries."""
    path.write_text(
        f"[research]\nlease_seconds = {lease}\n\n"
        "[research.fetch]\nenabled = false\n\n"
        # 8 slots, as the figures of docs/benchmarks.md were measured with (a team server's
        # default is now [server] llm_max_in_flight, 32).
        "[providers.openai]\nmax_retries = 0\nmax_in_flight = 8\n\n"
        "[providers.tavily]\nmax_retries = 0\n"
    )


def worker_env(
    tmp: Path, name: str, config: Path, store_url: str, llm: FakeHTTPServer, search: FakeHTTPServer
) -> dict[str, str]:
    """A worker's environment: its own home, research_dir and keys; the shared store."""
    home = tmp / f"worker-{name.lower()}"
    (home / "home").mkdir(parents=True)
    return {
        "HOME": str(home / "home"),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(home / "research"),
        "FOUNDRY_MCP_STORE_URL": store_url,
        "FOUNDRY_MCP_TOKENS": ",".join(f"{who}:{token}" for who, token in TOKENS.items()),
        "FOUNDRY_MCP_NO_DOWNLOADS": "1",
        "OPENAI_API_KEY": llm_key(name),
        "OPENAI_BASE_URL": llm.base_url + "/v1",
        "TAVILY_API_KEY": search_key(name),
        "TAVILY_BASE_URL": search.base_url,
        # Nothing may reach the internet: any other HTTPS request goes to a closed port.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }


class SetupError(Exception):
    """Something the benchmark needs did not start."""


def start_workers(stack: ExitStack, envs: dict[str, dict[str, str]]) -> dict[str, Worker]:
    """Start every worker at once (they migrate the store together), wait until all are ready;
    each is stopped when ``stack`` closes."""
    workers = {}
    for name, env in envs.items():
        launcher = [sys.executable, "-c", LAUNCHER, host_name(name)]
        server = TeamServer(env, "--log-format", "json", launcher=launcher)
        stack.callback(stop_worker, server)
        workers[name] = Worker(name, server)
    for worker in workers.values():
        try:
            worker.server.wait_ready()
        except AssertionError as exc:  # how TeamServer says it
            raise SetupError(f"worker {worker.name} did not start: {exc}") from None
    return workers


def stop_worker(server: TeamServer) -> None:
    """Stop a worker (a killed one is only reaped); never raises."""
    try:
        server.stop()
    except AssertionError:
        print(f"note: a worker did not stop on SIGTERM and was killed (pid {server.process.pid})")


@contextmanager
def store_url(args: argparse.Namespace) -> Iterator[str]:
    """``--store-url``, else the URL of a throwaway PostgreSQL stopped when the block ends."""
    if args.store_url:
        yield args.store_url
        return
    # Out of this process's group: on a Ctrl-C the workers, which the terminal interrupts
    # too, save their research before the database stops.
    with running_postgres(own_process_group=True) as server:
        print(f"PostgreSQL started in {server.started_in:.1f} s (throwaway, unix socket only)")
        yield server.url()


def open_store(url: str, tmp: Path) -> PostgresStore:
    """The benchmark's own view of the store (imported here: it needs the driver, psycopg)."""
    from foundry_mcp.research.store.postgres.store import PostgresStore

    return PostgresStore(url, tmp / "bench-research")


# ----------------------------------------------------------------------------- the clients


class CallFailed(Exception):
    """A status call that answered an error envelope."""


async def research_call(client: Client, **arguments: Any) -> dict[str, Any]:
    """Call the research tool; its envelope.

    The request goes through the session's ``send_request``, not ``call_tool``: ``call_tool``
    also validates the result against the tool's output schema, and compiles that schema once
    per session (about 0.5 s of CPU). Thirty clients in this one Python process would then
    measure their own contention for the interpreter, not the server; a real client pays that
    on its own machine.
    """
    request = CallToolRequest(params=CallToolRequestParams(name="research", arguments=arguments))
    with anyio.fail_after(CALL_TIMEOUT):
        result = await client.session.send_request(request, CallToolResult)
    envelope = result.structured_content
    if envelope is None:
        raise CallFailed(f"no structured content: {result.content!r:.200}")
    return dict(envelope)


async def poll_status(bench: Bench, client: Client, research: Research, worker: Worker) -> str:
    """One ``deep-research-status`` call, timed and recorded; the status it read."""
    sent, began = time.time(), time.perf_counter()
    outcome = "broken"
    try:
        envelope = await research_call(
            client, action="deep-research-status", research_id=research.research_id
        )
        outcome = "ok" if envelope["success"] else "error"
    except CallFailed:
        outcome = "error"
        raise
    finally:
        bench.calls.append(StatusCall(sent, time.perf_counter() - began, worker.name, outcome))
    if outcome == "error":
        raise CallFailed(f"status failed on {worker.name}: {envelope['error']}")
    status = str(envelope["data"]["status"])
    if not research.seen or research.seen[-1] != status:
        research.seen.append(status)
    return status


async def follow(bench: Bench, research: Research) -> None:
    """Start the research on its worker and poll its status until it ends; when the worker is
    gone, go on with the surviving one. Never resumes."""
    worker = bench.workers[research.home]
    while time.monotonic() < bench.deadline:
        began = time.perf_counter()
        try:
            async with mcp_client(worker.server.url, TOKENS[research.principal]) as client:
                if not research.research_id:
                    started = await research_call(
                        client, action="deep-research", query=research.question, **OPTIONS
                    )
                    if not started["success"]:
                        research.errors.append(f"start refused: {started['error']}")
                        return
                    research.research_id = str(started["data"]["research_id"])
                    research.start_seconds = time.perf_counter() - began
                await anyio.sleep(random.uniform(0, POLL_SECONDS))
                while time.monotonic() < bench.deadline:
                    polled = time.monotonic()
                    try:
                        if await poll_status(bench, client, research, worker) in FINAL:
                            return
                    except CallFailed as exc:
                        research.errors.append(str(exc))
                    await anyio.sleep(max(0.05, POLL_SECONDS - (time.monotonic() - polled)))
                research.errors.append("the benchmark's timeout passed")
                return
        except Exception as exc:  # the worker's connection broke (or the session failed)
            if not worker.alive and worker is not bench.survivor():
                research.failover_at = time.time()
                worker = bench.survivor()
                continue
            research.errors.append(f"session failed on {worker.name}: {describe(exc)}")
            if not worker.alive:
                return  # the surviving worker died: nothing left to ask
            await anyio.sleep(1)


def describe(exc: BaseException) -> str:
    """An exception in one line, the first of a group's."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:300]


async def list_ids(worker: Worker, principal: str) -> set[str]:
    """Every research id ``deep-research-list`` shows ``principal``."""
    ids: set[str] = set()
    cursor = None
    async with mcp_client(worker.server.url, TOKENS[principal]) as client:
        while True:
            extra: dict[str, Any] = {"cursor": cursor} if cursor else {}
            page = await research_call(client, action="deep-research-list", limit=100, **extra)
            if not page["success"]:
                raise CallFailed(f"list failed for {principal}: {page['error']}")
            ids.update(item["research_id"] for item in page["data"]["items"])
            cursor = page["data"]["next_cursor"]
            if not cursor:
                return ids


# ----------------------------------------------------------------------------- the kill


def searched(store: PostgresStore, research_ids: Iterable[str]) -> int:
    """How many of these researches have at least one completed sub-query."""
    return sum(1 for rid in research_ids if store.load(rid).completed_sub_queries())


def snapshot(store: PostgresStore, research: Research) -> Snapshot:
    """The research's status, phase and completed sub-queries, as stored now."""
    state = store.load(research.research_id)
    return Snapshot(
        state.status.value, state.phase.value, {q.query for q in state.completed_sub_queries()}
    )


async def kill_midway(bench: Bench) -> None:
    """SIGKILL worker A once all its researches have started and half of them have a completed
    search; then read each of them from the store."""
    mine = bench.of("A")
    needed = math.ceil(len(mine) / 2)
    worker = bench.workers["A"]
    while time.monotonic() < bench.deadline:
        ids = [r.research_id for r in mine if r.research_id]
        if len(ids) == len(mine):
            done = await anyio.to_thread.run_sync(searched, bench.store, ids)
            if done >= needed:
                break
        await anyio.sleep(0.1)
    else:
        return
    bench.cpu.sample_worker(worker)
    worker.kill()
    bench.killed_at = time.time()
    await anyio.to_thread.run_sync(worker.server.process.wait)
    await anyio.sleep(SNAPSHOT_DELAY)
    for research in mine:
        research.snapshot = await anyio.to_thread.run_sync(snapshot, bench.store, research)
    at_kill = [r.snapshot for r in mine if r.snapshot]
    phases = Counter(s.phase if s.status in ACTIVE else s.status for s in at_kill)
    print(
        f"SIGKILLed worker A (pid {worker.pid}) {bench.killed_at - bench.began:.1f} s after the "
        f"start; A's {len(mine)} researches: {sum(1 for s in at_kill if s.completed)} with a "
        "completed search, " + ", ".join(f"{n} {phase}" for phase, n in phases.most_common()),
        flush=True,
    )


async def drive(bench: Bench) -> None:
    """Run the researches to their end (``researches_to_end``); a SIGINT or SIGTERM stops
    everything and is raised as ``KeyboardInterrupt``."""
    interrupted = False
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as everything:

            async def on_signal() -> None:
                nonlocal interrupted
                async for _ in signals:
                    interrupted = True
                    everything.cancel_scope.cancel()

            everything.start_soon(on_signal)
            await researches_to_end(bench)
            everything.cancel_scope.cancel()
    if interrupted:
        raise KeyboardInterrupt


async def researches_to_end(bench: Bench) -> None:
    """Start every research at once, kill A midway, wait for every end, then list."""
    bench.began = time.time()
    bench.cpu.begin(bench.workers)
    async with anyio.create_task_group() as clients:
        killer = anyio.CancelScope()

        async def kill() -> None:
            with killer:
                await kill_midway(bench)

        clients.start_soon(kill)
        async with anyio.create_task_group() as researches:
            for research in bench.researches:
                researches.start_soon(follow, bench, research)
        bench.ended = time.time()
        bench.cpu.end(bench.workers)
        killer.cancel()
    for principal in TOKENS:
        try:
            bench.listed[principal] = await list_ids(bench.survivor(), principal)
        except Exception as exc:  # counted as lost; the reason is printed
            bench.list_errors.append(f"{principal}'s list failed: {describe(exc)}")


# ----------------------------------------------------------------------------- reading back


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def read_back(bench: Bench) -> None:
    """Each research's final status and events, from the store."""
    for research in bench.researches:
        if not research.research_id:
            continue
        state = bench.store.load(research.research_id)
        research.final_status = state.status.value
        research.completed_at = state.completed_at.timestamp() if state.completed_at else None
        after = 0
        while page := bench.store.events(research.research_id, after, 500):
            research.events += [Event(parse_time(e.at), e.kind, e.data) for e in page]
            after = page[-1].seq


def attribute(bench: Bench, server: FakeHTTPServer, path: str) -> list[ProviderCall]:
    """The requests to ``path``, each with its worker (by key) and research (by question)."""
    keys = {f"Bearer {llm_key(n)}": n for n in bench.workers}
    keys |= {f"Bearer {search_key(n)}": n for n in bench.workers}
    by_length = sorted(bench.researches, key=lambda r: -len(r.question))
    answered = {id(exchange.request): exchange.sent for exchange in list(server.exchanges)}
    calls = []
    for request in server.requests_to(path):
        text = " ".join(prompts(request)) if path == LLM_PATH else query_of(request)
        research = next((r for r in by_length if r.question in text), None)
        worker = keys.get(request.headers.get("authorization", ""))
        calls.append(ProviderCall(request, worker, research, answered.get(id(request))))
    return calls


def query_of(request: RecordedRequest) -> str:
    return str((request.json or {}).get("query") or "")


def holder(bench: Bench, research: Research, at: float) -> str:
    """The worker entitled to act for ``research`` at ``at``: its own until a takeover, then
    the worker the first ``taken_over`` event names."""
    for event in research.events:
        if event.kind == "taken_over" and event.at <= at:
            return bench.by_pid(event)
    return research.home


def twice_at_once(bench: Bench, calls: list[ProviderCall]) -> list[str]:
    """Every event or provider request by a worker that did not hold the research then."""
    killed_at = bench.killed_at or math.inf
    found = []
    for research in bench.researches:
        rid = research.research_id
        takeovers = [e for e in research.events if e.kind == "taken_over"]
        if len(takeovers) > 1:
            found.append(f"{rid}: {len(takeovers)} taken_over events")
        for event in takeovers:
            by = bench.by_pid(event)
            if research.home != "A" or event.at < killed_at:
                found.append(
                    f"{rid} (on {research.home}): taken over by {by} "
                    f"{event.at - killed_at:+.2f} s from the kill"
                )
        for event in research.events:
            if event.kind == "run_started":
                by = bench.by_pid(event)
                if by != holder(bench, research, event.at):
                    found.append(f"{rid}: run started by {by} while another worker held it")
    for call in calls:
        if call.research is None or call.worker is None:
            continue
        if call.worker != holder(bench, call.research, call.at):
            found.append(
                f"{call.research.research_id}: {call.request.path} by {call.worker} "
                f"{call.at - killed_at:+.2f} s from the kill, while "
                f"{holder(bench, call.research, call.at)} held it"
            )
    return found


@dataclass
class Repeats:
    """Work of A's researches done again after the kill."""

    searches_completed: list[str] = field(default_factory=list)  # must stay empty
    searches_in_flight: int = 0
    llm_answered: list[str] = field(default_factory=list)  # must stay empty
    llm_in_flight: int = 0


def repeats(bench: Bench, searches: list[ProviderCall], llm: list[ProviderCall]) -> Repeats:
    """Searches and LLM calls made again after the kill, by what the store or the fake had
    of them before it."""
    found = Repeats()
    killed_at = bench.killed_at
    if killed_at is None:
        return found
    for research in bench.of("A"):
        saved = research.snapshot.completed if research.snapshot else set()
        mine = [c for c in searches if c.research is research]
        before = {query_of(c.request) for c in mine if c.at < killed_at}
        for call in (c for c in mine if c.at >= killed_at):
            query = query_of(call.request)
            if query in saved:
                found.searches_completed.append(f"{research.research_id}: {query!r}")
            elif query in before:
                found.searches_in_flight += 1
        mine = [c for c in llm if c.research is research]
        answered = {
            content_key(c.request)
            for c in mine
            if c.answered is not None and c.answered <= killed_at - ANSWERED_MARGIN
        }
        in_flight = {content_key(c.request) for c in mine if c.at < killed_at} - answered
        for call in (c for c in mine if c.at >= killed_at):
            key = content_key(call.request)
            if key in answered:
                system, _ = prompts(call.request)
                agent = ResearchBrain.identify(system)
                found.llm_answered.append(f"{research.research_id}: a {agent} call")
            elif key in in_flight:
                found.llm_in_flight += 1
    return found


# ----------------------------------------------------------------------------- printing


def peak_in_flight(calls: Iterable[ProviderCall]) -> int:
    """The most requests that were at the fake at once (received, not yet answered)."""
    moments = []
    for call in calls:
        moments.append((call.at, 1))
        moments.append((call.answered if call.answered is not None else math.inf, -1))
    peak = running = 0
    for _, step in sorted(moments):  # an answer sent as another arrives counts first
        running += step
        peak = max(peak, running)
    return peak


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def latency_line(label: str, calls: list[StatusCall]) -> str:
    """The percentiles of the calls answered; how many answered an error or not at all."""
    timings = [c.seconds * 1000 for c in calls if c.outcome == "ok"]
    outcomes = Counter(c.outcome for c in calls)
    counts = f"{len(timings)} answered, {outcomes['error']} errors, {outcomes['broken']} broken"
    if not timings:
        return f"  {label:12s} no answered call; {counts}"
    return (
        f"  {label:12s} p50 {percentile(timings, 0.5):6.0f} ms   p99 "
        f"{percentile(timings, 0.99):6.0f} ms   max {max(timings):6.0f} ms   {counts}"
    )


def print_settings(bench: Bench, url: str) -> None:
    """What runs: the researches, the workers and their lease, the store, the latencies."""
    args = bench.args
    on_a, on_b = len(bench.of("A")), len(bench.of("B"))
    principals = Counter(r.principal for r in bench.researches)
    print(
        f"researches: {len(bench.researches)} ({on_a} on worker A, {on_b} on worker B; "
        + ", ".join(f"{p} {n}" for p, n in sorted(principals.items()))
        + "), "
        + ", ".join(f"{k}={v}" for k, v in OPTIONS.items())
    )
    print(
        f"workers: A (host {host_name('A')}, pid {bench.workers['A'].pid}) and B (host "
        f"{host_name('B')}, pid {bench.workers['B'].pid}); lease_seconds={args.lease:g} (renewed every "
        f"{min(5.0, args.lease / 4):g} s), take_over_interval=5 s (default, jittered ±50%)"
    )
    print(f"store: {redact_url(url)}")
    print(
        "latency: LLM 0.4 s + 5 ms per output token, search 0.3 s; status polled every "
        f"{POLL_SECONDS:g} s per research (no wait); kill: SIGKILL A once "
        f"{math.ceil(on_a / 2)} of its researches have a completed search; seed {args.seed}"
    )


def report(bench: Bench) -> list[str]:
    """Print every figure; the names of the checks that failed."""
    print()
    failed = [] if bench.killed_at is not None else ["no kill"]
    if bench.killed_at is None:
        print("worker A was never killed: its researches never reached a completed search")
    llm = attribute(bench, bench.llm, LLM_PATH)
    searches = attribute(bench, bench.search, SEARCH_PATH)
    failed += report_outcomes(bench)
    failed += report_takeovers(bench)
    failed += report_twice(bench, llm + searches)
    failed += report_repeats(bench, searches, llm)
    failed += report_load(bench, llm, searches)
    return failed


def report_outcomes(bench: Bench) -> list[str]:
    """Completed, lost (not completed, or not listed to its principal), listed to another."""
    researches = bench.researches
    lost = [
        r
        for r in researches
        if r.final_status != "completed" or r.research_id not in bench.listed.get(r.principal, ())
    ]
    elsewhere = [
        r.research_id
        for r in researches
        for other, ids in bench.listed.items()
        if other != r.principal and r.research_id in ids
    ]
    completed = sum(1 for r in researches if r.final_status == "completed")
    print(f"completed: {completed}/{len(researches)}; lost: {len(lost)}")
    for r in lost:
        listed = r.research_id in bench.listed.get(r.principal, ())
        print(
            f"  {r.research_id or '(never started)'} on {r.home} for {r.principal}: "
            f"{r.final_status}, {'listed' if listed else 'NOT listed'}; its client saw "
            f"{' > '.join(r.seen) or 'nothing'}; {'; '.join(r.errors[-2:])}"
        )
    if elsewhere:
        print(f"  listed to another principal: {elsewhere}")
    for line in bench.list_errors:
        print(f"  {line}")
    return (["lost"] if lost else []) + (["isolation"] if elsewhere else [])


def report_takeovers(bench: Bench) -> list[str]:
    """A's researches taken over, when, and what their clients saw."""
    killed_at = bench.killed_at or 0.0
    mine = bench.of("A")
    active = {r.research_id for r in mine if r.snapshot and r.snapshot.status in ACTIVE}
    taken = {
        r.research_id: e.at - killed_at for r in mine for e in r.events if e.kind == "taken_over"
    }
    print(
        f"taken over: {len(active & set(taken))} of A's {len(active)} researches active at the "
        "kill"
        + (
            f"; kill to first takeover {min(taken.values()):.1f} s, to last "
            f"{max(taken.values()):.1f} s"
            if taken
            else ""
        )
    )
    ends = [r.completed_at for r in bench.researches if r.completed_at]
    if bench.killed_at and ends:
        print(f"kill to the last completion: {max(ends) - killed_at:.1f} s")
    interrupted = sum(1 for r in bench.researches if "interrupted" in r.seen)
    failovers = [r.failover_at - killed_at for r in mine if r.failover_at]
    print(
        f"clients that saw 'interrupted': {interrupted} (none resumed: the benchmark's clients "
        f"never do); failovers to B: {len(failovers)}"
        + (f", the last {max(failovers):.2f} s after the kill" if failovers else "")
    )
    stuck = [r.research_id for r in bench.researches if r.final_status == "interrupted"]
    if stuck:
        print(f"  left interrupted (a client would have had to resume): {stuck}")
    return ["not taken over"] if not active <= set(taken) else []


def report_twice(bench: Bench, calls: list[ProviderCall]) -> list[str]:
    """Events and requests by a worker that did not hold the research; unattributed ones."""
    violations = twice_at_once(bench, calls)
    print(f"run twice at once: {len(violations)}")
    for line in violations[:10]:
        print(f"  {line}")
    cut = [c for c in calls if cut_by_kill(bench, c)]
    unattributed = [c for c in calls if (c.research is None or c.worker is None) and c not in cut]
    if cut:
        print(
            f"  requests of A cut short by the kill (body unreadable, not attributed): {len(cut)}"
        )
    if unattributed:
        print(f"  provider requests not attributed to a research and worker: {len(unattributed)}")
    for call in unattributed[:3]:
        system, user = prompts(call.request)
        text = query_of(call.request) or f"{ResearchBrain.identify(system)}: {user}"
        print(f"    {call.request.path} by {call.worker or '?'}: {text[:300]!r}")
    return (["run twice"] if violations else []) + (
        ["unattributed requests"] if unattributed else []
    )


def cut_by_kill(bench: Bench, call: ProviderCall) -> bool:
    """A request whose body A was still sending when it was killed: the fake read it short
    (its JSON does not parse), at the kill."""
    killed_at = bench.killed_at
    return (
        killed_at is not None
        and call.worker == "A"
        and call.request.json is None
        and abs(call.at - killed_at) < KILL_CUT_SECONDS
    )


def report_repeats(
    bench: Bench, searches: list[ProviderCall], llm: list[ProviderCall]
) -> list[str]:
    """Completed searches and answered LLM calls made again after the kill."""
    again = repeats(bench, searches, llm)
    print(
        f"completed searches repeated: {len(again.searches_completed)}; searches in flight "
        f"at the kill made again: {again.searches_in_flight}"
    )
    for line in again.searches_completed[:10]:
        print(f"  {line}")
    print(
        f"LLM calls answered before the kill made again: {len(again.llm_answered)}; in flight "
        f"at the kill made again: {again.llm_in_flight}"
    )
    for line in again.llm_answered[:10]:
        print(f"  {line}")
    return (["completed search repeated"] if again.searches_completed else []) + (
        ["answered LLM call repeated"] if again.llm_answered else []
    )


def report_load(bench: Bench, llm: list[ProviderCall], searches: list[ProviderCall]) -> list[str]:
    """Status latency, start latency, client errors, wall time, CPU, provider requests."""
    killed_at = bench.killed_at
    print("status latency under load (deep-research-status, no wait):")
    print(latency_line("overall", bench.calls))
    if killed_at:
        print(latency_line("before kill", [c for c in bench.calls if c.sent < killed_at]))
        print(latency_line("after kill", [c for c in bench.calls if c.sent >= killed_at]))
    starts = [r.start_seconds * 1000 for r in bench.researches if r.start_seconds is not None]
    if starts:
        print(
            f"  deep-research starts (session opened to id): p50 {percentile(starts, 0.5):.0f} "
            f"ms, max {max(starts):.0f} ms"
        )
    errors = [f"{r.research_id}: {e}" for r in bench.researches for e in r.errors]
    print(f"client errors (not counting the failovers): {len(errors)}")
    for line in errors[:5]:
        print(f"  {line}")
    print(f"wall time: {bench.ended - bench.began:.1f} s from the starts to the last end")
    print(bench.cpu.line())
    for label, calls in (("LLM", llm), ("search", searches)):
        by = Counter(c.worker or "?" for c in calls)
        print(
            f"provider requests, {label}: {len(calls)} ("
            + ", ".join(
                f"{w} {n}, at most {peak_in_flight(c for c in calls if c.worker == w)} at once"
                for w, n in sorted(by.items())
            )
            + ")"
        )
    return ["client errors"] if errors else []


def worker_logs(bench: Bench, folder: Path | None) -> None:
    """Count the workers' error lines (print the first few); keep the logs in ``folder``."""
    for worker in bench.workers.values():
        lines = worker.server.log
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"worker-{worker.name.lower()}.log").write_text("\n".join(lines) + "\n")
        levels: Counter[str] = Counter()
        errors = []
        for line in lines:
            try:
                level = str(json.loads(line).get("level"))
            except ValueError:
                level = "text"
            levels[level] += 1
            if level in ("ERROR", "CRITICAL"):
                errors.append(line)
        print(
            f"worker {worker.name} log: {len(lines)} lines ("
            + ", ".join(f"{n} {level}" for level, n in levels.most_common())
            + ")"
        )
        for line in errors[:5]:
            print(f"  {line[:400]}")


# ----------------------------------------------------------------------------- main


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM, like Ctrl-C, stops the benchmark and everything it started."""
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Set everything up, drive the researches, report; the exit status."""
    random.seed(args.seed)
    signal.signal(signal.SIGTERM, interrupt)
    # A client closing its session with a killed worker says so; that is expected here.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.ERROR)
    with ExitStack() as stack:
        tmp = Path(tempfile.mkdtemp(prefix="team-load-"))
        stack.callback(shutil.rmtree, tmp, ignore_errors=True)
        url = stack.enter_context(store_url(args))
        store = open_store(url, tmp)
        stack.callback(store.close)
        llm = stack.enter_context(fake_openai(ResearchBrain()))
        search = stack.enter_context(fake_tavily())
        simulate_latency(llm, search)
        config = tmp / "foundry-mcp.toml"
        write_config(config, args.lease)
        envs = {name: worker_env(tmp, name, config, url, llm, search) for name in ("A", "B")}
        began = time.monotonic()
        workers = start_workers(stack, envs)
        print(f"workers ready in {time.monotonic() - began:.1f} s", flush=True)
        bench = Bench(
            args=args,
            store=store,
            llm=llm,
            search=search,
            workers=workers,
            researches=plan_researches(args.researches, args.seed),
            deadline=time.monotonic() + args.timeout,
        )
        print_settings(bench, url)
        anyio.run(drive, bench)
        read_back(bench)
        failed = report(bench)
        logs = args.logs
        if failed and logs is None:  # the evidence outlives the run
            logs = Path(tempfile.mkdtemp(prefix="team-load-logs-"))
        worker_logs(bench, logs)
        if logs is not None:
            print(f"workers' logs kept in {logs}")
    print(verdict(bench, failed))
    return 0 if not failed else 1


def verdict(bench: Bench, failed: list[str]) -> str:
    """One line: PASS or the checks that failed, with the main figures."""
    completed = sum(1 for r in bench.researches if r.final_status == "completed")
    taken = sum(1 for r in bench.researches if any(e.kind == "taken_over" for e in r.events))
    timings = [c.seconds * 1000 for c in bench.calls if c.outcome == "ok"]
    p99 = f"{percentile(timings, 0.99):.0f} ms" if timings else "n/a"
    figures = f"{completed}/{len(bench.researches)} completed, {taken} taken over, status p99 {p99}"
    return f"verdict: {'PASS' if not failed else 'FAIL (' + ', '.join(failed) + ')'}: {figures}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--researches", type=int, default=30, help="how many (default 30)")
    parser.add_argument(
        "--lease", type=float, default=10.0, help="[research] lease_seconds (default 10, min 2)"
    )
    parser.add_argument("--seed", type=int, default=7, help="orders the questions and polls")
    parser.add_argument("--store-url", help="a PostgreSQL URL instead of a throwaway server")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds for every research to end"
    )
    parser.add_argument("--logs", type=Path, help="a folder to keep the workers' stderr in")
    args = parser.parse_args()
    if args.researches < 2 or args.lease < 2:
        parser.error("--researches and --lease must be at least 2")
    try:
        sys.exit(run(args))
    except (PostgresUnavailable, PostgresStartError) as exc:
        print(f"error: {exc} (or pass --store-url)", file=sys.stderr)
        sys.exit(2)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted; everything started was stopped", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
