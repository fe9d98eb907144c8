"""What an assistant's program costs as an LLM provider: its start-up, on every call.

A research runs once with the OpenAI API fake (0.4 s plus 5 ms per output token a call) and
once with ``claude-cli`` (a fake ``claude`` program that answers like the real one after
``--startup`` seconds of simulated start-up plus the API run's mean call time), on the same question, with
searches on a fake Tavily (0.3 s each). For each it prints the wall time, the LLM calls, their
mean latency as foundry-mcp measured it, the most programs (or requests) in flight at once, and
for the program: its mean time from being started to answering, and the share of the wall time
that start-up took on the critical path (start-up times calls, over the mean concurrency).

The fake program is a Python script: its own interpreter start (about 0.05-0.1 s here) is real
and is counted; ``--startup`` adds what the real program spends before asking its model
(Claude Code, a Node.js program, takes about a second). Run from the repository root:

    python benchmarks/cli_providers.py [--startup 1.0] [--effort quick] [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.simulated import (
    LLM_BASE_SECONDS,
    research_to_end,
    run_settings,
    simulate_latency,
)
from foundry_mcp.config import Settings
from foundry_mcp.runtime import research_runtime
from tests.fakes import fake_openai, fake_tavily
from tests.fakes.cli_bins import DELAY_ENV, LOG_ENV, read_calls, write_cli_bins

QUERY = "How do heat pumps perform in cold climates?"


async def _research(settings: Settings, effort: str, provider: str) -> dict[str, Any]:
    """Run one research; its wall time and its LLM calls' latencies (from the audit trail)."""
    async with research_runtime(settings) as service:
        wall, status, state = await research_to_end(
            service, QUERY, effort=effort, provider_id=provider
        )
        events = service.store.events(state.id, 0, 10_000)
    latencies = [e.data["latency_s"] for e in events if e.kind == "llm_call"]
    return {"status": status["status"], "wall": wall, "latencies": latencies}


def _peak(intervals: list[tuple[float, float]]) -> int:
    points = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    peak = running = 0
    for _, step in points:
        running += step
        peak = max(peak, running)
    return peak


def _print(label: str, run: dict[str, Any], extra: str = "") -> None:
    latencies = run["latencies"]
    mean = statistics.mean(latencies) if latencies else 0.0
    print(
        f"{label:<11} {run['status']:<10} wall {run['wall']:6.1f} s  LLM calls {len(latencies):3d}"
        f"  mean call {mean:5.2f} s{extra}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--startup", type=float, default=1.0, help="simulated start-up, s")
    parser.add_argument("--effort", default="quick", choices=["quick", "standard", "deep"])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()

    print(
        f"effort {args.effort}; program start-up {args.startup:.2f} s simulated + its own "
        f"interpreter; model {LLM_BASE_SECONDS:.1f} s + 5 ms per output token a call; search 0.3 s"
    )
    for run_number in range(1, args.runs + 1):
        with (
            tempfile.TemporaryDirectory() as tmp_dir,
            fake_openai() as llm,
            fake_tavily() as search,
        ):
            tmp = Path(tmp_dir)
            simulate_latency(llm, search)
            settings = run_settings(tmp, llm, search)
            api = await _research(settings, args.effort, "openai")

            bins = write_cli_bins(tmp / "bin", programs=("claude",))
            calls_dir = tmp / "calls"
            calls_dir.mkdir()
            os.environ["PATH"] = f"{bins}{os.pathsep}{os.environ.get('PATH', '')}"
            os.environ[LOG_ENV] = str(calls_dir)
            # The program answers after its start-up plus the API run's mean model time.
            model_time = statistics.mean(api["latencies"]) if api["latencies"] else 0.4
            os.environ[DELAY_ENV] = str(args.startup + model_time)
            program = await _research(settings, args.effort, "claude-cli")
            calls = read_calls(calls_dir)

        in_program = [c["ended"] - c["started"] for c in calls if "ended" in c]
        intervals = [(c["started"], c["ended"]) for c in calls if "ended" in c]
        busy = sum(in_program)
        span = max(e for _, e in intervals) - min(s for s, _ in intervals) if intervals else 0.0
        concurrency = busy / span if span else 0.0
        startup_share = (
            len(calls) * args.startup / max(concurrency, 1.0) / program["wall"] if calls else 0.0
        )
        print(f"run {run_number}")
        _print("openai API", api)
        _print(
            "claude-cli",
            program,
            f"  programs run {len(calls)}, in the program {statistics.mean(in_program):.2f} s "
            f"each, at most {_peak(intervals)} at once (mean {concurrency:.2f}); start-up "
            f"{startup_share:.0%} of the wall time",
        )
        print(f"claude-cli costs {program['wall'] - api['wall']:+.1f} s over the API")


if __name__ == "__main__":
    anyio.run(main)
