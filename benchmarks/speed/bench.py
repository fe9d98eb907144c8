"""The speed of a research, and what it pays in tokens: wall time, its critical path, provider
concurrency, the server's own share of the time, prompt tokens by phase, and the facts reaching
the analyst and the report; for each effort, for this code and for others to compare with.

The world is ``benchmarks/speed/world.py`` (eight multi-part questions over long documentation
pages, careful fake models, LLM 0.4 s + 5 ms per output token, search 0.3 s). For each code
(this checkout, then each ``--compare SRC``: a ``src`` folder, e.g. from
``git archive <commit> src | tar -x -C /tmp/base``) and each effort, one fresh server researches
the questions four at a time (``--at-once``) in hierarchical mode; then, for the crowd, one
research alone on a fresh server and ``--crowd`` researches at once on another (the
``--questions`` in turn), whose wall times are compared (the server's CPU time per research is
what limits a crowd on two cores), with the median crowded research's critical path by phase
beside the lone one's (where the crowd waits), and the CPU the crowd took of the machine (the
server, its reading processes, and this process's fakes and client) over its cores: a wall no
scheduling could beat.

Printed: a line per research, the group's figures, and the acceptance lines of the speed issue
against the first code compared with (figures, not assertions). Run from the repository root:

    python benchmarks/speed/bench.py [--questions 8] [--efforts standard,quick] [--pages 3]
        [--at-once 4] [--crowd 32] [--compare SRC ...] [--seed 0] [--research LINE ...]
        [--repeat N]

The walls of the same code vary by a second or more from run to run on a shared machine:
``--repeat 3`` runs each code three times, in turn, and judges the medians.

About 2 minutes per code and effort, and 1 for the crowd, on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("FOUNDRY_MCP_NO_DOWNLOADS", "1")

from benchmarks.speed.runs import Scenario, mean, run_scenario
from benchmarks.speed.world import World, questions, world

PHASES = ("planning", "gathering", "analysis", "synthesis", "refinement")


def research_lines(scenario: Scenario) -> list[str]:
    lines = []
    for r in sorted(scenario.researches, key=lambda r: r.question):
        path = " ".join(f"{p[:4]} {r.path[p]:.1f}" for p in PHASES if p in r.path)
        lines.append(
            f"  {r.status:9} wall {r.wall:5.1f} s  start {r.start_ms:5.1f} ms  first "
            f"{(r.first_request_ms or 0):5.0f} ms  overhead {r.overhead / max(r.wall, 1e-9):5.1%}"
            f"  conc {r.concurrency:4.2f}  tokens {r.prompt_tokens:7,}  facts "
            f"{len(r.searched)}>{len(r.in_prompts & r.searched)}>{len(r.in_report & r.searched)}"
            + (f"  path: {path} (gaps {r.path_gaps:.1f})" if r.traced else "  path: not traced")
            + (f"  ERROR {r.error}" if r.error else "")
        )
    return lines


def figures(scenario: Scenario) -> dict[str, float]:
    done = [r for r in scenario.researches if r.status == "completed"]
    tokens_by_phase: dict[str, float] = {}
    for r in done:
        for phase, tokens in r.tokens_by_phase.items():
            tokens_by_phase[phase] = tokens_by_phase.get(phase, 0) + tokens
    return {
        "completed": len(done),
        "wall": mean([r.wall for r in done]),
        "tokens": sum(r.prompt_tokens for r in done),
        "concurrency": mean([r.concurrency for r in done]),
        "overhead": sum(r.overhead for r in done) / max(1e-9, sum(r.wall for r in done)),
        "start_ms": max((r.start_ms for r in done), default=0.0),
        "first_ms": max((r.first_request_ms or 0.0 for r in done), default=0.0),
        "report_facts": sum(len(r.in_report & r.searched) for r in done),
        "prompt_facts": sum(len(r.in_prompts & r.searched) for r in done),
        "searched_facts": sum(len(r.searched) for r in done),
        "cpu": scenario.cpu_per_research,
        "reading_cpu": scenario.reading_cpu_per_research,
        **{f"tokens:{p}": t for p, t in tokens_by_phase.items()},
        **{
            f"path:{p}": mean([r.path.get(p, 0.0) for r in done if r.traced])
            for p in PHASES
            if any(p in r.path for r in done)
        },
    }


def summary(label: str, f: dict[str, float]) -> str:
    by_phase = ", ".join(
        f"{k.split(':')[1]} {int(v):,}" for k, v in f.items() if k.startswith("tokens:")
    )
    path = ", ".join(f"{k.split(':')[1]} {v:.1f} s" for k, v in f.items() if k.startswith("path:"))
    return (
        f"{label}: {int(f['completed'])} completed, wall {f['wall']:.1f} s a question, prompt "
        f"tokens {int(f['tokens']):,} ({by_phase}), concurrency {f['concurrency']:.2f}, "
        f"overhead {f['overhead']:.1%} of wall, start answer <= {f['start_ms']:.0f} ms, first "
        f"request <= {f['first_ms']:.0f} ms, facts searched {int(f['searched_facts'])} -> "
        f"prompts {int(f['prompt_facts'])} -> report {int(f['report_facts'])}, server CPU "
        f"{f['cpu']:.2f} s a research (its reading processes {f.get('reading_cpu', 0.0):.2f} s)"
        + (f"; critical path {path}" if path else "")
    )


async def crowd(
    fakes: World, code: Path | None, count: int, effort: str
) -> tuple[Scenario, Scenario]:
    """One research alone and ``count`` at once, each on a fresh server."""
    one = questions(1)
    fakes.reset()
    alone = await run_scenario("alone", fakes, one, at_once=1, effort=effort, code=code)
    served = [corpus.question for corpus in fakes.library.corpora]  # the world's questions
    many = [served[i % len(served)] for i in range(count)]
    fakes.reset()
    crowded = await run_scenario("crowd", fakes, many, at_once=count, effort=effort, code=code)
    return alone, crowded


def floor(crowded: Scenario) -> str:
    """What the crowd took of the machine's cores, and the wall no scheduling could beat."""
    cores = os.cpu_count() or 1
    return (
        f"the crowd took {crowded.machine_cpu:.1f} s of CPU (server {crowded.cpu:.1f}, reading "
        f"{crowded.reading_cpu:.1f}, fakes and client {crowded.harness_cpu:.1f}): at least "
        f"{crowded.machine_cpu / cores:.1f} s of wall on {cores} cores"
    )


def crowd_path(alone: Scenario, crowded: Scenario) -> str:
    """The crowd's critical path by phase (the median research's), beside the lone research's:
    where a crowd waits. Empty for code whose researches are not traced."""
    traced = [r for r in crowded.researches if r.traced]
    if not traced or not alone.researches or not alone.researches[0].traced:
        return ""
    lone = alone.researches[0].path
    phases = [phase for phase in PHASES if phase in lone or any(phase in r.path for r in traced)]
    return ", ".join(
        f"{phase} {statistics.median(r.path.get(phase, 0.0) for r in traced):.1f} s "
        f"({lone.get(phase, 0.0):.1f} s)"
        for phase in phases
    )


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over ``runs`` (a figure some runs lack counts as 0 in those)."""
    keys = dict.fromkeys(key for found in runs for key in found)
    return {key: statistics.median(found.get(key, 0.0) for found in runs) for key in keys}


def acceptance(mine: dict[str, float], base: dict[str, float] | None) -> list[str]:
    def line(ok: bool, text: str) -> str:
        return f"  {'PASS' if ok else 'FAIL'}  {text}"

    lines = []
    if base:
        wall, tokens = mine["wall"] / base["wall"], mine["tokens"] / max(1, base["tokens"])
        lines.append(line(wall <= 0.75, f"wall per question {wall:.2f} of the compared (<= 0.75)"))
        lines.append(line(tokens <= 0.6, f"prompt tokens {tokens:.2f} of the compared (<= 0.6)"))
        lines.append(
            line(
                mine["report_facts"] >= base["report_facts"],
                f"facts in the report {int(mine['report_facts'])} "
                f"(compared {int(base['report_facts'])})",
            )
        )
    lines.append(
        line(mine["concurrency"] >= 3.5, f"concurrency {mine['concurrency']:.2f} (>= 3.5)")
    )
    lines.append(line(mine["overhead"] < 0.02, f"overhead {mine['overhead']:.1%} (< 2%)"))
    lines.append(line(mine["start_ms"] < 20, f"start answer {mine['start_ms']:.0f} ms (< 20 ms)"))
    return lines


async def main(args: argparse.Namespace) -> None:
    codes: list[tuple[str, Path | None]] = [("this code", None)]
    codes += [(f"compare {src}", src) for src in args.compare]
    efforts = [e.strip() for e in args.efforts.split(",") if e.strip()]
    with world(args.questions, args.pages, args.seed) as fakes:
        for effort in efforts:
            runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in codes}
            for repeat in range(args.repeat):  # the codes in turn, so load falls on each alike
                for label, code in codes:
                    fakes.reset()
                    scenario = await run_scenario(
                        label,
                        fakes,
                        questions(args.questions),
                        at_once=args.at_once,
                        effort=effort,
                        code=code,
                        research=args.research,
                    )
                    turn = f", run {repeat + 1} of {args.repeat}" if args.repeat > 1 else ""
                    print(
                        f"\n== {effort} effort, {label}: {args.at_once} at once{turn}", flush=True
                    )
                    print("\n".join(research_lines(scenario)))
                    runs[label].append(figures(scenario))
                    print(summary(label, runs[label][-1]), flush=True)
            results = {label: medians(found) for label, found in runs.items()}
            if args.repeat > 1:
                print(f"\n== {effort} effort, the median of {args.repeat} runs of each code")
                for label, found in results.items():
                    print(summary(label, found))
            base = results[codes[1][0]] if len(codes) > 1 else None
            print(
                f"\nAcceptance, {effort} effort (this code against {codes[-1][0] if base else 'targets'}):"
            )
            print("\n".join(acceptance(results["this code"], base)))
        if args.crowd:
            for label, code in codes:
                alone, crowded = await crowd(fakes, code, args.crowd, efforts[0])
                ratio = crowded.wall / alone.wall if alone.wall else 0.0
                path = crowd_path(alone, crowded)
                print(
                    f"\nCrowd, {label}: one research alone {alone.wall:.1f} s, {args.crowd} at "
                    f"once {crowded.wall:.1f} s ({ratio:.2f}x; target <= 1.3x), server CPU "
                    f"{crowded.cpu_per_research:.2f} s a research (its reading processes "
                    f"{crowded.reading_cpu_per_research:.2f} s)"
                    + (f"; critical path of the median research (alone): {path}" if path else "")
                    + f"; {floor(crowded)}",
                    flush=True,
                )


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--pages", type=int, default=3, help="pages per part of a question")
    parser.add_argument("--efforts", default="standard,quick")
    parser.add_argument("--at-once", type=int, default=4)
    parser.add_argument("--crowd", type=int, default=32, help="0: no crowd")
    parser.add_argument("--compare", action="append", default=[], help="a src folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each code and effort, taken in turn; the acceptance uses their medians",
    )
    parser.add_argument(
        "--research",
        action="append",
        default=[],
        metavar="LINE",
        help="a line of the servers' [research] table, e.g. 'deep_research_reading_budget = 36000'",
    )
    args = parser.parse_args()
    args.compare = [Path(src).resolve() for src in args.compare]
    for src in args.compare:
        # Without its package, the server would import this checkout's: the "compared" code
        # would be this one.
        if not (src / "foundry_mcp" / "__init__.py").is_file():
            parser.error(f"--compare {src}: no foundry_mcp package there (give a src folder)")
    return args


if __name__ == "__main__":
    anyio.run(main, parse())
