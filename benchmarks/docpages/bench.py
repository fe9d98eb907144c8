"""Deep research on documentation pages: which planted facts reach the prompts and the report.

The world (``tests/fakes/docpages.py``): eight comparisons of three dotted names of the Python
standard library ("Compare dbm.gnu, dbm.ndbm and dbm.dumb for lookup speed and file size"; the
fake planner decomposes them, one sub-question per name). Each name has three documentation
pages (``--pages``) of 20-400 KB of text, Markdown or reST, where prose, headings, signatures,
lists, tables, admonitions and code blocks run together; each page plants a fact sentence
``FACT-<name>-<n>`` at 5%, 50%, 90% and 98% of its characters, and each name has one more fact
only in a search snippet (not in the page text). The models are careful fakes
(``benchmarks/docpages/runs.py``), so a fact is lost where foundry-mcp leaves it out.

Each question is researched in process (``research_runtime`` + ``ResearchService``; LLM 0.4 s
+ 5 ms per output token, search 0.3 s, see ``benchmarks/simulated.py``; page fetching off;
``max_concurrent=4, max_sub_queries=3, max_sources_per_query=3, max_iterations=1``):

- ``full``: the default window, in each of ``--modes`` (simple and hierarchical);
- ``10%``: ``model_context_overrides`` at 10% of the default window, ``allow_content_dropping``;
- ``16k`` and ``8k``: windows of 16,000 and 8,000 tokens, dropping allowed;

(the budgets other than full in ``--constrained-mode``, hierarchical by default), and once more
on pages of 20 KB and of 400 KB only (question 1, hierarchical, full budget) for the state bytes.

Printed per research and per budget and mode: the facts search returned and how many reached an
analysis prompt, a finding, a writer prompt and the report (read up to its Evidence Quality
section, which quotes removed claims), overall and by depth in their page, by page size and by
place (paragraph, list item, table row, admonition, after code, after heading; snippet-only
facts apart); prompt tokens; whether snippet-only facts were reported and quoted from the
snippet (the claim checks' quotes record their field); claims removed as unsupported although
their sentence is verbatim in the page text or snippet the search served for a source they cite
(each named, with where it was planted); state bytes written (the JSON of the state as the store
encodes it, counted by wrapping the store's ``save``, ``create`` and ``save_branch``); status and
citations. Then the issue's acceptance lines, each with its figure and PASS/FAIL (exit code 0
either way); "at a 10% budget >= 70%" is read as in every depth and size bucket.

About 6 minutes on 2 cores with the defaults (42 researches, two at a time; each mostly waits on
the fakes' simulated latency). Recall at full budget has repeated exactly from run to run;
prompt tokens vary by a few percent, and recall under the smaller budgets by a few facts, with
or without ``--parallel``, as foundry-mcp packs sources in the order their searches complete.
Run from the repository root:

    python benchmarks/docpages/bench.py [--questions 8] [--modes simple,hierarchical]
        [--budgets full,10%,16k,8k] [--constrained-mode hierarchical] [--pages 3] [--seed 0]
        [--parallel 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("FOUNDRY_MCP_NO_DOWNLOADS", "1")  # estimate tokens: never leave the machine

from benchmarks.docpages.runs import (
    BUDGETS,
    MODEL,
    OPTIONS,
    STAGES,
    Pool,
    Run,
    removals,
    research_once,
    snippet_claims,
)
from tests.fakes.docpages import (
    DOC_QUESTIONS,
    FACT_DEPTHS,
    PLACES,
    DocCorpus,
    PlantedFact,
    size_bucket,
)

SIZE_ORDER = ("20-50 KB", "50-150 KB", "150-300 KB", "300-400 KB")
DEPTH_ORDER = (*(f"{d:.0%}" for d in FACT_DEPTHS), "snippet")
PLACE_ORDER = (*PLACES.values(), "snippet")
STATE_PAGE_CHARS = (20_000, 400_000)
EFFORTS = ("quick", "standard", "deep")
# Prompt tokens per research before each page was read once (commit c49fdc3, this benchmark's
# defaults, full budget): the figure the standard effort is held to 35% of.
BEFORE_READ_ONCE = {"simple": 257_240, "hierarchical": 389_346}
SHARE_OF_BEFORE = 0.35
Groups = dict[tuple[str, str, str], Pool]  # (budget, mode, effort) -> runs


def percent(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "n/a"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def funnel(pool: Pool) -> str:
    reached, searched = pool.count("searched")
    parts = [f"searched {searched}"]
    for stage in STAGES[1:]:
        reached, _ = pool.count(stage)
        parts.append(f"{stage} {reached} ({percent(reached, searched)})")
    return " -> ".join(parts)


def snippet_line(pool: Pool) -> str:
    """The snippet-only facts: searched, reported, and how their claims fared."""
    tags = [t for t, f in pool.planted.items() if f.snippet_only]
    _, searched = pool.count("searched", tags)
    reported, _ = pool.count("report", tags)
    claims = snippet_claims(pool)
    return (
        f"{searched} searched, {reported} reported; as checked claims {claims.kept}/"
        f"{claims.claimed} kept, {claims.quotes()} from the snippet"
    )


def removal_line(runs: Iterable[Run]) -> str:
    runs = list(runs)
    removed, verbatim = removals(runs)
    checked = sum(len(run.claims) for run in runs)
    where = ", ".join(f"{n} in the {field}" for field, n in verbatim.items()) or "none"
    return f"{checked} claims checked, {removed} removed; verbatim in their cited source: {where}"


def show_run(run: Run, question: str, planted: dict[str, PlantedFact]) -> None:
    pool = Pool([run], planted)
    size = f", pages of {run.page_chars // 1000} KB" if run.page_chars else ""
    print(f"-- Q{run.number} [{run.budget}, {run.mode}, {run.effort}{size}] {question}")
    if run.error:
        print(f"   {run.status.upper()}: {run.error[:300]}")
    print(
        f"   {run.status} in {run.wall:.1f} s; {run.llm_calls} LLM calls, {run.searches} "
        f"searches; prompt tokens {run.prompt_tokens:,}; {run.citations} citations in the "
        f"report; state {run.writes.bytes:,} bytes in {run.writes.saves} writes"
    )
    print(
        f"   page text to the analyst: {run.sent:,} chars sent, {run.distinct:,} distinct "
        f"(x{run.resent:.2f})"
    )
    print(f"   facts: {funnel(pool)}")
    print(f"   report by depth: {pool.by_bucket('report', 'depth_bucket', DEPTH_ORDER)}")
    print(f"   report by page size: {pool.by_bucket('report', 'size_bucket', SIZE_ORDER)}")
    print(f"   snippet-only facts: {snippet_line(pool)}")
    print(f"   verification: {removal_line([run])}")
    lost = sorted(run.facts.get("searched", set()) - run.facts.get("report", set()))
    if lost:
        where = ", ".join(
            f"{tag} ({fact.place}, at {fact.depth_bucket} of a {fact.page_chars // 1000} KB page)"
            if (fact := planted.get(tag)) and fact.depth is not None
            else f"{tag} (snippet)"
            for tag in lost
        )
        print(f"   searched but not in the report: {where}")
    for claim in run.claims:
        if claim.verdict == "unsupported" and claim.verbatim_in:
            where = ", ".join(
                f"{f.tag} ({f.place}, at {f.depth_bucket} of a {f.page_chars // 1000} KB page)"
                for f in (planted[tag] for tag in sorted(claim.facts) if tag in planted)
            )
            print(
                f"   removed though verbatim in its {claim.verbatim_in}: {where or claim.sentence}"
            )


def show_group(label: str, pool: Pool) -> None:
    runs = pool.runs
    print(f"== {label} ({len(runs)} researches)")
    done = sum(run.status == "completed" for run in runs)
    cited = sum(run.status == "completed" and run.citations > 0 for run in runs)
    tokens = sum(run.prompt_tokens for run in runs) / len(runs)
    state = sum(run.writes.bytes for run in runs) / len(runs)
    print(f"   completed {done} of {len(runs)}, {cited} with a cited report")
    print(f"   prompt tokens {tokens:,.0f} a research; state bytes written {state:,.0f} a research")
    print(f"   page text sent / distinct: {resent(runs)}")
    print(f"   facts: {funnel(pool)}")
    for stage in ("analysis prompts", "report"):
        print(f"   {stage} by depth: {pool.by_bucket(stage, 'depth_bucket', DEPTH_ORDER)}")
        print(f"   {stage} by page size: {pool.by_bucket(stage, 'size_bucket', SIZE_ORDER)}")
    print(f"   report by place in the page: {pool.by_bucket('report', 'place', PLACE_ORDER)}")
    print(f"   snippet-only facts: {snippet_line(pool)}")
    print(f"   verification: {removal_line(runs)}")


def resent(runs: Sequence[Run]) -> str:
    """Page text sent over distinct, in all and at worst (per research)."""
    sent, distinct = sum(r.sent for r in runs), sum(r.distinct for r in runs)
    worst = max((r.resent for r in runs), default=1.0)
    return f"x{sent / distinct if distinct else 1.0:.2f} (worst research x{worst:.2f})"


def line(name: str, figure: str, target: str, ok: bool) -> None:
    print(f"  {name:<58} {figure:>26}  target {target:<22} {verdict(ok)}")


def show_acceptance(groups: Groups, everything: Pool, sizes: list[Run]) -> None:
    print("== acceptance (the issues' targets; figures, not assertions)")
    accept_recall(groups, everything.planted)
    accept_reading(groups)
    accept_claims(everything)
    accept_windows(groups)
    if len(sizes) == 2:
        small, large = (run.writes.bytes for run in sizes)
        ratio = large / small if small else float("inf")
        figure = f"{small:,} / {large:,} B (x{ratio:.2f})"
        line("state bytes per research, 20 KB / 400 KB pages", figure, "ratio <= 1.5", ratio <= 1.5)


def accept_recall(groups: Groups, planted: dict[str, PlantedFact]) -> None:
    """Recall at full budget and standard effort (per mode, and in the worst depth or size
    bucket) and at 10%."""
    for (budget, mode, effort), pool in groups.items():
        if budget != "full" or effort != "standard":
            continue
        prompts, report = pool.recall("analysis prompts"), pool.recall("report")
        tokens = sum(r.prompt_tokens for r in pool.runs) / len(pool.runs)
        figure = f"{_pct(prompts)} / {_pct(report)}, {tokens:,.0f} tok"
        ok = (prompts or 0) >= 0.95 and (report or 0) >= 0.90
        line(
            f"full budget, {mode}: searched facts in prompts / report",
            figure,
            ">= 95% / >= 90%",
            ok,
        )
    full = Pool(
        [r for (b, _, e), p in groups.items() if b == "full" and e == "standard" for r in p.runs],
        planted,
    )
    if full.runs:
        (p, pb), (r, rb) = full.worst("analysis prompts"), full.worst("report")
        ok = (p or 0) >= 0.95 and (r or 0) >= 0.90
        figure = f"{_pct(p)} ({pb}) / {_pct(r)} ({rb})"
        line(
            "full budget, worst depth or size bucket: prompts / report",
            figure,
            ">= 95% / >= 90%",
            ok,
        )
    tenth = [p for (b, _, _), p in groups.items() if b == "10%"]
    if tenth:
        value, bucket = tenth[0].worst("report")
        figure = f"{_pct(tenth[0].recall('report'))}, worst {_pct(value)} ({bucket})"
        line(
            "10% budget: searched facts in the report",
            figure,
            ">= 70% every bucket",
            (value or 0) >= 0.70,
        )


def accept_claims(everything: Pool) -> None:
    """Snippet-only claims kept and quoted from the snippet; verbatim claims removed."""
    claims = snippet_claims(everything)
    figure = f"{claims.kept}/{claims.claimed} kept, {claims.quotes()}"
    line(
        "snippet-only claims kept and quoted from the snippet",
        figure,
        "all",
        claims.claimed > 0 and claims.kept == claims.quoted == claims.claimed,
    )
    removed, verbatim = removals(everything.runs)
    figure = f"{sum(verbatim.values())} of {removed} removed"
    line("verbatim claims of their cited source removed", figure, "0", not verbatim)


def accept_reading(groups: Groups) -> None:
    """Each page read once; standard's tokens against before, with its facts; deep's facts."""
    for (budget, mode, effort), pool in groups.items():
        if budget != "full":
            continue
        runs = pool.runs
        worst = max((r.resent for r in runs), default=1.0)
        line(
            f"{mode}, {effort}: page text sent / distinct",
            f"worst research x{worst:.2f}",
            "<= 1.05",
            worst <= 1.05,
        )
        report = pool.recall("report") or 0.0
        tokens = sum(r.prompt_tokens for r in runs) / len(runs)
        if effort == "standard":
            before = BEFORE_READ_ONCE[mode]
            figure = f"{tokens:,.0f} tok ({tokens / before:.0%}), {report:.0%} reported"
            ok = tokens <= SHARE_OF_BEFORE * before and report >= 0.95
            line(f"{mode}, standard: prompt tokens vs before; facts", figure, "<= 35%; >= 95%", ok)
        if effort == "deep":
            reached, searched = pool.count("report")
            figure = f"{reached}/{searched} reported, {tokens:,.0f} tok"
            line(f"{mode}, deep: searched facts in the report", figure, "all", reached == searched)


def accept_windows(groups: Groups) -> None:
    """The small windows: every research completed with a cited report; recall at 16k."""
    for budget, minimum in (("16k", 0.60), ("8k", None)):
        pools = [p for (b, _, _), p in groups.items() if b == budget]
        if not pools:
            continue
        runs = pools[0].runs
        cited = sum(r.status == "completed" and r.citations > 0 for r in runs)
        figure = f"{cited}/{len(runs)} cited"
        ok = cited == len(runs)
        if minimum is not None:
            report = pools[0].recall("report")
            figure += f", {_pct(report)} in the report"
            ok = ok and (report or 0) >= minimum
        target = "all; >= 60% reported" if minimum else "all"
        line(f"{budget} window: completed with a cited report", figure, target, ok)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


async def run_all(args: argparse.Namespace) -> None:
    questions = DOC_QUESTIONS[: max(1, min(args.questions, len(DOC_QUESTIONS)))]
    corpora = [DocCorpus(q, pages_per_item=args.pages, seed=args.seed) for q in questions]
    planted = {tag: fact for corpus in corpora for tag, fact in corpus.planted.items()}
    plan = [
        (number, corpus, mode, budget, effort)
        for budget in args.budgets
        for mode in (args.modes if budget == "full" else [args.constrained_mode])
        for effort in (args.efforts if budget == "full" else ["standard"])
        for number, corpus in enumerate(corpora, start=1)
    ]
    sized = [
        DocCorpus(questions[0], pages_per_item=args.pages, page_chars=chars, seed=args.seed)
        for chars in STATE_PAGE_CHARS
    ]
    plan += [(1, corpus, "hierarchical", "full", "standard") for corpus in sized]
    show_setup(args, corpora)
    results: dict[int, Run] = {}
    limiter = anyio.CapacityLimiter(args.parallel)

    async def one(index: int) -> None:
        async with limiter:
            number, corpus, mode, budget, effort = plan[index]
            try:
                results[index] = await research_once(
                    number, corpus, mode, budget, effort, args.reading_budget
                )
            except Exception as exc:  # a figure, not a crash: the other runs still count
                failed = Run(number, mode, budget, corpus.page_chars, "error", repr(exc)[:300])
                failed.effort = effort
                results[index] = failed
            show_run(results[index], corpus.question.text, corpus.planted)

    began = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(len(plan)):
            group.start_soon(one, index)
    runs = [results[i] for i in range(len(plan) - len(sized))]
    groups: Groups = {}
    for run in runs:
        groups.setdefault((run.budget, run.mode, run.effort), Pool([], planted)).runs.append(run)
    for (budget, mode, effort), pool in groups.items():
        show_group(f"budget {budget}, {mode}, {effort}", pool)
    sizes = [results[i] for i in range(len(plan) - len(sized), len(plan))]
    for run in sizes:
        print(f"== pages of {run.page_chars // 1000 if run.page_chars else '?'} KB: state "
              f"{run.writes.bytes:,} bytes in {run.writes.saves} writes, {run.status}")  # fmt: skip
    show_acceptance(groups, Pool(runs, planted), sizes)
    print(f"({len(plan)} researches in {time.perf_counter() - began:.0f} s)")


def show_setup(args: argparse.Namespace, corpora: list[DocCorpus]) -> None:
    pages = [page for corpus in corpora for page in corpus.all_pages()]
    lengths = [len(page["raw_content"]) for page in pages]
    sizes = Counter(size_bucket(length) for length in lengths)
    facts = sum(len(corpus.planted) for corpus in corpora)
    spread = ", ".join(f"{sizes[name]} of {name}" for name in SIZE_ORDER if sizes[name])
    print(
        f"corpus: {len(corpora)} questions, {len(pages)} pages ({args.pages} per part) of "
        f"{min(lengths):,}-{max(lengths):,} chars ({spread}), {facts} facts at "
        f"{', '.join(f'{d:.0%}' for d in FACT_DEPTHS)} depth and one snippet-only per part"
    )
    print(f"options: {', '.join(f'{k}={v}' for k, v in OPTIONS.items())}; model {MODEL}")
    print("budgets: " + ", ".join(f"{b} {BUDGETS[b] or 'default'} tokens" for b in args.budgets))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=len(DOC_QUESTIONS))
    parser.add_argument("--modes", default="simple,hierarchical", help="modes of the full budget")
    parser.add_argument("--budgets", default=",".join(BUDGETS), help="of full, 10%%, 16k, 8k")
    parser.add_argument(
        "--efforts", default="standard", help="of quick, standard, deep (at the full budget)"
    )
    parser.add_argument(
        "--reading-budget",
        type=int,
        default=None,
        help="the configuration's deep_research_reading_budget (default: the product's)",
    )
    parser.add_argument("--constrained-mode", default="hierarchical", help="of other budgets")
    parser.add_argument("--pages", type=int, default=3, help="pages per part of a question")
    parser.add_argument("--seed", type=int, default=0, help="seed of the corpus")
    parser.add_argument("--parallel", type=int, default=2, help="researches at once")
    args = parser.parse_args()
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    args.budgets = [{"10": "10%"}.get(b.strip(), b.strip()) for b in args.budgets.split(",")]
    args.efforts = [e.strip() for e in args.efforts.split(",") if e.strip()]
    if not set(args.efforts) <= set(EFFORTS):
        parser.error(f"unknown effort in {args.efforts}; choose from {', '.join(EFFORTS)}")
    unknown = [b for b in args.budgets if b not in BUDGETS]
    if unknown:
        parser.error(f"unknown budget(s) {', '.join(unknown)}; choose from {', '.join(BUDGETS)}")
    anyio.run(run_all, args)


if __name__ == "__main__":
    main()
