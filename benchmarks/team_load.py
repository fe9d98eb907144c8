"""Team server under load: a worker SIGKILLed and PostgreSQL restarted mid-run (issue 31).

Two stateless workers behind a round-robin balancer on one PostgreSQL: the acceptance run of
issue 31.

What runs. A throwaway PostgreSQL (``tests/postgres.py``; or ``--store-url``, then never
restarted), the fake OpenAI and Tavily servers of ``tests/fakes`` with realistic latency
(``benchmarks/simulated.py``: LLM 0.4 s + 5 ms per output token, search 0.3 s), and two
workers, A and B: ``foundry-mcp serve --http`` processes (``tests/e2e/teamserver.py``) with
``[server] stateless = true``, each under its own host name (``worker-a``, ``worker-b``, and each
its own node: only the lease tells one whether the other is alive, as between two machines),
its own ``research_dir`` (local caches only) and its own provider keys (``sk-worker-a``,
``tvly-worker-a``, ...), so that every request a fake receives names the worker that sent it.
Both share the store, the tokens of two principals (alice, bob), ``[research] lease_seconds``
(``--lease``) and the team server's LLM slots (``[server] llm_max_in_flight``, 32, unless
``--llm-slots``); ``take_over_interval`` keeps its default (5 s, jittered ±50%), so a takeover
comes at most about lease + 7.5 s after a kill.

In front of the workers, a round-robin balancer without affinity (``benchmarks/team_infra.py``):
every HTTP request goes to the next worker in turn; a worker that refuses the connection is
passed over for 5 s and the request goes to the next one, as a proxy does with a backend that
fails to connect; a request that broke after reaching a worker is not sent again.

``--researches`` researches (default 100) start at once through MCP over streamable HTTP, each
with its own client (its own connections, all through the one balancer) and a distinct question
(one topic each, so that every search and LLM call names its research), principals alternating
alice/bob. A research runs on the worker that answered its start ("A's researches"); its status
calls go to either. Options: ``mode=simple``, ``max_iterations=1``, ``max_sub_queries=3``,
``max_sources_per_query=3`` (alone, a research takes about 15 s). Every client polls
``deep-research-status`` (without ``wait``) about every 0.5 s. Once every research has started
and half of A's have a completed search (read from the store), A is SIGKILLed and the store is
read (after ``SNAPSHOT_DELAY``, so that a write A had already sent lands first): each of A's
researches' status, phase and completed sub-queries, and their LLM journals. Then PostgreSQL is
stopped (a fast shutdown: every session ends) and started again ``--pg-down`` seconds later
(``--pg-restart``: ``--pg-restart-delay`` s after the first takeover, the default, so that B is
running its own research and resuming A's; ``kill``: right after the snapshot; ``none``). A
client whose call broke on A (A was answering it at the kill) opens a new session, which the
balancer sends to B. No client resumes anything: a research seen ``interrupted`` must be taken
over.

The clients send their calls with the session's ``send_request``, skipping the SDK's check of
each result against the tool's output schema (``call_tool`` compiles the schema once per
session, about 0.5 s of CPU): a hundred clients in this one Python process would otherwise time
their own contention for the interpreter, where real clients each pay it on their own machine.

What it prints, once every research has ended (or ``--timeout`` passed):

- how many researches each worker started; the kill and the restart (when, how long);
- completed / total, and lost: a research its principal's ``deep-research-list`` does not show,
  or that did not end ``completed``; each with its id, status and what its client saw;
- taken over: how many of A's researches still active at the kill got a ``taken_over`` event,
  the seconds from the kill to the first and last takeover and to the last completion; the
  clients that saw ``interrupted``, and those whose call broke on A at the kill;
- run twice at once (must be 0): each research's holder over time is rebuilt from its events
  (its starter until a ``taken_over`` event, then the worker it names by pid); a ``run_started``
  event (by pid) or a provider request (by key) from a worker that did not hold the research at
  that moment is a violation, and so is a takeover by the killed worker, or a takeover from a
  live worker that was running the research (it had started it or sent a provider request for
  it, and its log does not say that run ended);
- runs the restart stopped: runs that crashed (the worker's log: "research R crashed"), and
  research taken over from a live worker that no longer ran it, after its lease ran out (its
  run crashed, or a takeover failed half-way): resumed, not lost, but stalled (must be 0);
- completed searches repeated: searches sent after a cut (the kill, for A's research; a crash,
  judged by the store read ``HELD_DELAY`` s after PostgreSQL is back) whose query was a
  completed sub-query of that research at the cut (must be 0); for information, searches sent
  but not saved by the cut (in flight) that were made again;
- LLM calls asked again: requests after a cut equal (model, messages, parameters) to a request
  of that research made before it, by what had become of that earlier request at the cut
  (``Repeats``): answered and in the research's journal (the worker had recorded it, and uses
  an answer only once recorded: paid twice, must be 0); answered by the fake but not in the
  journal (not recorded yet, so not used: asked again by design, printed with how long before
  the cut the answer left the fake); not answered (in flight: asked again by design). Also the
  calls answered before the cuts and how many were journaled, and the journal answers replayed
  after (``llm_replayed`` events);
- status latency under load: p50, p99 and max of the ``deep-research-status`` calls answered,
  from sending to reading the answer in this process, overall, outside and during the restart of
  PostgreSQL (from its stop to ``RECONNECT_GRACE`` s after it accepts connections again), before
  and after the kill, and by worker, with the calls that answered an error (by code) and those
  that broke (no answer: the calls A was answering at the kill); the latency of the
  ``deep-research`` starts (the call alone, and with opening the session); one status read
  alone after the run (``Store.load_status`` in this process: the store's share of a status);
  how late this process's event loop woke (the clients' share); client errors
  (failed calls and sessions other than those broken by the kill, and status errors outside the
  restart: must be 0); the wall time; the machine's CPU use (the benchmark's own process, each
  worker, everything else: PostgreSQL, and any other program that ran meanwhile, which slows
  everything); the requests the balancer sent to each worker; the
  provider requests by worker and the most a worker had in flight at once;
- the workers' log lines by level (the first ERROR lines, if any; ``--logs DIR`` keeps them);
- the acceptance items of issue 31, each PASS or FAIL with its figure: a worker SIGKILLed and
  PostgreSQL restarted mid-run; none lost; none run twice at once; no completed search
  repeated; no answered (journaled) LLM call repeated; status p99 under load (outside the
  restart) under 50 ms.

The last line is the verdict; the exit status is 0 when every check holds, 1 otherwise (2 when
something could not start). It needs PostgreSQL 12+ (Debian's ``postgresql`` package; as root
it runs as ``postgres``) or ``--store-url`` (an empty database is best: the workers take over
any orphan they find there, and the benchmark's research stays in it). Everything it starts
stops when it ends, fails, or is interrupted (Ctrl-C, SIGTERM); the workers and PostgreSQL die
with it even when it is SIGKILLed. A failed run keeps the workers' logs (``--logs DIR``: always).
About two minutes for 100 research on 2 cores. Run from the repository root:

    python benchmarks/team_load.py [--researches 100] [--lease 10] [--seed 7] [--store-url URL]
        [--llm-slots N] [--pg-restart takeover|kill|none] [--pg-restart-delay 1]
        [--pg-down 2] [--timeout 300] [--logs DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import re
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import foundry_mcp
from benchmarks.crash_resume import content_key, prompts
from benchmarks.simulated import simulate_latency
from benchmarks.status_probe import INTERVAL as PROBE_INTERVAL
from benchmarks.status_probe import ProbeProcess
from benchmarks.team_infra import (
    BalancedTransport,
    Balancer,
    CallFailed,
    RestartablePostgres,
    balanced_client,
    research_call,
)
from foundry_mcp.research.store.url import redact_url
from tests.e2e.teamserver import TeamServer, mcp_client
from tests.fakes import FakeHTTPServer, RecordedRequest, ResearchBrain, fake_openai, fake_tavily
from tests.fakes.http import FakeResponse
from tests.postgres import (
    PostgresServer,
    PostgresStartError,
    PostgresUnavailable,
    running_postgres,
)

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
SNAPSHOT_DELAY = 0.25  # after the kill, before reading the store: a write A sent lands first
KILL_CUT_SECONDS = 1.0  # a request of A's the fake finished reading this close to the kill
KILL_CHECK_SECONDS = 0.5  # how often the store is read for the kill's condition
# A call sent from the stop of PostgreSQL until this long after it accepts connections again is
# "during the restart" (a worker's store fails fast for 3 s once it found the database gone).
RECONNECT_GRACE = 5.0
FAKE_BACKLOG = 512  # connections the fakes queue before accepting them
HELD_DELAY = 3.5  # from PostgreSQL accepting connections again to reading what the store holds
# This process's event loop is timed by a task that sleeps this long, over and over: how late it
# wakes is how late every client here reads its answers (its share of the status latency).
LOOP_TICK = 0.02
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
    home: str = ""  # the worker that answered its start (the balancer's choice): "A" or "B"
    research_id: str = ""
    seen: list[str] = field(default_factory=list)  # statuses its client saw, in order
    start_seconds: float | None = None  # from opening its session to knowing its id
    start_call_seconds: float | None = None  # the deep-research call alone
    failover_at: float | None = None  # when a call of its client broke on the killed worker
    errors: list[str] = field(default_factory=list)
    restart_errors: list[str] = field(default_factory=list)  # status errors while PG restarted
    snapshot: Snapshot | None = None
    final_status: str = "unknown"  # from the store, at the end
    final_error: str = ""  # its error, when it did not complete
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
    worker: str  # the one the balancer sent it to
    outcome: str  # "ok", "error" (an error envelope) or "broken" (no answer: connection, timeout)
    code: str = ""  # the error envelope's error code


@dataclass(frozen=True)
class Answer:
    """An LLM answer as the fake sent it, and as the worker's journal would keep it."""

    text: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ProviderCall:
    """A request a fake received, with the worker (by key) and research (by question) it is of."""

    request: RecordedRequest
    worker: str | None
    research: Research | None
    answered: float | None  # when the fake sent its answer (None: never)
    answer: Answer | None = None  # what it answered (LLM calls)

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
        machine = used.get("machine", 0.0)
        others = machine - sum(used.get(key, 0.0) for key in ("benchmark", "A", "B"))
        return (
            f"CPU: {machine:.0f} s busy of {cores} cores x {self.wall:.0f} s "
            f"({machine / max(1e-9, cores * self.wall):.0%}); {shown}; everything else "
            f"(PostgreSQL, any other program running here) {others:.0f} s"
        )


@dataclass
class Restart:
    """The restart of PostgreSQL, on time.time()'s scale."""

    held: dict[str, tuple[set[str], set[Answer]]] = field(default_factory=dict)  # read after
    held_at: float = math.inf  # when ``held`` was read
    stopped_at: float | None = None  # the stop began
    down_at: float | None = None  # the server was down
    started_at: float | None = None  # it was started again
    ready_at: float | None = None  # it accepted connections again
    error: str = ""


@dataclass
class Bench:
    """Everything one run shares: settings, workers, researches, and what was observed."""

    args: argparse.Namespace
    store: PostgresStore
    store_url: str
    postgres: RestartablePostgres | None  # None: --store-url (not restarted)
    llm: FakeHTTPServer
    search: FakeHTTPServer
    answers: dict[int, Answer]  # the fake LLM's answers, by id() of the request
    workers: dict[str, Worker]
    balancer: Balancer
    researches: list[Research]
    deadline: float  # time.monotonic()
    probe: ProbeProcess | None = None  # the status client in a process of its own
    calls: list[StatusCall] = field(default_factory=list)  # the benchmark's clients'
    probe_calls: list[StatusCall] = field(default_factory=list)  # the probe's
    lateness: list[float] = field(default_factory=list)  # of this process's event loop, in s
    state_bytes: int = 0  # the average size of a stored state (JSON), at the end
    began: float = 0.0  # time.time() when the researches were started
    ended: float = 0.0  # when the last client saw its research end
    killed_at: float | None = None
    journaled: dict[str, set[Answer]] = field(default_factory=dict)  # A's, at the kill
    snapshot_taken: anyio.Event = field(default_factory=anyio.Event)
    restart: Restart = field(default_factory=lambda: Restart())
    listed: dict[str, set[str]] = field(default_factory=dict)  # principal -> ids listed
    list_errors: list[str] = field(default_factory=list)
    cpu: CpuMeter = field(default_factory=CpuMeter)

    @property
    def mcp_url(self) -> str:
        """The URL the clients use; the balancer sets its port on every request."""
        return self.workers["A"].server.url

    def survivor(self) -> Worker:
        return self.workers["B"]

    def of(self, worker: str) -> list[Research]:
        return [r for r in self.researches if r.home == worker]

    def moment(self, at: float) -> str:
        """``at`` (time.time()) from the kill and from PostgreSQL's return, in words."""
        said = [f"{at - self.began:.1f} s after the start"]
        if self.killed_at is not None:
            said.append(f"{at - self.killed_at:+.1f} s from the kill")
        if self.restart.ready_at is not None:
            said.append(f"{at - self.restart.ready_at:+.1f} s from PostgreSQL's return")
        return ", ".join(said)

    def restarting(self, at: float, until: float | None = None) -> bool:
        """Whether ``at`` (time.time()), or the span from ``at`` to ``until``, meets the restart
        of PostgreSQL, its reconnection grace included."""
        restart = self.restart
        if restart.stopped_at is None or (until if until is not None else at) < restart.stopped_at:
            return False
        return restart.ready_at is None or at <= restart.ready_at + RECONNECT_GRACE

    def in_restart(self, call: StatusCall) -> bool:
        """Whether a status call was sent or answered during the restart of PostgreSQL."""
        return self.restarting(call.sent, call.sent + call.seconds)

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
    """Principals alternate alice, bob; the worker each runs on is the balancer's choice."""
    return [
        Research(question=question, principal="alice" if n % 2 == 0 else "bob")
        for n, question in enumerate(questions(count, seed))
    ]


# ----------------------------------------------------------------------------- setting up


def write_config(path: Path, lease: float, llm_slots: int | None) -> None:
    """The workers' configuration: stateless, the lease, no page fetching, no SDK retries;
    ``llm_slots`` LLM calls in flight per worker (None: the team server's default, ``[server]
    llm_max_in_flight``)."""
    slots = "" if llm_slots is None else f"max_in_flight = {llm_slots}\n"
    path.write_text(
        "[server]\nstateless = true\n\n"
        f"[research]\nlease_seconds = {lease}\n\n"
        "[research.fetch]\nenabled = false\n\n"
        f"[providers.openai]\nmax_retries = 0\n{slots}\n"
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
def database(args: argparse.Namespace) -> Iterator[tuple[str, PostgresServer | None]]:
    """``--store-url``, else the URL of a throwaway PostgreSQL stopped when the block ends,
    and that server."""
    if args.store_url:
        yield args.store_url, None
        return
    # Out of this process's group: on a Ctrl-C the workers, which the terminal interrupts
    # too, save their research before the database stops.
    with running_postgres(own_process_group=True) as server:
        print(f"PostgreSQL started in {server.started_in:.1f} s (throwaway, unix socket only)")
        yield server.url(), server


def open_store(url: str, tmp: Path) -> PostgresStore:
    """The benchmark's own view of the store (imported here: it needs the driver, psycopg)."""
    from foundry_mcp.research.store.postgres.store import PostgresStore

    return PostgresStore(url, tmp / "bench-research")


# ----------------------------------------------------------------------------- the clients


async def poll_status(
    bench: Bench, client: Client, transport: BalancedTransport, research: Research
) -> str:
    """One ``deep-research-status`` call, timed and recorded; the status it read."""
    sent, began = time.time(), time.perf_counter()
    outcome, code = "broken", ""
    envelope: dict[str, Any] = {}
    try:
        envelope = await research_call(
            client, action="deep-research-status", research_id=research.research_id
        )
        outcome = "ok" if envelope["success"] else "error"
    except CallFailed:
        outcome = "error"
        raise
    finally:
        if outcome == "error" and envelope:
            code = str((envelope.get("data") or {}).get("error_code") or "")
        seconds = time.perf_counter() - began
        bench.calls.append(StatusCall(sent, seconds, transport.last or "?", outcome, code))
    if outcome == "error":
        raise CallFailed(f"status failed on {transport.last}: {envelope['error']}", code)
    status = str(envelope["data"]["status"])
    if not research.seen or research.seen[-1] != status:
        research.seen.append(status)
    return status


async def follow(bench: Bench, research: Research) -> None:
    """Start the research through the balancer and poll its status until it ends. A call that
    broke on the killed worker (it was answering it) opens a new session, which the balancer
    sends to a live worker; any other failure is a client error. Never resumes."""
    token = TOKENS[research.principal]
    while time.monotonic() < bench.deadline:
        began = time.perf_counter()
        # Made before the session opens: a session the kill broke while opening is told
        # from a client error by the worker its last request went to.
        transport = BalancedTransport(bench.balancer)
        try:
            async with mcp_client(bench.mcp_url, token, transport=transport) as client:
                if not research.research_id:
                    sent = time.perf_counter()
                    started = await research_call(
                        client, action="deep-research", query=research.question, **OPTIONS
                    )
                    if not started["success"]:
                        research.errors.append(f"start refused: {started['error']}")
                        return
                    research.research_id = str(started["data"]["research_id"])
                    if bench.probe is not None:
                        bench.probe.add(research.principal, research.research_id)
                    research.home = transport.last or "?"
                    research.start_seconds = time.perf_counter() - began
                    research.start_call_seconds = time.perf_counter() - sent
                await anyio.sleep(random.uniform(0, POLL_SECONDS))
                while time.monotonic() < bench.deadline:
                    polled, sent_at = time.monotonic(), time.time()
                    try:
                        if await poll_status(bench, client, transport, research) in FINAL:
                            return
                    except CallFailed as exc:
                        if bench.restarting(sent_at, time.time()):
                            research.restart_errors.append(exc.code or str(exc))
                        else:
                            research.errors.append(f"{exc} ({bench.moment(sent_at)})")
                    await anyio.sleep(max(0.05, POLL_SECONDS - (time.monotonic() - polled)))
                research.errors.append("the benchmark's timeout passed")
                return
        except Exception as exc:  # a call broke (the worker died under it) or the session failed
            worker = transport.last
            if worker is not None and bench.workers[worker].killed:
                research.failover_at = time.time()
                continue
            research.errors.append(f"session failed on {worker}: {describe(exc)}")
            await anyio.sleep(1)


def describe(exc: BaseException) -> str:
    """An exception in one line, the first of a group's."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:300]


async def list_ids(bench: Bench, principal: str) -> set[str]:
    """Every research id ``deep-research-list`` shows ``principal`` (through the balancer)."""
    ids: set[str] = set()
    cursor = None
    async with balanced_client(bench.balancer, bench.mcp_url, TOKENS[principal]) as (client, _):
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


def searched(store: PostgresStore, research_ids: Iterable[str]) -> set[str]:
    """Those of these researches that have at least one completed sub-query."""
    return {rid for rid in research_ids if store.load(rid).completed_sub_queries()}


def snapshot(store: PostgresStore, research: Research) -> Snapshot:
    """The research's status, phase and completed sub-queries, as stored now."""
    state = store.load(research.research_id)
    return Snapshot(
        state.status.value, state.phase.value, {q.query for q in state.completed_sub_queries()}
    )


def journal_of(url: str, research_ids: list[str]) -> dict[str, set[Answer]]:
    """The answers each research's journal holds now (read with a connection of its own)."""
    import psycopg

    found: dict[str, set[Answer]] = {rid: set() for rid in research_ids}
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT research_id, answer, record FROM llm_journal WHERE research_id = ANY(%s)",
            (research_ids,),
        ).fetchall()
    for research_id, answer, record in rows:
        tokens = (int(record.get("input_tokens") or 0), int(record.get("output_tokens") or 0))
        found[research_id].add(Answer(answer, *tokens))
    return found


async def kill_midway(bench: Bench) -> None:
    """SIGKILL worker A once every research has started and half of A's have a completed
    search; then read each of A's from the store, with its journal."""
    worker = bench.workers["A"]
    done: set[str] = set()
    while time.monotonic() < bench.deadline:
        if all(r.research_id for r in bench.researches):
            mine = bench.of("A")
            ids = [r.research_id for r in mine if r.research_id not in done]
            done |= await anyio.to_thread.run_sync(searched, bench.store, ids)
            if len(done) >= math.ceil(len(mine) / 2):
                break
        await anyio.sleep(KILL_CHECK_SECONDS)
    else:
        return
    bench.cpu.sample_worker(worker)
    worker.kill()
    bench.killed_at = time.time()
    await anyio.to_thread.run_sync(worker.server.process.wait)
    await anyio.sleep(SNAPSHOT_DELAY)
    mine = bench.of("A")
    for research in mine:
        research.snapshot = await anyio.to_thread.run_sync(snapshot, bench.store, research)
    bench.journaled = await anyio.to_thread.run_sync(
        journal_of, bench.store_url, [r.research_id for r in mine]
    )
    bench.snapshot_taken.set()
    at_kill = [r.snapshot for r in mine if r.snapshot]
    phases = Counter(s.phase if s.status in ACTIVE else s.status for s in at_kill)
    print(
        f"SIGKILLed worker A (pid {worker.pid}) {bench.killed_at - bench.began:.1f} s after the "
        f"start; A's {len(mine)} researches: {sum(1 for s in at_kill if s.completed)} with a "
        "completed search, " + ", ".join(f"{n} {phase}" for phase, n in phases.most_common()),
        flush=True,
    )


def first_takeover(url: str, after: float) -> float | None:
    """When the first ``taken_over`` event since ``after`` (time.time()) was recorded (None:
    none yet)."""
    import psycopg

    with psycopg.connect(url, connect_timeout=5) as conn:
        row = conn.execute(
            "SELECT min(at) FROM events WHERE kind = 'taken_over' AND at > to_timestamp(%s)",
            (after,),
        ).fetchone()
    return row[0].timestamp() if row and row[0] is not None else None


def held_now(
    store: PostgresStore, url: str, research_ids: list[str]
) -> dict[str, tuple[set[str], set[Answer]]]:
    """Each research's completed sub-queries and journal answers, as stored now."""
    journals = journal_of(url, research_ids)
    return {
        rid: ({q.query for q in store.load(rid).completed_sub_queries()}, journals[rid])
        for rid in research_ids
    }


async def restart_postgres(bench: Bench) -> None:
    """Stop PostgreSQL and start it again mid-run: once A's research has been snapshotted
    (``--pg-restart kill``) or once the first of it was taken over (``takeover``)."""
    pg, args, restart = bench.postgres, bench.args, bench.restart
    if pg is None or args.pg_restart == "none":
        return
    await bench.snapshot_taken.wait()
    if args.pg_restart == "takeover":
        killed = bench.killed_at or 0.0
        while await anyio.to_thread.run_sync(first_takeover, bench.store_url, killed) is None:
            await anyio.sleep(0.2)
        await anyio.sleep(args.pg_restart_delay)
    killed_at = bench.killed_at or 0.0
    restart.stopped_at = stopped = time.time()
    try:
        with anyio.CancelScope(shield=True):  # never left stopped
            stop_seconds = await anyio.to_thread.run_sync(pg.stop)
            restart.down_at = time.time()
            await anyio.sleep(args.pg_down)
            pg.start()  # on this thread (the main one): the server dies with it
            restart.started_at = time.time()
            ready_seconds = await anyio.to_thread.run_sync(pg.wait_ready)
            restart.ready_at = time.time()
    except RuntimeError as exc:
        restart.error = str(exc)
        print(f"PostgreSQL restart failed: {exc}", flush=True)
        return
    # What the store holds once the runs that crash on the restart have crashed (their store
    # fails fast for 3 s after it found the database gone) and before their leases run out.
    await anyio.sleep(HELD_DELAY)
    ids = [r.research_id for r in bench.researches]
    restart.held = await anyio.to_thread.run_sync(held_now, bench.store, bench.store_url, ids)
    restart.held_at = time.time()
    print(
        f"restarted PostgreSQL {stopped - killed_at:.1f} s after the kill: stopped in "
        f"{stop_seconds:.2f} s, down {args.pg_down:g} s, accepting connections "
        f"{ready_seconds:.2f} s after its start",
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
    """Start every research at once, kill A midway, restart PostgreSQL, wait for every end,
    then list."""
    bench.began = time.time()
    bench.cpu.begin(bench.workers)
    async with anyio.create_task_group() as clients:
        chaos, watching = anyio.CancelScope(), anyio.CancelScope()

        async def kill_and_restart() -> None:
            with chaos:
                await kill_midway(bench)
                await restart_postgres(bench)

        async def watch_loop() -> None:
            with watching:
                while True:
                    began = time.perf_counter()
                    await anyio.sleep(LOOP_TICK)
                    bench.lateness.append(time.perf_counter() - began - LOOP_TICK)

        clients.start_soon(kill_and_restart)
        clients.start_soon(watch_loop)
        async with anyio.create_task_group() as researches:
            for research in bench.researches:
                researches.start_soon(follow, bench, research)
        bench.ended = time.time()
        bench.cpu.end(bench.workers)
        if bench.probe is not None:
            made = await anyio.to_thread.run_sync(bench.probe.stop)
            bench.probe_calls = [StatusCall(**call) for call in made]
        chaos.cancel()
        watching.cancel()
    for principal in TOKENS:
        try:
            bench.listed[principal] = await list_ids(bench, principal)
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
        research.final_error = f"{state.error_code or ''} {state.error or ''}".strip()
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
        calls.append(
            ProviderCall(
                request,
                worker,
                research,
                answered.get(id(request)),
                bench.answers.get(id(request)),
            )
        )
    return calls


def widen_backlog(fake: FakeHTTPServer) -> None:
    """Let the fake queue ``FAKE_BACKLOG`` connections not yet accepted, not the 5 of Python's
    HTTP server: two workers opening 64 connections at once would otherwise find some refused
    (the OpenAI SDK, with retries off, says "Cannot reach openai: APIConnectionError" and the
    research fails), which is the fake's limit, not foundry-mcp's. Listening again on a
    listening socket changes its backlog (Linux)."""
    if fake._httpd is not None:
        fake._httpd.socket.listen(FAKE_BACKLOG)


def record_answers(llm: FakeHTTPServer) -> dict[int, Answer]:
    """Keep each answer of the fake LLM (text and token counts), by id() of its request (the
    fake keeps its requests: the ids stay theirs)."""
    answers: dict[int, Answer] = {}
    answer = llm._answer

    def recorded(request: RecordedRequest) -> FakeResponse:
        response = answer(request)
        try:
            body = response.json
            usage = body["usage"]
            answers[id(request)] = Answer(
                str(body["choices"][0]["message"]["content"]),
                int(usage["prompt_tokens"]),
                int(usage["completion_tokens"]),
            )
        except (TypeError, KeyError, IndexError, ValueError):
            pass  # an error answer
        return response

    llm._answer = recorded  # type: ignore[method-assign]
    return answers


def query_of(request: RecordedRequest) -> str:
    return str((request.json or {}).get("query") or "")


def holder(bench: Bench, research: Research, at: float) -> str:
    """The worker entitled to act for ``research`` at ``at``: the one that started it until a
    takeover, then the worker the latest ``taken_over`` event before ``at`` names."""
    current = research.home
    for event in research.events:
        if event.kind == "taken_over" and event.at <= at:
            current = bench.by_pid(event)
    return current


RUN_END = re.compile(r"^research (deepres-[0-9a-f]+) (ended|crashed|is now owned)")


@dataclass
class RunEnds:
    """When each worker's runs ended, from its log: (worker, research id) -> times; and the
    runs that crashed (an exception out of the run: ``jobs.py`` logs "research R crashed")."""

    at: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    crashed: list[tuple[str, str, float]] = field(default_factory=list)


def run_ends(bench: Bench) -> RunEnds:
    found = RunEnds()
    for name, worker in bench.workers.items():
        for line in worker.server.log:
            try:
                entry = json.loads(line)
                matched = RUN_END.match(str(entry.get("message", "")))
                at = parse_time(str(entry["time"]))
            except (ValueError, KeyError, AttributeError):
                continue
            if matched:
                found.at.setdefault((name, matched[1]), []).append(at)
                if matched[2] == "crashed":
                    found.crashed.append((name, matched[1], at))
    return found


@dataclass
class Takeovers:
    """Runs by a worker that did not hold the research (``violations``: must be none), and the
    takeovers of a research whose previous run, on a live worker, had ended first (it crashed):
    resumed, not run twice."""

    violations: list[str] = field(default_factory=list)
    after_crash: list[str] = field(default_factory=list)


def ran_between(
    research: Research,
    worker: str,
    since: float,
    until: float,
    bench: Bench,
    calls: list[ProviderCall],
) -> bool:
    """Whether ``worker`` ran ``research`` between the two times: a ``run_started`` event of
    its pid, or a provider request with its key."""
    started = any(
        e.kind == "run_started" and since <= e.at <= until and bench.by_pid(e) == worker
        for e in research.events
    )
    return started or any(
        c.research is research and c.worker == worker and since <= c.at <= until for c in calls
    )


def twice_at_once(bench: Bench, calls: list[ProviderCall], ends: RunEnds) -> Takeovers:
    """Every takeover from a live worker whose run had not ended, every takeover by the killed
    worker, every ``run_started`` event or provider request by a worker that did not hold the
    research then."""
    killed_at = bench.killed_at or math.inf
    found = Takeovers()
    for research in bench.researches:
        rid = research.research_id
        previous, since = research.home, 0.0
        for event in research.events:
            if event.kind == "run_started":
                by = bench.by_pid(event)
                if by != holder(bench, research, event.at):
                    found.violations.append(f"{rid}: run started by {by} while another held it")
            if event.kind != "taken_over":
                continue
            by = bench.by_pid(event)
            when = f"{event.at - killed_at:+.2f} s from the kill"
            if by == "A":
                found.violations.append(f"{rid}: taken over by A, {when}")
            alive = previous == "B" or event.at < killed_at
            ran = ran_between(research, previous, since, event.at, bench, calls)
            ended = any(since <= t <= event.at for t in ends.at.get((previous, rid), []))
            if alive and ran and not ended:
                found.violations.append(
                    f"{rid}: taken over by {by} from {previous} (alive, its run not ended), {when}"
                )
            elif alive:
                how = "its run had crashed" if ran else "it had claimed it but never ran it"
                found.after_crash.append(f"{rid}: {previous} to {by}, {when}: {how}")
            previous, since = by, event.at
    for call in calls:
        if call.research is None or call.worker is None:
            continue
        if call.worker != holder(bench, call.research, call.at):
            found.violations.append(
                f"{call.research.research_id}: {call.request.path} by {call.worker} "
                f"{call.at - killed_at:+.2f} s from the kill, while "
                f"{holder(bench, call.research, call.at)} held it"
            )
    return found


@dataclass
class Repeats:
    """Work done again after a run stopped unfinished (a ``Cut``: A's runs at the kill, runs
    that crashed on the restart of PostgreSQL).

    A search after the cut repeats a completed one when its query was a completed sub-query in
    the store at the cut (must be none). An LLM request after the cut is "again" when its
    content (model, messages, parameters) equals a request of the same research made before
    the cut; it is then counted by what had become of that earlier request at the cut:

    - ``llm_journaled``: answered, and its answer in the research's journal at the cut (the
      worker had recorded it, and goes on only once it has: ``_Journal.put`` is awaited before
      the answer is used). Asked again, it was paid twice: must be 0.
    - ``llm_unjournaled``: the fake had sent its answer before the cut, but the journal did not
      hold it: the worker had not recorded it, so had not used it (still reading or parsing it,
      its journal write queued behind others on the worker's writer thread, or refused by the
      store during the restart). Asked again by design.
    - ``llm_in_flight``: not answered at the cut. Asked again by design.
    """

    searches_completed: list[str] = field(default_factory=list)  # must stay empty
    searches_in_flight: int = 0
    llm_journaled: list[str] = field(default_factory=list)  # must stay empty
    llm_unjournaled: list[float] = field(default_factory=list)  # seconds from answer to kill
    llm_in_flight: int = 0
    llm_answered_before: int = 0  # A's research's calls answered before the kill
    llm_journaled_before: int = 0  # of which the journal held the answer at the kill
    llm_replayed: int = 0  # journal answers the takeover runs replayed (llm_replayed events)
    cuts: dict[str, int] = field(default_factory=dict)  # runs judged, by why they stopped
    unjudged: int = 0  # crashed runs the store was not read for in time


@dataclass(frozen=True)
class Cut:
    """A run of a research that stopped unfinished: A's at the kill, or one that crashed on
    the restart of PostgreSQL; what the store held of the research then (its completed
    sub-queries and its journal's answers)."""

    research: Research
    at: float
    why: str  # "kill" or "crash"
    completed: frozenset[str]
    journal: frozenset[Answer]


def cuts_of(bench: Bench, ends: RunEnds) -> tuple[list[Cut], int]:
    """The kill's cut of each of A's researches, and a cut for each run that crashed during the
    restart (judged by the store read after it, ``Restart.held``, if that read came before the
    research was taken over again); and how many crashes could not be judged so."""
    found: list[Cut] = []
    if bench.killed_at is not None:
        for research in bench.of("A"):
            completed = research.snapshot.completed if research.snapshot else set()
            journal = bench.journaled.get(research.research_id, set())
            found.append(
                Cut(research, bench.killed_at, "kill", frozenset(completed), frozenset(journal))
            )
    by_id = {r.research_id: r for r in bench.researches}
    restart, unjudged = bench.restart, 0
    for _, research_id, at in ends.crashed:
        crashed = by_id.get(research_id)
        held = restart.held.get(research_id)
        later = [e.at for e in (crashed.events if crashed else []) if e.kind == "taken_over"]
        taken = min((t for t in later if t > at), default=math.inf)
        if crashed is None or held is None or not at < restart.held_at < taken:
            unjudged += 1
            continue
        found.append(Cut(crashed, at, "crash", frozenset(held[0]), frozenset(held[1])))
    return found, unjudged


def repeats(
    bench: Bench, searches: list[ProviderCall], llm: list[ProviderCall], cuts: list[Cut]
) -> Repeats:
    """Searches and LLM calls made again after a cut, by what the store or the fake had of
    them at the cut; each request is judged by the latest cut of its research before it."""
    found = Repeats()
    by_research: dict[int, list[Cut]] = {}
    for cut in sorted(cuts, key=lambda c: c.at):
        by_research.setdefault(id(cut.research), []).append(cut)
    for research_cuts in by_research.values():
        for n, cut in enumerate(research_cuts):
            until = research_cuts[n + 1].at if n + 1 < len(research_cuts) else math.inf
            judge_cut(found, cut, until, searches, llm)
    return found


def judge_cut(
    found: Repeats, cut: Cut, until: float, searches: list[ProviderCall], llm: list[ProviderCall]
) -> None:
    """Count in ``found`` the requests of ``cut``'s research in [cut, until) that repeat one
    made before the cut."""
    research, at = cut.research, cut.at
    rid = research.research_id
    mine = [c for c in searches if c.research is research]
    before = {query_of(c.request) for c in mine if c.at < at}
    for call in (c for c in mine if at <= c.at < until):
        query = query_of(call.request)
        if query in cut.completed:
            found.searches_completed.append(f"{rid}: {query!r} (after the {cut.why})")
        elif query in before:
            found.searches_in_flight += 1
    asked = [c for c in llm if c.research is research]
    answered = [c for c in asked if c.answered is not None and c.answered < at]
    found.llm_answered_before += len(answered)
    found.llm_journaled_before += sum(1 for c in answered if c.answer in cut.journal)
    journaled = {content_key(c.request) for c in answered if c.answer in cut.journal}
    unjournaled = {
        content_key(c.request): at - (c.answered or at)
        for c in answered
        if c.answer not in cut.journal
    }
    earlier = {content_key(c.request) for c in asked if c.at < at}
    for call in (c for c in asked if at <= c.at < until):
        key = content_key(call.request)
        if key in journaled:
            system, _ = prompts(call.request)
            agent = ResearchBrain.identify(system)
            found.llm_journaled.append(f"{rid}: a {agent} call (after the {cut.why})")
        elif key in unjournaled:
            found.llm_unjournaled.append(unjournaled[key])
        elif key in earlier:
            found.llm_in_flight += 1
    found.llm_replayed += sum(
        1 for e in research.events if e.kind == "llm_replayed" and at <= e.at < until
    )
    found.cuts[cut.why] = found.cuts.get(cut.why, 0) + 1


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
    codes = Counter(c.code or "?" for c in calls if c.outcome == "error")
    counts = f"{len(timings)} answered, {outcomes['error']} errors" + (
        " (" + ", ".join(f"{n} {code}" for code, n in codes.most_common()) + ")" if codes else ""
    )
    counts += f", {outcomes['broken']} broken"
    if not timings:
        return f"  {label:16s} no answered call; {counts}"
    return (
        f"  {label:16s} p50 {percentile(timings, 0.5):6.0f} ms   p99 "
        f"{percentile(timings, 0.99):6.0f} ms   max {max(timings):6.0f} ms   {counts}"
    )


def status_p99(calls: list[StatusCall]) -> float | None:
    """The p99 of the answered calls, in ms (None: none answered)."""
    timings = [c.seconds * 1000 for c in calls if c.outcome == "ok"]
    return percentile(timings, 0.99) if timings else None


def print_settings(bench: Bench, url: str) -> None:
    """What runs: the researches, the workers and their lease, the store, the latencies."""
    args = bench.args
    principals = Counter(r.principal for r in bench.researches)
    slots = f"{args.llm_slots}" if args.llm_slots else "the team default ([server] 32)"
    print(
        f"researches: {len(bench.researches)} ("
        + ", ".join(f"{p} {n}" for p, n in sorted(principals.items()))
        + "), "
        + ", ".join(f"{k}={v}" for k, v in OPTIONS.items())
    )
    print(
        f"workers: A (host {host_name('A')}, pid {bench.workers['A'].pid}) and B (host "
        f"{host_name('B')}, pid {bench.workers['B'].pid}), [server] stateless, behind a "
        "round-robin balancer (each request to the next worker; one that refuses the "
        f"connection is passed over); LLM calls in flight per worker: {slots}; "
        f"lease_seconds={args.lease:g} (renewed every {min(5.0, args.lease / 4):g} s), "
        "take_over_interval=5 s (default, jittered ±50%)"
    )
    print(f"store: {redact_url(url)}; foundry_mcp from {Path(foundry_mcp.__file__).parent}")
    restart = {
        "none": "no PostgreSQL restart",
        "kill": f"PostgreSQL stopped right after the kill, started again {args.pg_down:g} s later",
        "takeover": f"PostgreSQL stopped {args.pg_restart_delay:g} s after the first takeover, "
        f"started again {args.pg_down:g} s later",
    }[args.pg_restart if bench.postgres is not None else "none"]
    print(
        "latency: LLM 0.4 s + 5 ms per output token, search 0.3 s; status polled every "
        f"{POLL_SECONDS:g} s per research (no wait); kill: SIGKILL A once every research has "
        f"started and half of A's have a completed search; {restart}; seed {args.seed}"
    )


def report(bench: Bench) -> tuple[list[str], list[Acceptance]]:
    """Print every figure; the names of the checks that failed, and the acceptance items."""
    print()
    on = Counter(r.home or "?" for r in bench.researches)
    print(
        "started on (the worker that answered the start): "
        + ", ".join(f"{w} {n}" for w, n in sorted(on.items()))
    )
    failed = [] if bench.killed_at is not None else ["no kill"]
    if bench.killed_at is None:
        print("worker A was never killed: its researches never reached a completed search")
    wanted = bench.postgres is not None and bench.args.pg_restart != "none"
    if wanted and bench.restart.ready_at is None:
        failed.append("no PostgreSQL restart")
        print(f"PostgreSQL was not restarted {bench.restart.error}".strip())
    llm = attribute(bench, bench.llm, LLM_PATH)
    searches = attribute(bench, bench.search, SEARCH_PATH)
    failed += report_outcomes(bench)
    failed += report_takeovers(bench)
    ends = run_ends(bench)
    twice = report_twice(bench, llm + searches, ends)
    again = report_repeats(bench, searches, llm, ends)
    failed += twice + again
    failed += report_load(bench, llm, searches)
    return failed, acceptance(bench, failed, again)


@dataclass(frozen=True)
class Acceptance:
    """One acceptance item of issue 31 and whether this run met it."""

    item: str
    passed: bool
    figures: str


def acceptance(bench: Bench, failed: list[str], again: list[str]) -> list[Acceptance]:
    """The acceptance items, judged from the checks and figures of this run."""
    completed = sum(1 for r in bench.researches if r.final_status == "completed")
    calm = [c for c in bench.probe_calls if not bench.in_restart(c)]
    p99, p99_all = status_p99(calm), status_p99(bench.probe_calls)
    restarted = bench.restart.ready_at is not None
    chaos = bench.killed_at is not None and (restarted or bench.args.pg_restart == "none")
    return [
        Acceptance(
            "one worker SIGKILLed and PostgreSQL restarted mid-run",
            chaos and bench.postgres is not None,
            f"kill: {'yes' if bench.killed_at else 'no'}, PostgreSQL restart: "
            + ("yes" if restarted else "no"),
        ),
        Acceptance(
            "none lost",
            "lost" not in failed and "isolation" not in failed,
            f"{completed}/{len(bench.researches)} completed",
        ),
        Acceptance("none run twice at once", "run twice" not in failed, "see 'run twice'"),
        Acceptance(
            "no completed search repeated",
            "completed search repeated" not in again,
            "see 'completed searches repeated'",
        ),
        Acceptance(
            "no answered LLM call repeated",
            "answered LLM call repeated" not in again,
            "see 'LLM calls asked again'",
        ),
        Acceptance(
            "status p99 under load < 50 ms",
            p99 is not None and p99 < 50,
            f"p99 {fmt_ms(p99)} outside the PostgreSQL restart ({len(calm)} calls of the "
            f"status probe), {fmt_ms(p99_all)} with it ({len(bench.probe_calls)} calls)",
        ),
    ]


def fmt_ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} ms"


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
            + (f"; its error: {r.final_error[:300]}" if r.final_error else "")
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
    taken: dict[str, float] = {}
    for research in mine:
        for event in research.events:
            if event.kind == "taken_over":
                taken.setdefault(research.research_id, event.at - killed_at)
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
    failovers = [r.failover_at - killed_at for r in bench.researches if r.failover_at]
    print(
        f"clients that saw 'interrupted': {interrupted} (none resumed: the benchmark's clients "
        f"never do); clients whose call broke on A at the kill (a new session, the balancer "
        f"sends it to B): {len(failovers)}"
        + (f", the last {max(failovers):.2f} s after the kill" if failovers else "")
    )
    stuck = [r.research_id for r in bench.researches if r.final_status == "interrupted"]
    if stuck:
        print(f"  left interrupted (a client would have had to resume): {stuck}")
    return ["not taken over"] if not active <= set(taken) else []


def report_twice(bench: Bench, calls: list[ProviderCall], ends: RunEnds) -> list[str]:
    """Events and requests by a worker that did not hold the research; runs that crashed and
    were taken over; unattributed requests."""
    takeovers = twice_at_once(bench, calls, ends)
    violations = takeovers.violations
    print(f"run twice at once: {len(violations)}")
    for line in violations[:10]:
        print(f"  {line}")
    crashed = ends.crashed
    restart = bench.restart
    by_restart = [c for c in crashed if restart.stopped_at is not None and bench.restarting(c[2])]
    print(
        f"runs that crashed (an exception out of the run, worker log): {len(crashed)}, "
        f"{len(by_restart)} of them during the PostgreSQL restart; taken over from a live "
        f"worker that no longer ran them (once the lease ran out): {len(takeovers.after_crash)}"
    )
    for line in takeovers.after_crash[:3]:
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
    return (
        (["run twice"] if violations else [])
        + (["runs stopped by the restart"] if crashed or takeovers.after_crash else [])
        + (["unattributed requests"] if unattributed else [])
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
    bench: Bench, searches: list[ProviderCall], llm: list[ProviderCall], ends: RunEnds
) -> list[str]:
    """Completed searches and answered LLM calls made again after the kill or a crash
    (``Repeats``)."""
    cuts, unjudged = cuts_of(bench, ends)
    again = repeats(bench, searches, llm, cuts)
    judged = ", ".join(f"{n} at the {why}" for why, n in sorted(again.cuts.items())) or "none"
    print(
        f"runs stopped unfinished and judged for repeats: {judged}"
        + (f"; {unjudged} crashed runs not judged (store read too late)" if unjudged else "")
    )
    print(
        f"completed searches repeated: {len(again.searches_completed)}; searches in flight "
        f"at the cut made again: {again.searches_in_flight}"
    )
    for line in again.searches_completed[:10]:
        print(f"  {line}")
    late = again.llm_unjournaled
    print(
        f"LLM calls asked again: {len(again.llm_journaled)} answered and journaled before the "
        f"cut (must be 0); {len(late)} answered but not journaled at the cut"
        + (f" (answers sent {min(late):.3f}-{max(late):.3f} s before it)" if late else "")
        + f"; {again.llm_in_flight} in flight at the cut"
    )
    print(
        f"  before the cuts: {again.llm_answered_before} LLM calls answered, "
        f"{again.llm_journaled_before} of them in the journal at the cut; replayed from the "
        f"journal after: {again.llm_replayed}"
    )
    for line in again.llm_journaled[:10]:
        print(f"  {line}")
    return (["completed search repeated"] if again.searches_completed else []) + (
        ["answered LLM call repeated"] if again.llm_journaled else []
    )


def time_status_reads(bench: Bench) -> list[float]:
    """The milliseconds of one ``load_status`` of each research, on an idle machine; sets
    ``bench.state_bytes`` to the average size of the stored states."""
    timings, sizes = [], []
    for research in bench.researches:
        if not research.research_id:
            continue
        began = time.perf_counter()
        read = bench.store.load_status(research.research_id)
        timings.append((time.perf_counter() - began) * 1000)
        sizes.append(len(read.state.model_dump_json()))
    bench.state_bytes = sum(sizes) // max(1, len(sizes))
    return timings


def print_latency(bench: Bench, calls: list[StatusCall], indent: str = "") -> None:
    """The latency lines of ``calls``: overall, outside and during the restart, before and
    after the kill, by worker."""
    killed_at = bench.killed_at
    print(indent + latency_line("overall", calls))
    calm = [c for c in calls if not bench.in_restart(c)]
    if bench.restart.stopped_at is not None:
        print(indent + latency_line("outside restart", calm))
        print(indent + latency_line("during restart", [c for c in calls if bench.in_restart(c)]))
    if killed_at:
        print(indent + latency_line("before kill", [c for c in calm if c.sent < killed_at]))
        print(indent + latency_line("after kill", [c for c in calm if c.sent >= killed_at]))
    for worker in bench.workers:
        print(indent + latency_line(f"on {worker}", [c for c in calm if c.worker == worker]))


def report_load(bench: Bench, llm: list[ProviderCall], searches: list[ProviderCall]) -> list[str]:
    """Status latency, start latency, client errors, wall time, CPU, provider requests."""
    print(
        "status latency under load (deep-research-status, no wait, through the balancer), "
        f"from a client process of its own (benchmarks/status_probe.py, a call every "
        f"{PROBE_INTERVAL * 1000:.0f} ms to the research in turn):"
    )
    print_latency(bench, bench.probe_calls)
    print(
        f"  as the benchmark's {len(bench.researches)} clients saw it (they share this process "
        "with the fake providers: its own queueing is in these figures):"
    )
    print_latency(bench, bench.calls, indent="  ")
    reads = time_status_reads(bench)
    if reads:
        print(
            "  one status read alone, after the run, in this process (Store.load_status: the "
            f"statement and decoding the state, what a worker does per status call): p50 "
            f"{percentile(reads, 0.5):.1f} ms, max {max(reads):.1f} ms, state "
            f"{bench.state_bytes // 1024} KB on average"
        )
    starts = [r.start_seconds * 1000 for r in bench.researches if r.start_seconds is not None]
    alone = [
        r.start_call_seconds * 1000 for r in bench.researches if r.start_call_seconds is not None
    ]
    if starts:
        print(
            f"  deep-research starts: the call p50 {percentile(alone, 0.5):.0f} ms, max "
            f"{max(alone):.0f} ms; with opening the session p50 {percentile(starts, 0.5):.0f} "
            f"ms, max {max(starts):.0f} ms"
        )
    errors = [f"{r.research_id}: {e}" for r in bench.researches for e in r.errors]
    during = Counter(e for r in bench.researches for e in r.restart_errors)
    print(
        f"client errors (not counting the calls broken by the kill): {len(errors)}; status "
        "errors during the PostgreSQL restart: "
        + (", ".join(f"{n} {code}" for code, n in during.most_common()) or "0")
    )
    for line in errors[:5]:
        print(f"  {line}")
    late = [x * 1000 for x in bench.lateness]
    if late:
        print(
            "  this process's event loop (the clients' own delay in the figures above): late "
            f"p50 {percentile(late, 0.5):.0f} ms, p99 {percentile(late, 0.99):.0f} ms, max "
            f"{max(late):.0f} ms"
        )
    print(f"wall time: {bench.ended - bench.began:.1f} s from the starts to the last end")
    print(bench.cpu.line())
    balancer = bench.balancer
    print(
        "balancer: requests sent "
        + ", ".join(f"{w} {n}" for w, n in sorted(balancer.sent.items()))
        + "; connections refused "
        + (", ".join(f"{w} {n}" for w, n in sorted(balancer.refused.items())) or "0")
    )
    for label, provider_calls in (("LLM", llm), ("search", searches)):
        by = Counter(c.worker or "?" for c in provider_calls)
        print(
            f"provider requests, {label}: {len(provider_calls)} ("
            + ", ".join(
                f"{w} {n}, at most "
                f"{peak_in_flight(c for c in provider_calls if c.worker == w)} at once"
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
        url, server = stack.enter_context(database(args))
        postgres = RestartablePostgres(server) if server is not None else None
        if postgres is not None:  # stopped before running_postgres removes its folder
            stack.callback(postgres.close)
        store = open_store(url, tmp)
        stack.callback(store.close)
        llm = stack.enter_context(fake_openai(ResearchBrain()))
        search = stack.enter_context(fake_tavily())
        simulate_latency(llm, search)
        for fake in (llm, search):
            widen_backlog(fake)
        answers = record_answers(llm)
        config = tmp / "foundry-mcp.toml"
        write_config(config, args.lease, args.llm_slots)
        envs = {name: worker_env(tmp, name, config, url, llm, search) for name in ("A", "B")}
        began = time.monotonic()
        workers = start_workers(stack, envs)
        print(f"workers ready in {time.monotonic() - began:.1f} s", flush=True)
        probe = ProbeProcess(tmp, {name: w.server.port for name, w in workers.items()}, TOKENS)
        stack.callback(probe.stop)
        bench = Bench(
            args=args,
            store=store,
            store_url=url,
            postgres=postgres,
            llm=llm,
            search=search,
            answers=answers,
            workers=workers,
            balancer=Balancer({name: w.server.port for name, w in workers.items()}),
            researches=plan_researches(args.researches, args.seed),
            deadline=time.monotonic() + args.timeout,
            probe=probe,
        )
        print_settings(bench, url)
        anyio.run(drive, bench)
        read_back(bench)
        failed, items = report(bench)
        failed += [f"acceptance: {item.item}" for item in items if not item.passed]
        logs = args.logs
        if failed and logs is None:  # the evidence outlives the run
            logs = Path(tempfile.mkdtemp(prefix="team-load-logs-"))
        worker_logs(bench, logs)
        if logs is not None:
            print(f"workers' logs kept in {logs}")
    print()
    print("acceptance (issue 31):")
    for item in items:
        print(f"  {'PASS' if item.passed else 'FAIL'}  {item.item}: {item.figures}")
    print(verdict(bench, failed))
    return 0 if not failed else 1


def verdict(bench: Bench, failed: list[str]) -> str:
    """One line: PASS or the checks that failed, with the main figures."""
    completed = sum(1 for r in bench.researches if r.final_status == "completed")
    taken = sum(1 for r in bench.researches if any(e.kind == "taken_over" for e in r.events))
    calm = [c for c in bench.probe_calls if not bench.in_restart(c)]
    clients = [c for c in bench.calls if not bench.in_restart(c)]
    figures = (
        f"{completed}/{len(bench.researches)} completed, {taken} taken over, status p99 "
        f"{fmt_ms(status_p99(calm))} (the probe; the benchmark's clients "
        f"{fmt_ms(status_p99(clients))}), outside the PostgreSQL restart"
    )
    return f"verdict: {'PASS' if not failed else 'FAIL (' + ', '.join(failed) + ')'}: {figures}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--researches", type=int, default=100, help="how many (default 100)")
    parser.add_argument(
        "--lease", type=float, default=10.0, help="[research] lease_seconds (default 10, min 2)"
    )
    parser.add_argument("--seed", type=int, default=7, help="orders the questions and polls")
    parser.add_argument("--store-url", help="a PostgreSQL URL instead of a throwaway server")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds for every research to end"
    )
    parser.add_argument("--logs", type=Path, help="a folder to keep the workers' stderr in")
    parser.add_argument(
        "--llm-slots",
        type=int,
        help="LLM calls in flight per worker ([providers.openai] max_in_flight; default: the "
        "team server's [server] llm_max_in_flight, 32)",
    )
    parser.add_argument(
        "--pg-restart",
        choices=("takeover", "kill", "none"),
        default="takeover",
        help="when to stop and start PostgreSQL again: after the first takeover (default), "
        "right after the kill, or never (always never with --store-url)",
    )
    parser.add_argument(
        "--pg-restart-delay",
        type=float,
        default=1.0,
        help="seconds from the first takeover to the stop (default 1)",
    )
    parser.add_argument(
        "--pg-down", type=float, default=2.0, help="seconds PostgreSQL stays down (default 2)"
    )
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
