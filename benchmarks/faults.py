"""The same deep research without faults, then with hung and timed-out searches.

Against the loopback fakes with simulated latency (LLM: 0.4 s + 5 ms per output token; search:
0.3 s), the research runs once fault-free and once with faulty search: 30% of search requests
hang (the fake never answers while the run lasts) and 20% answer only after the Tavily SDK's
timeout (``[providers.tavily] timeout``, set short here), so the SDK raises its own
``tavily.errors.TimeoutError``. Which request gets which fault is drawn from the seed, the query
and the request's rank for that query, so runs are repeatable. For both runs it prints wall
time, status, searches made (hedges included), hedges fired, retries, SDK timeouts, whether
every citation resolves, and the ratio of the wall times (target: the faulty run completes
with valid citations within 2x the fault-free one). Run from the repository root:

    python benchmarks/faults.py [--seed 7] [--hang 0.3] [--late 0.2] [--search-timeout 2]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tavily

from benchmarks.simulated import SEARCH_SECONDS, llm_delay, research_to_end
from foundry_mcp.config import load_settings
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeResponse, RecordedRequest, ResearchBrain, fake_openai, fake_tavily
from tests.support import assert_citations_resolve, served_urls

QUESTION = "How do vector databases index embeddings?"
HANG_SECONDS = 3600.0  # longer than any run: released when the fake stops


@dataclass
class Outcome:
    """What one run printed."""

    label: str
    wall: float
    status: str
    searches: int
    hedges: int
    retries: int
    sdk_timeouts: int
    faults: Counter[str]
    citations: str

    @property
    def valid(self) -> bool:
        return self.status == "completed" and self.citations == "valid"


class SearchFaults:
    """Decides, per search request, to answer in 0.3 s, after the SDK's timeout, or never."""

    def __init__(self, seed: int, hang: float, late: float, late_seconds: float) -> None:
        self.seed = seed
        self.hang = hang
        self.late = late
        self.late_seconds = late_seconds
        self.faults: Counter[str] = Counter()
        self._rank: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest, response: FakeResponse) -> float:
        query = str((request.json or {}).get("query", ""))
        with self._lock:
            rank = self._rank[query]
            self._rank[query] += 1
            draw = random.Random(f"{self.seed}|{query}|{rank}").random()
            fate = "hang" if draw < self.hang else "late" if draw < self.hang + self.late else "ok"
            self.faults[fate] += 1
        if fate == "hang":
            return HANG_SECONDS
        return self.late_seconds if fate == "late" else SEARCH_SECONDS


class SDKTimeouts:
    """Counts the ``tavily.errors.TimeoutError`` the SDK raises (its own, not the builtin)."""

    def __init__(self) -> None:
        self.count = 0
        self._search = tavily.AsyncTavilyClient.search

    def __enter__(self) -> SDKTimeouts:
        original = self._search

        async def counted(client: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return await original(client, *args, **kwargs)
            except tavily.errors.TimeoutError:
                self.count += 1
                raise

        tavily.AsyncTavilyClient.search = counted
        return self

    def __exit__(self, *_: object) -> None:
        tavily.AsyncTavilyClient.search = self._search


def citation_check(report: str | None, allowed: set[str]) -> str:
    """The word "valid", or what is wrong with the citations (``assert_citations_resolve``)."""
    if not report:
        return "no report"
    try:
        assert_citations_resolve(report, allowed)
    except AssertionError as problem:
        return f"INVALID: {problem}"
    return "valid"


async def run_once(args: argparse.Namespace, faulty: bool) -> Outcome:
    brain = ResearchBrain(gap_iterations=args.iterations - 1)
    faults = SearchFaults(args.seed, args.hang, args.late, args.search_timeout + 0.5)
    with (
        fake_openai(brain) as llm,
        fake_tavily() as search,
        tempfile.TemporaryDirectory() as tmp,
        SDKTimeouts() as sdk_timeouts,
    ):
        llm.delay = llm_delay
        search.delay = faults if faulty else (lambda request, response: SEARCH_SECONDS)
        config = Path(tmp) / "foundry-mcp.toml"
        config.write_text(
            "[providers.openai]\nmax_retries = 0\n\n"
            f"[providers.tavily]\ntimeout = {args.search_timeout}\n"
        )
        env = {
            "FOUNDRY_MCP_CONFIG": str(config),
            "FOUNDRY_MCP_RESEARCH_DIR": str(Path(tmp) / "research"),
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": llm.base_url + "/v1",
            "TAVILY_API_KEY": "tvly-bench",
            "TAVILY_BASE_URL": search.base_url,
        }
        settings = load_settings(env=env, cwd=Path(tmp), home=Path(tmp))
        async with research_runtime(settings) as service:
            wall, status, state = await research_to_end(
                service, QUESTION, max_iterations=args.iterations
            )
            policies = service.providers.resilience.snapshot()
        tavily_policy = policies.get("tavily", {})
        return Outcome(
            label="faulty" if faulty else "fault-free",
            wall=wall,
            status=status["status"],
            searches=len(search.requests_to("/search")),
            hedges=tavily_policy.get("hedges", 0),
            retries=sum(policy.get("retries", 0) for policy in policies.values()),
            sdk_timeouts=sdk_timeouts.count,
            faults=faults.faults,
            citations=citation_check(state.report, served_urls(search)),
        )


def show(outcome: Outcome) -> None:
    print(f"== {outcome.label}")
    print(f"wall time:              {outcome.wall:.2f} s")
    print(f"status:                 {outcome.status}")
    print(f"searches made:          {outcome.searches} (hedges included)")
    print(f"hedges fired:           {outcome.hedges}")
    print(f"retries:                {outcome.retries}")
    print(f"SDK timeouts:           {outcome.sdk_timeouts} (tavily.errors.TimeoutError)")
    if outcome.faults:
        fates = ", ".join(f"{outcome.faults[f]} {f}" for f in ("ok", "hang", "late"))
        print(f"search requests:        {fates}")
    print(f"citations:              {outcome.citations}")


async def run(args: argparse.Namespace) -> None:
    clean = await run_once(args, faulty=False)
    show(clean)
    faulty = await run_once(args, faulty=True)
    show(faulty)
    ratio = faulty.wall / clean.wall
    verdict = "OK" if faulty.valid and ratio <= 2.0 else "BELOW TARGET"
    print(
        f"== faulty / fault-free wall time: {ratio:.2f} (target <= 2.0 with valid citations) {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--hang", type=float, default=0.3, help="share of searches that hang")
    parser.add_argument("--late", type=float, default=0.2, help="share answered after timeout")
    parser.add_argument("--search-timeout", type=float, default=2.0, help="Tavily timeout, s")
    parser.add_argument("--iterations", type=int, default=3)
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
