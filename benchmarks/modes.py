"""Hierarchical against simple mode, and parallel against sequential sub-questions.

One comparison question of four items ("Compare Redis, Memcached, Hazelcast and Aerospike for
session caching") is researched three ways against the loopback fakes with realistic latency
(LLM: 0.4 s + 5 ms per output token; search: 0.3 s, see ``benchmarks/simulated.py``):

1. ``mode=hierarchical, max_concurrent=4``: one researcher per item, all four at once;
2. ``mode=hierarchical, max_concurrent=1``: the same sub-questions, one after another
   (``max_concurrent`` also bounds a researcher's own searches and the report's claim checks,
   so the gathering phase, the sub-questions' research alone, is timed too);
3. ``mode=simple`` (``max_concurrent=4``): one pass over the whole question.

The search corpus (``tests/fakes/planted.py``) plants distinctive fact sentences
(``FACT-<item>-<n>``, 12 per item over 4 pages) in the pages about each item; a search naming
one item finds its pages, a search naming them all finds a mix. The fake analyst reports every
fact sentence of the sources it reads as a finding (``fact_analyst``), so the facts in a report
are those of the pages the research read and carried through. For each run it prints wall
time, status, LLM calls, searches, prompt tokens, the planted facts the searches returned and
those the report holds. Then the two targets: hierarchical (4) takes at most half the wall time
of hierarchical (1), and its report holds every fact that simple mode's report holds. About two
minutes; run from the repository root:

    python benchmarks/modes.py [--iterations 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.simulated import run_settings, simulate_latency
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.fakes import ResearchBrain, fake_openai, fake_tavily
from tests.fakes.planted import PlantedCorpus, fact_analyst, facts_in

ITEMS = ("Redis", "Memcached", "Hazelcast", "Aerospike")
TOPIC = "session caching"
QUESTION = f"Compare {', '.join(ITEMS[:-1])} and {ITEMS[-1]} for {TOPIC}"


@dataclass
class Timeline:
    """What the research's events say about its sub-question researchers."""

    peak_researchers: int  # the most active at once (first to last event of each)
    gathering_seconds: float  # the research's gathering phase: the researchers' work


@dataclass
class Run:
    """What one research printed."""

    label: str
    wall: float
    status: str
    mode: str
    sub_questions: int
    llm_calls: int
    searches: int
    prompt_tokens: int
    facts_searched: set[str]
    facts_reported: set[str]
    researchers: Timeline


async def research_once(
    label: str, mode: str, max_concurrent: int, iterations: int, corpus: PlantedCorpus
) -> Run:
    brain = ResearchBrain()
    brain.overrides["analyzer"] = fact_analyst(brain)
    with (
        fake_openai(brain) as llm,
        fake_tavily(corpus) as search,
        tempfile.TemporaryDirectory(prefix="modes-") as tmp,
    ):
        simulate_latency(llm, search)
        async with research_runtime(run_settings(Path(tmp), llm, search)) as service:
            # Measure a server that has finished starting (SDK imports run in a thread).
            await anyio.to_thread.run_sync(service.providers.warmed.wait, 30)
            began = time.perf_counter()
            started = await service.start(
                QUESTION, mode=mode, max_concurrent=max_concurrent, max_iterations=iterations
            )
            research_id = started["research_id"]
            job = service.jobs.get(research_id)
            assert job is not None
            await job.done.wait()
            wall = time.perf_counter() - began
            status = await service.status(research_id)
            state = service.store.load(research_id)
            researchers = await timeline(service, research_id)
        return Run(
            label=label,
            wall=wall,
            status=status["status"],
            mode=status["mode"],
            sub_questions=len(state.sub_questions),
            llm_calls=len(llm.requests_to("/v1/chat/completions")),
            searches=len(search.requests_to("/search")),
            prompt_tokens=status["usage"]["total"]["input_tokens"],
            facts_searched=corpus.served_facts(search.requests_to("/search")),
            facts_reported=facts_in(state.report),
            researchers=researchers,
        )


async def timeline(service: ResearchService, research_id: str) -> Timeline:
    """Read the research's audit trail: events tagged with a branch are its researchers'."""
    spans: dict[str, tuple[datetime, datetime]] = {}
    gathering: dict[str, datetime] = {}
    cursor: str | None = None
    while True:
        page = await service.events(research_id, cursor=cursor, limit=500)
        for event in page["events"]:
            at = datetime.fromisoformat(event["at"])
            branch = event["data"].get("branch")
            if branch:
                first, _ = spans.get(branch, (at, at))
                spans[branch] = (first, at)
            elif event["data"].get("phase") == "gathering" and event["kind"] in (
                "phase_started",
                "phase_completed",
            ):
                gathering.setdefault(event["kind"], at)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    edges = sorted(
        [(first, 1) for first, _ in spans.values()] + [(last, -1) for _, last in spans.values()]
    )
    peak = active = 0
    for _, step in edges:
        active += step
        peak = max(peak, active)
    seconds = 0.0
    if len(gathering) == 2:
        seconds = (gathering["phase_completed"] - gathering["phase_started"]).total_seconds()
    return Timeline(peak, seconds)


def show(run: Run, planted: int) -> None:
    print(f"== {run.label}")
    print(f"wall time:              {run.wall:.2f} s")
    print(f"status:                 {run.status} (mode {run.mode})")
    if run.sub_questions:
        print(
            f"sub-questions:          {run.sub_questions}, at most "
            f"{run.researchers.peak_researchers} at once, researched in "
            f"{run.researchers.gathering_seconds:.2f} s (gathering phase)"
        )
    print(f"LLM calls:              {run.llm_calls}")
    print(f"searches:               {run.searches}")
    print(f"prompt tokens:          {run.prompt_tokens}")
    print(f"planted facts searched: {len(run.facts_searched)} of {planted}")
    print(f"facts in the report:    {len(run.facts_reported)}")


async def run(args: argparse.Namespace) -> None:
    corpus = PlantedCorpus(ITEMS, TOPIC)
    print(f"question: {QUESTION}")
    print(f"planted:  {len(corpus.facts)} facts over {len(ITEMS)} items")
    runs: dict[str, Run] = {}
    for key, label, mode, concurrent in (
        ("parallel", "hierarchical, max_concurrent=4", "hierarchical", 4),
        ("sequential", "hierarchical, max_concurrent=1", "hierarchical", 1),
        ("simple", "simple", "simple", 4),
    ):
        runs[key] = await research_once(label, mode, concurrent, args.iterations, corpus)
        show(runs[key], len(corpus.facts))

    parallel, sequential, simple = runs["parallel"], runs["sequential"], runs["simple"]
    ratio = parallel.wall / sequential.wall
    verdict = "OK" if ratio <= 0.5 and parallel.status == "completed" else "BELOW TARGET"
    print(
        f"== hierarchical(4) / hierarchical(1) wall time: {ratio:.2f} "
        f"({parallel.wall:.2f} s / {sequential.wall:.2f} s; target <= 0.5) {verdict}"
    )
    researched = (parallel.researchers.gathering_seconds, sequential.researchers.gathering_seconds)
    if all(researched):
        print(
            f"   of which the sub-questions' research (gathering phase): "
            f"{researched[0]:.2f} s / {researched[1]:.2f} s = {researched[0] / researched[1]:.2f}"
        )
    missing = simple.facts_reported - parallel.facts_reported
    verdict = "OK" if not missing else "BELOW TARGET"
    print(
        f"== facts in the report: hierarchical {len(parallel.facts_reported)}, "
        f"simple {len(simple.facts_reported)}; simple's facts missing from hierarchical's: "
        f"{len(missing)}{' (' + ', '.join(sorted(missing)) + ')' if missing else ''} {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3, help="max_iterations of each run")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
