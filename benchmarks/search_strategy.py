"""The two search strategies: the priority order with fallback, against every provider at once.

One comparison question ("Compare Redis, Memcached, Hazelcast and Aerospike for session
caching", simple mode) is researched against three search providers, Tavily, Google and
Semantic Scholar, each a loopback fake with 0.3 s of latency (the LLM: 0.4 s + 5 ms per output
token; see ``benchmarks/simulated.py``). The facts are planted (``tests/fakes/planted.py``):
six pages per item, three fact sentences each (``FACT-<item>-<n>``). The providers overlap the
way real ones do:

- Tavily finds pages 1-4 of each item, with their text;
- Google finds pages 3-5, with a one-sentence snippet; their pages are read from a fake site
  (pages 3 and 4 are Tavily's under another address: the same title, so they are one source);
- Semantic Scholar finds pages 5-6 as papers, whose abstracts hold their facts.

Three runs, all with ``deep_research_providers = ["tavily", "google", "semantic_scholar"]``:

1. ``priority`` (the default): each search goes to Tavily, and to the next provider only when
   Tavily fails or finds nothing;
2. ``all``: each search goes to all three at once, their results merged;
3. ``priority`` with Tavily's plan limit used up from the start (HTTP 432): the searches fall
   back to Google.

For each it prints wall time, the searches sent to each provider, LLM calls, prompt tokens, the
planted facts the searches brought in and the share of all planted facts the report holds.
About a minute and a half; run from the repository root:

    python benchmarks/search_strategy.py [--iterations 2]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.simulated import research_to_end, search_delay, simulate_latency
from foundry_mcp.config import Settings, load_settings
from foundry_mcp.runtime import research_runtime
from tests.fakes import (
    FakeHTTPServer,
    FakeResponse,
    RecordedRequest,
    ResearchBrain,
    article_html,
    fake_google,
    fake_openai,
    fake_pages,
    fake_tavily,
    html_page,
    slugify,
)
from tests.fakes.planted import PlantedCorpus, fact_analyst, facts_in

ITEMS = ("Redis", "Memcached", "Hazelcast", "Aerospike")
TOPIC = "session caching"
QUESTION = f"Compare {', '.join(ITEMS[:-1])} and {ITEMS[-1]} for {TOPIC}"
PAGES_PER_ITEM = 6
TAVILY_PAGES = range(1, 5)
GOOGLE_PAGES = range(3, 6)
SCHOLAR_PAGES = range(5, 7)
USAGE_LIMIT = "This request exceeds your plan's set usage limit. Please upgrade your plan."
SEARCH_PATHS = {
    "tavily": "/search",
    "google": "/customsearch/v1",
    "semantic_scholar": "/graph/v1/paper/search",
}


def page_number(page: dict[str, Any]) -> int:
    return int(str(page["url"]).rsplit("/", 1)[-1])


class World:
    """The planted corpus as each provider and the fake site show it."""

    def __init__(self) -> None:
        self.corpus = PlantedCorpus(ITEMS, TOPIC, pages_per_item=PAGES_PER_ITEM)
        self.site: FakeHTTPServer | None = None

    def found(self, query: str, pages: range) -> list[dict[str, Any]]:
        return [p for p in self.corpus(query) if page_number(p) in pages]

    def tavily(self, query: str) -> list[dict[str, Any]]:
        return self.found(query, TAVILY_PAGES)

    def google(self, query: str) -> list[dict[str, Any]]:
        assert self.site is not None
        path = self.site_path
        return [
            {"title": p["title"], "link": self.site.base_url + path(p), "snippet": p["content"]}
            for p in self.found(query, GOOGLE_PAGES)
        ]

    def scholar(self, request: RecordedRequest) -> FakeResponse:
        query = (request.query.get("query") or [""])[0]
        limit = int((request.query.get("limit") or ["10"])[0])
        papers = [
            {
                "paperId": slugify(p["url"]),
                "title": p["title"].replace("field report", "a measurement study"),
                "abstract": p["raw_content"],
                "externalIds": {"DOI": f"10.5555/{slugify(p['url'])}"},
                "year": 2024,
                "venue": "Journal of Caching",
                "citationCount": 12,
                "authors": [{"name": "A. Author"}],
            }
            for p in self.found(query, SCHOLAR_PAGES)[:limit]
        ]
        return FakeResponse(json={"total": len(papers), "offset": 0, "data": papers})

    @staticmethod
    def site_path(page: dict[str, Any]) -> str:
        return "/" + str(page["url"]).split("://", 1)[1].split("/", 1)[1]

    def serve_pages(self, site: FakeHTTPServer) -> None:
        self.site = site
        for pages in self.corpus.pages.values():
            for page in pages:
                sentences = page["raw_content"].split(". ")
                markup = article_html(page["title"], [s.rstrip(".") + "." for s in sentences])
                site.route("GET", self.site_path(page), lambda _r, m=markup: html_page(m))


def settings_for(
    tmp: Path, strategy: str, llm: FakeHTTPServer, servers: dict[str, FakeHTTPServer]
) -> Settings:
    config = tmp / "foundry-mcp.toml"
    config.write_text(
        "[research]\n"
        'deep_research_providers = ["tavily", "google", "semantic_scholar"]\n'
        f'deep_research_search_strategy = "{strategy}"\n\n'
        "[research.fetch]\nallow_private_networks = true\n\n"
        + "".join(f"[providers.{name}]\nmax_retries = 0\n\n" for name in ("openai", *servers))
    )
    env = {
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp / "research"),
        "FOUNDRY_MCP_NO_DOWNLOADS": "1",
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": llm.base_url + "/v1",
        "TAVILY_API_KEY": "tvly-bench",
        "TAVILY_BASE_URL": servers["tavily"].base_url,
        "GOOGLE_API_KEY": "g-bench",
        "GOOGLE_CSE_ID": "cx-bench",
        "GOOGLE_CSE_BASE_URL": servers["google"].base_url,
        "SEMANTIC_SCHOLAR_BASE_URL": servers["semantic_scholar"].base_url,
    }
    return load_settings(env=env, cwd=tmp, home=tmp)


@dataclass
class Run:
    label: str
    wall: float
    status: str
    searches: dict[str, int]
    search_calls: int
    llm_calls: int
    prompt_tokens: int
    sources: int
    facts_found: set[str]
    facts_reported: set[str]


async def research_once(label: str, strategy: str, iterations: int, tavily_spent: bool) -> Run:
    world = World()
    brain = ResearchBrain()
    brain.overrides["analyzer"] = fact_analyst(brain)
    scholar = FakeHTTPServer()
    scholar.route("GET", SEARCH_PATHS["semantic_scholar"], world.scholar)
    with (
        fake_openai(brain) as llm,
        fake_tavily(world.tavily) as tavily,
        fake_google(world.google) as google,
        scholar.start(),
        fake_pages() as site,
        tempfile.TemporaryDirectory(prefix="search-strategy-") as tmp,
    ):
        world.serve_pages(site)
        simulate_latency(llm, tavily)
        google.delay = scholar.delay = search_delay
        if tavily_spent:
            tavily.fail_next(432, times=10_000, json={"detail": {"error": USAGE_LIMIT}})
        servers = {"tavily": tavily, "google": google, "semantic_scholar": scholar}
        settings = settings_for(Path(tmp), strategy, llm, servers)
        async with research_runtime(settings) as service:
            wall, status, state = await research_to_end(
                service, QUESTION, mode="simple", max_iterations=iterations
            )
        texts = " ".join(f"{s.snippet} {s.content or ''}" for s in state.sources)
        return Run(
            label=label,
            wall=wall,
            status=status["status"],
            searches={name: len(s.requests_to(SEARCH_PATHS[name])) for name, s in servers.items()},
            search_calls=state.search_calls,
            llm_calls=len(llm.requests_to("/v1/chat/completions")),
            prompt_tokens=status["usage"]["total"]["input_tokens"],
            sources=len(state.sources),
            facts_found=facts_in(texts),
            facts_reported=facts_in(state.report),
        )


def show(run: Run, planted: int) -> None:
    per_provider = ", ".join(f"{name} {count}" for name, count in run.searches.items())
    print(f"== {run.label}")
    print(f"wall time:              {run.wall:.2f} s ({run.status})")
    print(f"search calls:           {run.search_calls} ({per_provider})")
    print(f"LLM calls:              {run.llm_calls}")
    print(f"prompt tokens:          {run.prompt_tokens}")
    print(f"sources:                {run.sources}")
    print(f"planted facts found:    {len(run.facts_found)} of {planted}")
    share = len(run.facts_reported) / planted
    print(f"facts in the report:    {len(run.facts_reported)} of {planted} ({share:.0%})")


async def run(args: argparse.Namespace) -> None:
    planted = len(World().corpus.facts)
    print(f"question: {QUESTION} (simple mode, max_iterations={args.iterations})")
    print(
        f"planted:  {planted} facts; Tavily pages {TAVILY_PAGES.start}-{TAVILY_PAGES.stop - 1}, "
        f"Google {GOOGLE_PAGES.start}-{GOOGLE_PAGES.stop - 1}, Semantic Scholar "
        f"{SCHOLAR_PAGES.start}-{SCHOLAR_PAGES.stop - 1} of each item's {PAGES_PER_ITEM}"
    )
    runs = []
    for label, strategy, spent in (
        ("priority (default)", "priority", False),
        ("all", "all", False),
        ("priority, Tavily's plan limit used up", "priority", True),
    ):
        runs.append(await research_once(label, strategy, args.iterations, spent))
        show(runs[-1], planted)
    priority, every = runs[0], runs[1]
    print(
        f"== all / priority: search calls {every.search_calls / priority.search_calls:.2f}x, "
        f"prompt tokens {every.prompt_tokens / priority.prompt_tokens:.2f}x, facts in the report "
        f"{len(every.facts_reported)} / {len(priority.facts_reported)}"
    )


def main() -> None:
    logging.getLogger("foundry_mcp").setLevel(logging.ERROR)  # the failed searches are counted
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2, help="max_iterations of each run")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
