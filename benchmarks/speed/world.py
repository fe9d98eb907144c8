"""The world of the speed benchmark: documentation pages, careful fake models, simulated latency,
and which research each provider request served.

Eight comparisons of three dotted names of the Python standard library (``tests/fakes/docpages.py``:
pages of 20-400 KB of Markdown or reST with code, tables and prose, facts planted at 5%, 50%, 90%
and 98% depth, some only in a snippet). One Tavily fake serves every question's pages; one
OpenAI fake answers for every research with the careful fakes of ``benchmarks/docpages/runs.py``
(an analyst that makes a finding of every fact sentence it is shown, a writer that restates
every finding). Latency: LLM 0.4 s + 5 ms per output token, search 0.3 s
(``benchmarks/simulated.py``). A request is attributed to the research whose question (or one
of whose dotted names) it holds: every prompt carries the research's question, every search
names a part of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.docpages.runs import careful_brain
from benchmarks.simulated import llm_delay, search_delay
from tests.fakes import Exchange, FakeHTTPServer, ResearchBrain, fake_openai, fake_tavily
from tests.fakes.docpages import DOC_QUESTIONS, DocCorpus, DocQuestion


class Library:
    """Every question's pages behind one search service (a query finds the pages of the
    question whose names it holds)."""

    def __init__(self, corpora: Sequence[DocCorpus]) -> None:
        self.corpora = list(corpora)

    def corpus_of(self, text: str) -> DocCorpus | None:
        lowered = text.lower()
        for corpus in self.corpora:
            if corpus.question.text.lower() in lowered:
                return corpus
        for corpus in self.corpora:
            if any(item.lower() in lowered for item in corpus.question.items):
                return corpus
        return None

    def __call__(self, query: str) -> list[dict[str, Any]]:
        corpus = self.corpus_of(query)
        return corpus(query) if corpus is not None else []


@dataclass
class World:
    """The fakes of one run and the corpora they serve."""

    llm: FakeHTTPServer
    search: FakeHTTPServer
    brain: ResearchBrain
    library: Library

    def exchanges_by_question(self) -> dict[str, list[tuple[str, Exchange]]]:
        """The requests the fakes answered (("llm" or "search", exchange)), by the text of the
        question each served; each request is read once."""
        found: dict[str, list[tuple[str, Exchange]]] = {}
        for kind, server in (("llm", self.llm), ("search", self.search)):
            for exchange in list(server.exchanges):
                body = exchange.request.json
                corpus = self.library.corpus_of(json.dumps(body) if body is not None else "")
                if corpus is not None:
                    found.setdefault(corpus.question.text, []).append((kind, exchange))
        return found

    def reset(self) -> None:
        """Forget what the fakes recorded (a new scenario attributes only its own requests)."""
        self.llm.reset()
        self.search.reset()
        self.brain.history.clear()

    def prompts_by_question(self, agent: str) -> dict[str, list[str]]:
        """The user prompts one agent sent, by the text of the question each served."""
        found: dict[str, list[str]] = {}
        for who, system, user in list(self.brain.history):
            corpus = self.library.corpus_of(system + "\n" + user) if who == agent else None
            if corpus is not None:
                found.setdefault(corpus.question.text, []).append(user)
        return found


def questions(count: int) -> list[DocQuestion]:
    return list(DOC_QUESTIONS[:count])


@contextmanager
def world(count: int, pages: int, seed: int) -> Iterator[World]:
    """The fakes, with the simulated latency, serving ``count`` questions' pages."""
    library = Library([DocCorpus(q, pages_per_item=pages, seed=seed) for q in questions(count)])
    brain = careful_brain()
    with fake_openai(brain) as llm, fake_tavily(library) as search:
        llm.delay = llm_delay
        search.delay = search_delay
        yield World(llm, search, brain, library)


def environment(
    tmp: Path, world: World, code: Path | None, research: Sequence[str] = ()
) -> dict[str, str]:
    """A server's environment against the fakes: its own home, store and configuration (no
    page fetching, no SDK retries, no cap on calls in flight, ``research``: lines of its
    ``[research]`` table), and the ``src`` of the code to run when not this one."""
    config = tmp / "foundry-mcp.toml"
    # The fakes take any number of requests at once: the providers' capacity (8 calls in
    # flight each by default) is not what is measured, so it is set out of the way.
    config.write_text(
        "[research.fetch]\nenabled = false\n\n"
        "[providers.openai]\nmax_retries = 0\nmax_in_flight = 100\n\n"
        "[providers.tavily]\nmax_retries = 0\nmax_in_flight = 100\n"
        + ("\n[research]\n" + "\n".join(research) + "\n" if research else "")
    )
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return {
        **({"PYTHONPATH": str(code)} if code else {}),
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp / "research"),
        "FOUNDRY_MCP_NO_DOWNLOADS": "1",
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": world.llm.base_url + "/v1",
        "TAVILY_API_KEY": "tvly-bench",
        "TAVILY_BASE_URL": world.search.base_url,
    }
