"""The per-provider rate limit under a burst: 50 searches queued at once against a fake Tavily.

The searches go through the real Tavily adapter and the resilience policy with a limit of R
requests per second (``requests_per_minute = 60 R``). Prints the highest number of requests
the fake server received in any 1-second window (must not exceed R) and the throughput
(target: at least 0.9 R). Run from the repository root:

    python benchmarks/rate_limit.py [--rate 20] [--requests 50] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foundry_mcp.providers.resilience import PolicySettings, ProviderPolicy, ResilientSearch
from foundry_mcp.providers.search.tavily import TavilySearch
from tests.fakes import fake_tavily


def max_in_window(times: list[float], window: float = 1.0) -> int:
    """The most timestamps in any half-open window [t, t + window)."""
    times = sorted(times)
    best = 0
    end = 0
    for start_index, start in enumerate(times):
        while end < len(times) and times[end] < start + window:
            end += 1
        best = max(best, end - start_index)
    return best


async def run(args: argparse.Namespace) -> None:
    with fake_tavily() as server:
        server.latency = args.latency
        adapter = TavilySearch("tavily", "tvly-bench", server.base_url, 30.0)
        policy = ProviderPolicy(
            "tavily",
            PolicySettings(
                timeout=30.0,
                max_retries=0,
                requests_per_minute=args.rate * 60,
                max_in_flight=args.requests,
            ),
        )
        search = ResilientSearch(adapter, policy)
        finished: list[float] = []

        async def one(n: int) -> None:
            await search.search(f"rate limit benchmark query {n}", 3)
            finished.append(time.perf_counter())

        began = time.perf_counter()
        async with anyio.create_task_group() as group:
            for n in range(args.requests):
                group.start_soon(one, n)
        wall = time.perf_counter() - began
        await search.aclose()
        arrivals = [request.timestamp for request in server.requests_to("/search")]

    peak = max_in_window(arrivals)
    throughput = len(finished) / wall
    spread = max(arrivals) - min(arrivals)
    print(f"limit:                  {args.rate} requests/s ({args.rate * 60} per minute)")
    print(f"requests:               {len(arrivals)} queued at once, {len(finished)} completed")
    print(f"server latency:         {args.latency * 1000:.0f} ms")
    print(f"wall time:              {wall:.2f} s (arrivals spread over {spread:.2f} s)")
    print(
        f"max in any 1 s window:  {peak} (limit {args.rate}) {'OK' if peak <= args.rate else 'EXCEEDED'}"
    )
    ratio = throughput / args.rate
    verdict = "OK" if ratio >= 0.9 else "BELOW TARGET"
    print(
        f"throughput:             {throughput:.2f} requests/s = {ratio:.2f} R (target >= 0.9 R) {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=20, help="R, requests per second")
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.05, help="fake server latency, s")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
