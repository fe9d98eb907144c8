"""A status client in a process of its own: what a team member's editor sees while the team
loads the server (``benchmarks/team/load.py``).

The load generator of ``team/load.py`` runs a hundred MCP clients, the fake providers and the
balancer in one Python process. Under the start of a hundred research that process is itself
saturated (one event loop and one interpreter lock for all of it), and the latency its clients
measure includes its own queueing, which a real client, alone on its machine, never pays. This
probe measures the same call the same way (the SDK's client, the round-robin balancer of
``infra``, ``deep-research-status`` without ``wait``) from a quiet process: on a fixed
schedule, every ``--interval`` seconds, whether or not the previous calls have answered (so a
slow answer does not hide the calls that would have waited behind it), each to the next
research in turn.

The research to poll are read from ``--ids`` (lines ``principal research_id``, appended by the
load generator as its starts answer); each principal has its own client and token
(``--token principal=token``). Every call is one JSON line in ``--out``: ``sent`` (time.time()),
``seconds``, ``worker``, ``outcome`` (ok, error, broken) and ``code``. It runs until SIGTERM or
SIGINT. Run by ``team/load.py``; by hand:

    python -m benchmarks.team.status_probe --port A=8001 --port B=8002 --token alice=TOKEN \\
        --ids ids.txt --out calls.jsonl [--interval 0.05]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import anyio
from mcp import Client

from benchmarks.team.infra import BalancedTransport, Balancer, CallFailed, research_call
from tests.e2e.teamserver import mcp_client
from tests.postgres import _command

ROOT = Path(__file__).resolve().parents[2]  # the repository

MCP_PATH = "/mcp"
INTERVAL = 0.05  # seconds between two calls
BROKEN_IN_A_ROW = 3  # a client whose calls broke this often is replaced by a new one


class Probe:
    """Clients by principal, the research to poll, and the file the calls go to."""

    def __init__(self, args: argparse.Namespace, out: IO[str]) -> None:
        self.balancer = Balancer(dict(args.port))
        self.url = f"http://127.0.0.1:{args.port[0][1]}{MCP_PATH}"  # the balancer sets the port
        self.tokens: dict[str, str] = dict(args.token)
        self.ids_path: Path = args.ids
        self.out = out
        self.clients: dict[str, tuple[Client, BalancedTransport]] = {}
        self.retired: dict[str, anyio.Event] = {}  # set: the principal's client is replaced
        self.broken: dict[str, int] = {}
        self.turn = 0

    def next_research(self) -> tuple[str, str] | None:
        """The next (principal, research id) in turn whose client is open; None before the
        first start."""
        try:
            lines = self.ids_path.read_text().split("\n")[:-1]  # the last may be half written
        except FileNotFoundError:
            return None
        pairs = [line.split() for line in lines]
        known = [(p[0], p[1]) for p in pairs if len(p) == 2 and p[0] in self.clients]
        if not known:
            return None
        self.turn += 1
        return known[self.turn % len(known)]

    async def hold_client(self, principal: str) -> None:
        """Keep a client of the principal open (a task: the SDK's client is closed by the task
        that opened it), and open a new one when it is retired or fails (its worker died
        under a call)."""
        while True:
            retired = self.retired[principal] = anyio.Event()
            transport = BalancedTransport(self.balancer)
            try:
                async with mcp_client(self.url, self.tokens[principal], transport=transport) as c:
                    self.clients[principal] = (c, transport)
                    self.broken[principal] = 0
                    await retired.wait()
            except Exception:  # its calls in flight are recorded broken by their own tasks
                await anyio.sleep(0.05)

    def replace_client(self, principal: str) -> None:
        """A new client for the principal; the old one closes (its calls in flight break)."""
        self.retired[principal].set()

    async def poll(self, principal: str, research_id: str) -> None:
        """One status call, written to the output whatever became of it."""
        client, transport = self.clients[principal]
        sent, began = time.time(), time.perf_counter()
        outcome, code = "broken", ""
        try:
            envelope = await research_call(
                client, action="deep-research-status", research_id=research_id
            )
            outcome = "ok" if envelope["success"] else "error"
            if outcome == "error":
                code = str((envelope.get("data") or {}).get("error_code") or "")
        except CallFailed:
            outcome = "error"
        except Exception:  # no answer: the worker died under it, or the connection broke
            outcome = "broken"
        record = {
            "sent": sent,
            "seconds": time.perf_counter() - began,
            "worker": transport.last or "?",
            "outcome": outcome,
            "code": code,
        }
        self.out.write(json.dumps(record) + "\n")
        if outcome != "broken":
            self.broken[principal] = 0
        elif self.clients.get(principal, (None,))[0] is client:
            self.broken[principal] = self.broken.get(principal, 0) + 1
            if self.broken[principal] == BROKEN_IN_A_ROW:
                self.replace_client(principal)


async def run(args: argparse.Namespace, out: IO[str]) -> None:
    async with anyio.create_task_group() as calls:
        probe = Probe(args, out)
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:

            async def stop_on_signal() -> None:
                async for _ in signals:
                    calls.cancel_scope.cancel()

            calls.start_soon(stop_on_signal)
            for principal in probe.tokens:
                calls.start_soon(probe.hold_client, principal)
            while len(probe.clients) < len(probe.tokens):
                await anyio.sleep(0.01)
            # What start-up built is never garbage again: out of the collector's sight, so
            # that a full collection of this process does not count as the server's latency.
            gc.freeze()
            print("ready", flush=True)  # the load generator waits for this line
            tick = time.monotonic()
            while True:
                chosen = probe.next_research()
                if chosen is not None:
                    calls.start_soon(probe.poll, *chosen)
                tick += args.interval
                await anyio.sleep(max(0.0, tick - time.monotonic()))


class ProbeProcess:
    """The probe as the load generator runs it: started, told each research, stopped, read."""

    def __init__(self, folder: Path, ports: dict[str, int], tokens: dict[str, str]) -> None:
        self.ids = folder / "probe-ids.txt"
        self.out = folder / "probe-calls.jsonl"
        self.ids.write_text("")
        command = [sys.executable, "-m", "benchmarks.team.status_probe", "--ids", str(self.ids)]
        command += ["--out", str(self.out)]
        command += [arg for name, port in ports.items() for arg in ("--port", f"{name}={port}")]
        command += [arg for p, token in tokens.items() for arg in ("--token", f"{p}={token}")]
        self.process = subprocess.Popen(  # dies with this process (SIGQUIT)
            _command(None, command), cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
        )
        # Started and its clients open before the researches start, so that its own start
        # (a second of imports) does not weigh on theirs.
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != b"ready":
            raise RuntimeError("the status probe did not start (its error is above)")

    def add(self, principal: str, research_id: str) -> None:
        """Poll this research too, from now on."""
        with self.ids.open("a") as ids:
            ids.write(f"{principal} {research_id}\n")

    def stop(self) -> list[dict[str, Any]]:
        """Stop the probe; every call it made, in the order they ended."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if not self.out.exists():
            return []
        lines = self.out.read_text().splitlines()
        return [json.loads(line) for line in lines if line.endswith("}")]


def pair(text: str) -> tuple[str, Any]:
    name, _, value = text.partition("=")
    if not name or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, int(value) if value.isdigit() else value


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=pair, action="append", required=True, help="NAME=PORT")
    parser.add_argument("--token", type=pair, action="append", required=True, help="P=TOKEN")
    parser.add_argument("--ids", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--interval", type=float, default=INTERVAL)
    # A client's session with a killed worker ends with an error line; expected here.
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.ERROR)
    args = parser.parse_args()
    with args.out.open("a", buffering=1) as out:
        anyio.run(run, args, out)


if __name__ == "__main__":
    main()
