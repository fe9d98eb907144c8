"""Setting up a run of ``benchmarks/team/load.py``: the questions and the researches to start,
the workers' configuration and environment, starting and stopping the workers (each as a
machine of its own, ``LAUNCHER``), the store (a throwaway PostgreSQL or ``--store-url``) and
the fakes' backlog.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.team.shared import TOKENS, Research, Worker, host_name, llm_key, search_key
from tests.e2e.teamserver import TeamServer
from tests.fakes import FakeHTTPServer
from tests.postgres import PostgresServer, running_postgres

if TYPE_CHECKING:
    from foundry_mcp.research.store.postgres.store import PostgresStore

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
FAKE_BACKLOG = 512  # connections the fakes queue before accepting them
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
from foundry_mcp.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


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


def widen_backlog(fake: FakeHTTPServer) -> None:
    """Let the fake queue ``FAKE_BACKLOG`` connections not yet accepted, not the 5 of Python's
    HTTP server: two workers opening 64 connections at once would otherwise find some refused
    (the OpenAI SDK, with retries off, says "Cannot reach openai: APIConnectionError" and the
    research fails), which is the fake's limit, not foundry-mcp's. Listening again on a
    listening socket changes its backlog (Linux)."""
    if fake._httpd is not None:
        fake._httpd.socket.listen(FAKE_BACKLOG)
