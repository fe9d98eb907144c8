"""Deadlines that deliver: researches under ``max_time_s`` at simulated provider latency.

Two questions, each researched in-process against the loopback fakes (``research_runtime`` and
``ResearchService``, as ``benchmarks/modes.py`` does), the LLM at the standard simulated latency
of ``benchmarks/simulated.py`` (0.4 s + 5 ms per output token; search 0.3 s):

- the issue's research: "How do heat pumps perform in cold climates?", default effort and mode
  (auto: simple), the fakes' default corpus and analyst (13 sources, about 15 s without a
  deadline);
- a comparison in simple mode over a planted corpus (``tests/fakes/planted.py``): every sentence
  of a page is a fact ``FACT-<item>-<n>`` and the analyst (``fact_analyst``) makes each fact it
  reads a finding, so its answers are long (analysis calls of 3-5 s).

Each is run without a deadline (for reference), then (a) with ``max_time_s = 8`` at the standard
latency and (b) with ``max_time_s = 5`` and the LLM three times slower. For each run: wall time
from the start call to the end, status, findings, citations in the report (and planted facts),
whether the report says what the deadline left out, and the figures of the ``time_ceiling``
decision. Then one line per acceptance target with PASS or FAIL:

- (a) ends within 9 s, ``completed``, with a cited report holding findings;
- (b) ends within 6 s, ``completed``, and the report says what the deadline left out.

Last, the advice of a (b) report that found nothing ("a report with findings needs about N s")
is tried: the same research with ``max_time_s = N``. About two minutes; run from the repository
root:

    python benchmarks/deadline.py [--no-advice]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.simulated import llm_delay, research_to_end, run_settings, simulate_latency
from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.workflow.deadline.texts import TIME_LIMIT_HEADING
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeResponse, RecordedRequest, ResearchBrain, fake_openai, fake_tavily
from tests.fakes.planted import PlantedCorpus, fact_analyst, facts_in

ITEMS = ("Redis", "Memcached", "Hazelcast", "Aerospike")
TOPIC = "session caching"


@dataclass(frozen=True)
class Question:
    label: str
    text: str
    options: dict[str, Any] = field(default_factory=dict)
    planted: bool = False


QUESTIONS = (
    Question("issue", "How do heat pumps perform in cold climates?"),
    Question(
        "planted",
        f"Compare {', '.join(ITEMS[:-1])} and {ITEMS[-1]} for {TOPIC}",
        {"mode": "simple"},
        planted=True,
    ),
)


@dataclass
class Run:
    label: str
    wall: float
    status: str
    findings: int
    citations: int
    sources_cited: int
    facts: int | None
    says_left_out: bool
    stop: dict[str, Any] | None
    stop_text: str | None
    warnings: list[str]


def slower(factor: float) -> Any:
    def delay(request: RecordedRequest, response: FakeResponse) -> float:
        return factor * llm_delay(request, response)

    return delay


async def research(question: Question, max_time_s: float | None, factor: float, label: str) -> Run:
    brain = ResearchBrain()
    corpus = None
    if question.planted:
        brain.overrides["analyzer"] = fact_analyst(brain)
        corpus = PlantedCorpus(ITEMS, TOPIC)
    with (
        fake_openai(brain) as llm,
        fake_tavily(corpus) as search,
        tempfile.TemporaryDirectory(prefix="deadline-") as tmp,
    ):
        simulate_latency(llm, search)
        if factor != 1:
            llm.delay = slower(factor)
        async with research_runtime(run_settings(Path(tmp), llm, search)) as service:
            options = dict(question.options)
            if max_time_s is not None:
                options["max_time_s"] = max_time_s
            wall, status, state = await research_to_end(service, question.text, **options)
    return summarise(label, wall, status, state, question.planted)


def summarise(
    label: str, wall: float, status: dict[str, Any], state: ResearchState, planted: bool
) -> Run:
    report = state.report or ""
    stops = [d for d in state.decisions if d.action == "time_ceiling"]
    metadata = state.report_metadata
    says = TIME_LIMIT_HEADING in report or "The deadline (max_time_s" in report
    return Run(
        label=label,
        wall=wall,
        status=status["status"],
        findings=len(state.findings),
        citations=metadata.citations_count if metadata else 0,
        sources_cited=metadata.sources_cited if metadata else 0,
        facts=len(facts_in(report)) if planted else None,
        says_left_out=says and bool(stops),
        stop=stops[-1].outputs if stops else None,
        stop_text=stops[-1].rationale if stops else None,
        warnings=list(state.warnings),
    )


def show(run: Run) -> None:
    print(f"== {run.label}")
    print(f"   wall time        {run.wall:.2f} s")
    print(f"   status           {run.status}")
    print(f"   findings         {run.findings}")
    print(f"   citations        {run.citations} (sources cited: {run.sources_cited})")
    if run.facts is not None:
        print(f"   planted facts    {run.facts} in the report")
    print(f"   says what the deadline left out: {'yes' if run.says_left_out else 'no'}")
    if run.stop is not None:
        print(f"   time_ceiling     {json.dumps(run.stop, sort_keys=True)}")
        print(f"   decision         {run.stop_text}")
    for warning in run.warnings:
        print(f"   warning          {warning}")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


async def run(args: argparse.Namespace) -> None:
    print("latency: LLM 0.4 s + 5 ms per output token, search 0.3 s (benchmarks/simulated.py)")
    targets: list[tuple[str, bool]] = []
    advice: list[tuple[Question, int]] = []
    for question in QUESTIONS:
        print(f"\n### {question.label}: {question.text} {question.options or ''}")
        show(await research(question, None, 1, f"{question.label}, no deadline"))
        a = await research(question, 8, 1, f"{question.label}, (a) max_time_s = 8")
        show(a)
        b = await research(question, 5, 3, f"{question.label}, (b) max_time_s = 5, LLM x3")
        show(b)
        targets.append(
            (
                f"(a) {question.label}: within 9 s ({a.wall:.2f} s), completed, cited report "
                f"with findings ({a.findings} findings, {a.citations} citations)",
                a.wall <= 9 and a.status == "completed" and a.findings > 0 and a.citations > 0,
            )
        )
        targets.append(
            (
                f"(b) {question.label}: within 6 s ({b.wall:.2f} s), completed, says what the "
                "deadline left out",
                b.wall <= 6 and b.status == "completed" and b.says_left_out,
            )
        )
        if b.stop is not None and b.stop.get("needed_s") and not b.findings:
            advice.append((question, int(b.stop["needed_s"])))
    if args.advice:
        for question, needed in advice:
            tried = await research(
                question, needed, 3, f"{question.label}, the advice: max_time_s = {needed}, LLM x3"
            )
            show(tried)
            targets.append(
                (
                    f"(advice) {question.label}: max_time_s = {needed} at LLM x3 gives findings "
                    f"({tried.findings}) in {tried.wall:.2f} s",
                    tried.findings > 0 and tried.wall <= needed + 1,
                )
            )
    print("\n== acceptance")
    for text, ok in targets:
        print(f"{verdict(ok)}  {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--no-advice", dest="advice", action="store_false", help="skip trying the advice"
    )
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
