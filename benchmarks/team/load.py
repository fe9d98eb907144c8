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

In front of the workers, a round-robin balancer without affinity (``benchmarks/team/infra.py``):
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

The clients send the requests the SDK's client sends (``initialize``,
``notifications/initialized``, then ``tools/call``) themselves (``raw.py``): a hundred of the
SDK's clients in this one Python process cost 1.8 ms of CPU per call, a third of a core taken
from the two the workers run on, where real clients each pay it on their own machine. With
``--sdk-clients`` they are the SDK's, sending their calls with the session's ``send_request``
(``call_tool`` would also compile the tool's output schema once per session, about 0.5 s of CPU).

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
  from sending to reading the answer, overall, outside and during the restart of PostgreSQL
  (from its stop to ``RECONNECT_GRACE`` s after it accepts connections again), before and after
  the kill, and by worker, with the calls that answered an error (by code) and those that broke
  (no answer: the calls A was answering at the kill); first as a client in a process of its
  own measures them (``benchmarks/team/status_probe.py``: a call every 50 ms, on a fixed schedule,
  to each research in turn, started and connected before the researches), then as the
  benchmark's own clients saw them, which share this process with each other and the fakes,
  so that its queueing under the starts is in their figures; the latency of the
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
  restart, the probe's calls) under 50 ms.

The last line is the verdict; the exit status is 0 when every check holds, 1 otherwise (2 when
something could not start). It needs PostgreSQL 12+ (Debian's ``postgresql`` package; as root
it runs as ``postgres``) or ``--store-url`` (an empty database is best: the workers take over
any orphan they find there, and the benchmark's research stays in it). Everything it starts
stops when it ends, fails, or is interrupted (Ctrl-C, SIGTERM); the workers and PostgreSQL die
with it even when it is SIGKILLed. A failed run keeps the workers' logs (``--logs DIR``: always).
About two minutes for 100 research on 2 cores. Run from the repository root:

    python benchmarks/team/load.py [--researches 100] [--lease 10] [--seed 7] [--store-url URL]
        [--llm-slots N] [--pg-restart takeover|kill|none] [--pg-restart-delay 1]
        [--pg-down 2] [--timeout 300] [--logs DIR] [--sdk-clients]

Where the code lives: this file has the command line and the run; beside it, ``shared.py``
what a run shares (``Bench``, ``RECONNECT_GRACE``), ``setup.py`` the workers and the
store, ``clients.py`` the clients, ``chaos.py`` the kill and the restart
(``SNAPSHOT_DELAY``, ``HELD_DELAY``), ``judge.py`` reading back and judging
(``Repeats``), ``report.py`` what it prints, ``infra.py`` the balancer,
``raw.py`` the load clients' requests.
"""

from __future__ import annotations

import argparse
import logging
import random
import shutil
import signal
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.simulated import simulate_latency
from benchmarks.team.chaos import kill_midway, restart_postgres
from benchmarks.team.clients import describe, follow, list_ids
from benchmarks.team.infra import Balancer, RestartablePostgres
from benchmarks.team.judge import read_back, record_answers
from benchmarks.team.report import print_settings, report, verdict, worker_logs
from benchmarks.team.setup import (
    SetupError,
    database,
    open_store,
    plan_researches,
    start_workers,
    widen_backlog,
    worker_env,
    write_config,
)
from benchmarks.team.shared import TOKENS, Bench, StatusCall
from benchmarks.team.status_probe import ProbeProcess
from tests.fakes import ResearchBrain, fake_openai, fake_tavily
from tests.postgres import PostgresStartError, PostgresUnavailable

# This process's event loop is timed by a task that sleeps this long, over and over: how late it
# wakes is how late every client here reads its answers (its share of the status latency).
LOOP_TICK = 0.02


# ----------------------------------------------------------------------------- the run


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
    parser.add_argument(
        "--sdk-clients",
        action="store_true",
        help="the load clients are the SDK's (1.8 ms of this machine's CPU per call) instead "
        "of the same requests sent directly (benchmarks/team/raw.py)",
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
