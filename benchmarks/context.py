"""Token management benchmark: allocation speed, counting throughput, what survives a budget.

Prints:

1. the time to fit 500 sources of mixed size (200 to 20,000 tokens) into an analysis budget:
   the allocation alone (priorities, tiers, levels; target < 200 ms), and the whole fit without
   LLM calls (counting, allocation and passage selection of every shortened source);
2. token counting throughput: the estimate, tiktoken when its encoding loads here, and a cached
   recount;
3. for a fixed corpus of 20 long sources, each with a key sentence (relevant to the question)
   at 10%, 50% and 90% of its depth, the share of key sentences that reach the analysis prompt
   at budgets of 100%, 40% and 10% of the corpus size; next to it, the same budget spent the
   old way (every source cut to an equal share of its beginning).

No model is called: summaries are replaced by passage selection (the ladder without a
summarization provider). Dropping is allowed, since at 10% the guardrails alone (the top five
sources kept at 40%) need more than the budget. Run from the repository root:

    python benchmarks/context.py [--sources 500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foundry_mcp.context.allocation import allocate
from foundry_mcp.context.budget import TokenBudget
from foundry_mcp.context.ladder import Ladder
from foundry_mcp.context.options import TokenBudgetOptions
from foundry_mcp.context.priority import ContentItem
from foundry_mcp.context.tokens import (
    CachedCounter,
    EstimateCounter,
    TokenCounter,
    _load_encoding,
    counter_for_model,
)
from foundry_mcp.research.models import (
    ResearchState,
    Source,
    SubQuery,
)
from foundry_mcp.research.prompts.summarizer import SUMMARY_PROMPT_VERSION, summarizer_prompts
from foundry_mcp.research.workflow.fitting.fitter import Fitting
from foundry_mcp.research.workflow.fitting.sources import fit_sources, prepare_round

QUESTION = "How much lithium do battery recycling plants recover, and at what cost?"
FILLER = [
    "The committee met on Tuesday to review the annual budget and the travel plans.",
    "Weather in the northern region was mild for most of the season this year.",
    "Several employees attended a workshop about office software and email etiquette.",
    "The cafeteria introduced a new menu with seasonal vegetables and warm soups.",
    "Parking arrangements changed after the construction of the east wing began.",
    "A local band performed at the summer festival near the old river bridge.",
    "The library extended its opening hours during the examination period.",
    "Visitors praised the renovated lobby and the new signs in the main hall.",
]
KEY_TEMPLATES = [
    "Plant {n} recovered {p} percent of the lithium from recycled battery cathodes.",
    "At plant {n}, lithium recovery from battery recycling cost {c} dollars per tonne.",
    "Recycling trials at site {n} reported a lithium recovery rate of {p} percent.",
]


class NoLLM:
    """Stands in for the research's LLM: token management never needs one here."""

    model = "gpt-4o"
    provider = type("Provider", (), {"name": "openai"})()

    async def ask(self, *args: Any, **kwargs: Any) -> str:
        raise RuntimeError("the benchmark makes no LLM call")


class BenchContext(Fitting):
    """A fitting with a fixed analysis budget and no summarization provider."""

    def __init__(self, state: ResearchState, counter: TokenCounter, budget: int) -> None:
        options = TokenBudgetOptions(
            context_window=10_000_000, max_output=16_384, allow_content_dropping=True
        )
        state.options.token_budget = options
        token_budget = TokenBudget.from_options(options, "gpt-4o", "openai")
        super().__init__(NoLLM(), state, counter, token_budget)  # type: ignore[arg-type]
        self._analysis_budget = budget

    def phase_budget(self, phase: str) -> int:
        return self._analysis_budget

    async def ladder(self) -> Ladder:
        return Ladder(
            self.counter, [], prompts=summarizer_prompts, prompt_version=SUMMARY_PROMPT_VERSION
        )


def filler_text(rng: random.Random, tokens: int, counter: TokenCounter) -> list[str]:
    paragraphs: list[str] = []
    size = 0
    while size < tokens:
        paragraph = " ".join(rng.choice(FILLER) for _ in range(4))
        paragraphs.append(paragraph)
        size += counter.count(paragraph) + 1
    return paragraphs


def make_state(sources: list[Source]) -> ResearchState:
    state = ResearchState(query=QUESTION, llm_provider="openai", llm_model="gpt-4o")
    state.sub_queries.append(SubQuery(id="sq-00000001", query="lithium recovery rate recycling"))
    state.sources.extend(sources)
    return state


# --------------------------------------------------------------------------- 1. allocation


def mixed_sources(count: int, counter: TokenCounter, seed: int = 1) -> list[Source]:
    rng = random.Random(seed)
    sources = []
    for n in range(count):
        tokens = int(200 * (100 ** rng.random()))  # log-uniform, 200 to 20,000 tokens
        paragraphs = filler_text(rng, tokens, counter)
        if rng.random() < 0.5:
            paragraphs[rng.randrange(len(paragraphs))] += " " + KEY_TEMPLATES[0].format(
                n=n, p=rng.randint(50, 99)
            )
        sources.append(
            Source(
                id=f"src-{n:08x}",
                sub_query_id="sq-00000001",
                title=f"Report {n}",
                url=f"https://example.org/{n}",
                snippet="A report.",
                content="\n\n".join(paragraphs),
                score=rng.random(),
            )
        )
    return sources


async def bench_allocation(count: int, repeat: int) -> None:
    counter = CachedCounter(EstimateCounter())
    sources = mixed_sources(count, counter)
    total = sum(counter.count(s.content or "") for s in sources)
    budget = int(total * 0.2)
    items = [
        ContentItem(
            s.id, "source", counter.count(s.content or ""), overhead=40, relevance=s.score or 0
        )
        for s in sources
    ]
    alloc_times = []
    for _ in range(repeat):
        started = time.perf_counter()
        allocation = allocate(items, budget, allow_dropping=True)
        alloc_times.append(time.perf_counter() - started)
    fit_times = []
    for _ in range(repeat):
        state = make_state([s.model_copy() for s in sources])
        context = BenchContext(state, counter, budget)
        started = time.perf_counter()
        await fit_sources(
            context, prepare_round(context, state.sources), [s.id for s in state.sources], budget
        )
        fit_times.append(time.perf_counter() - started)
    levels: dict[str, int] = {}
    for level in allocation.levels.values():
        levels[level.value] = levels.get(level.value, 0) + 1
    print(f"1. Fitting {count} sources ({total:,} tokens) into a budget of {budget:,} tokens")
    print(
        f"   allocation only:            median {statistics.median(alloc_times) * 1000:7.1f} ms"
        f"  (target < 200 ms)  levels: {levels}"
    )
    print(
        f"   whole fit without LLM calls: median {statistics.median(fit_times) * 1000:7.1f} ms"
        "  (counting cached, allocation, passage selection of shortened sources)"
    )


# --------------------------------------------------------------------------- 2. counting


def bench_counting() -> None:
    rng = random.Random(3)
    paragraphs = [" ".join(rng.choice(FILLER) for _ in range(5)) for _ in range(5000)]
    text = "\n\n".join(paragraphs)
    megabytes = len(text.encode()) / 1e6
    print(
        f"2. Token counting throughput ({megabytes:.2f} MB of prose in {len(paragraphs)} passages)"
    )
    counters: list[tuple[str, TokenCounter]] = [("estimate (chars/3)", EstimateCounter())]
    if _load_encoding("o200k_base", timeout=5.0) is not None:
        counters.append(("tiktoken o200k_base", counter_for_model("gpt-4o").inner))
    else:
        print("   tiktoken: encoding o200k_base not loadable here (offline); the estimate is used")
    for name, counter in counters:
        started = time.perf_counter()
        tokens = sum(counter.count(p) for p in paragraphs)
        elapsed = time.perf_counter() - started
        print(
            f"   {name:26s} {megabytes / elapsed:9.1f} MB/s  {tokens / elapsed / 1e6:7.2f} M tok/s"
            f"  ({tokens:,} tokens, passage by passage)"
        )
    cached = CachedCounter(EstimateCounter())
    cached.count(text)
    started = time.perf_counter()
    for _ in range(100):
        cached.count(text)
    elapsed = (time.perf_counter() - started) / 100
    print(f"   {'cached recount (by hash)':26s} {megabytes / elapsed:9.1f} MB/s  (whole text)")


# --------------------------------------------------------------------------- 3. survival


def key_corpus(counter: TokenCounter) -> tuple[list[Source], dict[str, list[str]]]:
    rng = random.Random(11)
    sources, keys = [], {}
    for n in range(20):
        paragraphs = filler_text(rng, 5000, counter)
        placed = []
        for depth, template in zip((0.1, 0.5, 0.9), KEY_TEMPLATES, strict=True):
            sentence = template.format(n=n, p=rng.randint(50, 99), c=rng.randint(900, 4000))
            index = min(len(paragraphs) - 1, int(depth * len(paragraphs)))
            paragraphs[index] += " " + sentence
            placed.append(sentence)
        source = Source(
            id=f"src-{n:08x}",
            sub_query_id="sq-00000001",
            title=f"Recycling report {n}",
            url=f"https://example.org/report/{n}",
            snippet="Annual operations report.",
            content="\n\n".join(paragraphs),
            score=round(0.95 - n * 0.02, 2),
        )
        sources.append(source)
        keys[source.id] = placed
    return sources, keys


async def bench_survival() -> None:
    counter = CachedCounter(EstimateCounter())
    sources, keys = key_corpus(counter)
    corpus = sum(counter.count(s.content or "") for s in sources)
    print(
        f"3. Key sentences reaching the analysis prompt ({len(sources)} sources, "
        f"{corpus:,} tokens, key sentences at 10/50/90% depth)"
    )
    print("   budget  depth 10%  depth 50%  depth 90%  all    | equal head cut: all")
    for share in (1.0, 0.4, 0.1):
        budget = int(corpus * share) + 60 * len(sources)  # the <source> frames on top
        state = make_state([s.model_copy() for s in sources])
        context = BenchContext(state, counter, budget)
        fitted = await fit_sources(
            context, prepare_round(context, state.sources), [s.id for s in state.sources], budget
        )
        prompt = "\n\n".join(f.render() for f in fitted)
        found = [[sentence in prompt for sentence in keys[s.id]] for s in sources]
        by_depth = [sum(row[i] for row in found) / len(found) for i in range(3)]
        overall = sum(map(sum, found)) / (3 * len(found))
        per_source = int(len("".join(s.content or "" for s in sources)) * share / len(sources))
        head = " ".join((s.content or "")[:per_source] for s in sources)
        head_share = sum(k in head for s in sources for k in keys[s.id]) / (3 * len(sources))
        print(
            f"   {share:>5.0%}   {by_depth[0]:8.0%}   {by_depth[1]:8.0%}   {by_depth[2]:8.0%}"
            f"  {overall:5.0%}  | {head_share:5.0%}"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    await bench_allocation(args.sources, args.repeat)
    bench_counting()
    await bench_survival()


if __name__ == "__main__":
    asyncio.run(main())
