"""What one run of ``benchmarks/team/load.py`` shares: the settings its modules all use (the
research options, the principals' tokens, the status poll, the fakes' paths), the actors and
what was observed of them (``Worker``, ``Research``, ``Snapshot``, ``Event``, ``StatusCall``,
``Answer``, ``ProviderCall``, ``CpuMeter``, ``Restart``), ``Bench``, which holds them all, and
the names each worker goes by (host, provider keys).
"""

from __future__ import annotations

import argparse
import math
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import psutil

from benchmarks.team.infra import Balancer, RestartablePostgres
from benchmarks.team.status_probe import ProbeProcess
from tests.e2e.teamserver import TeamServer
from tests.fakes import FakeHTTPServer, RecordedRequest

if TYPE_CHECKING:
    from foundry_mcp.research.store.postgres.store import PostgresStore

OPTIONS: dict[str, Any] = {
    "mode": "simple",
    "max_iterations": 1,
    "max_sub_queries": 3,
    "max_sources_per_query": 3,
}

TOKENS = {"alice": "alice-team-load-4c1f9e2a7b5d", "bob": "bob-team-load-8d3e6a1c5f09"}
ACTIVE = {"queued", "running", "cancelling"}
POLL_SECONDS = 0.5
# A call sent from the stop of PostgreSQL until this long after it accepts connections again is
# "during the restart" (a worker's store fails fast for 3 s once it found the database gone).
RECONNECT_GRACE = 5.0
LLM_PATH = "/v1/chat/completions"
SEARCH_PATH = "/search"


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
