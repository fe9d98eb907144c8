"""Deepening one part of a completed hierarchical research: only that part is searched, only
the pages it finds are read, and its facts join that part of the report.

The corpus: a comparison of three caches, each with its own pages (a query naming one cache
finds that cache's pages only). After the research, a page about Valkey appears; deepening the
Valkey sub-question finds it and reads nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.errors import InputError
from foundry_mcp.research.models import ResearchState, RevisionKind
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_tavily
from tests.fakes.brain import SOURCE_TEXT_RE
from tests.fakes.planted import PlantedCorpus, fact_analyst, facts_in, names
from tests.support import TERMINAL, searched_queries, wait_until

pytestmark = pytest.mark.anyio

ITEMS = ("Valkey", "Memcached", "Hazelcast")
QUESTION = "Compare Valkey, Memcached and Hazelcast for eviction latency"
LATER_FACT = "FACT-Valkey-99"
LATER_URL = "https://reports.example.com/valkey/later"


class GrowingCorpus(PlantedCorpus):
    """The planted caches' pages, and pages published later (``later``), which a query
    naming their cache alone finds after the others."""

    def __init__(self) -> None:
        super().__init__(ITEMS, "eviction latency", pages_per_item=2, facts_per_page=2)
        self.later: dict[str, list[dict[str, Any]]] = {}

    def publish_later_page(self) -> None:
        sentence = (
            f"{LATER_FACT}: Valkey kept its p99 eviction latency at 41 microseconds with "
            "eight threads in the 2026 replay test."
        )
        self.later["Valkey"] = [
            {
                "title": "Valkey eviction latency: the 2026 replay test",
                "url": LATER_URL,
                "content": sentence,
                "raw_content": sentence,
                "facts": [LATER_FACT],
            }
        ]

    def __call__(self, query: str) -> list[dict[str, Any]]:
        found = super().__call__(query)
        named = [item for item in self.items if names(query, item)]
        if len(named) == 1:
            found += [
                {key: page[key] for key in self.RESULT_KEYS} | {"score": 0.5}
                for page in self.later.get(named[0], [])
            ]
        return found


@pytest.fixture
def corpus() -> GrowingCorpus:
    return GrowingCorpus()


@pytest.fixture
def tavily_server(corpus: GrowingCorpus) -> Iterator[FakeHTTPServer]:
    with fake_tavily(corpus) as server:
        yield server


@pytest.fixture
def careful(brain: ResearchBrain) -> ResearchBrain:
    """The analyst makes a finding of every fact it reads."""
    brain.overrides["analyzer"] = fact_analyst(brain)
    return brain


async def researched(service: ResearchService) -> str:
    started = await service.start(QUESTION, mode="hierarchical", max_iterations=1)
    status = await wait_until(service, started["research_id"], TERMINAL, timeout=90)
    assert status["status"] == "completed", status["error"]
    return str(started["research_id"])


async def deepened(service: ResearchService, research_id: str, **asked: Any) -> ResearchState:
    await service.revise(research_id, {"kind": "deepen", **asked})
    status = await wait_until(service, research_id, TERMINAL, timeout=90)
    assert status["status"] == "completed", status["error"]
    state = service.store.load(research_id)
    service.store.load_pages(state)
    return state


async def test_deepening_one_part_searches_and_reads_only_for_that_part(
    settings: Settings,
    careful: ResearchBrain,
    corpus: GrowingCorpus,
    tavily_server: FakeHTTPServer,
) -> None:
    async with research_runtime(settings, warm=False) as service:
        research_id = await researched(service)
        before = service.store.load(research_id)
        valkey = next(sq for sq in before.sub_questions if "Valkey" in sq.question)
        corpus.publish_later_page()
        searched_before = len(searched_queries(tavily_server))
        asked_before = len(careful.history)
        state = await deepened(service, research_id, part=valkey.id)

    # Searched: for the Valkey part only, within a deepen's few searches.
    queries = searched_queries(tavily_server)[searched_before:]
    assert 1 <= len(queries) <= 3, queries
    for query in queries:
        assert names(query, "Valkey") and not any(names(query, i) for i in ITEMS[1:]), query
    # Read: the new page only; not one sentence of the pages the research had read.
    asked = careful.history[asked_before:]
    analysts = [user for agent, _, user in asked if agent == "analyzer"]
    assert analysts, [agent for agent, _, _ in asked]
    later = next(s for s in state.sources if s.url == LATER_URL)
    blocks = [block for user in analysts for block in SOURCE_TEXT_RE.findall(user)]
    assert {source_id for source_id, _ in blocks} == {later.id}
    assert LATER_FACT in blocks[0][1]
    old_facts = {tag for pages in corpus.pages.values() for page in pages for tag in page["facts"]}
    assert not facts_in(" ".join(analysts)) & old_facts
    assert {agent for agent, _, _ in asked} <= {"analyzer", "writer", "verifier"}
    # What it found belongs to the Valkey part, in the evidence and in the report.
    assert later.branches == [valkey.id] and later.iteration == before.iteration + 1
    found = [f for f in state.findings if LATER_FACT in f.content]
    assert len(found) == 1 and found[0].sub_question_id == valkey.id
    assert found[0].id in next(sq for sq in state.sub_questions if sq.id == valkey.id).finding_ids
    version = state.versions[-1]
    assert version.kind is RevisionKind.DEEPEN and version.changes is not None
    assert version.changes.new_source_ids == [later.id]
    assert version.changes.new_finding_ids == [found[0].id]
    assert LATER_FACT in (state.report or "")
    # The rest of the evidence is what it was.
    assert {f.id for f in before.findings} <= {f.id for f in state.findings}
    assert len(state.sources) == len(before.sources) + 1


async def test_a_part_that_names_nothing_is_refused_before_anything_runs(
    settings: Settings, careful: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        research_id = await researched(service)
        searched_before = len(searched_queries(tavily_server))
        with pytest.raises(InputError) as refused:
            await service.revise(research_id, {"kind": "deepen", "part": "sqn-deadbeef"})
        state = service.store.load(research_id)
    assert all(sq.id in refused.value.remediation for sq in state.sub_questions)
    assert len(searched_queries(tavily_server)) == searched_before
    assert state.revision is None and state.status.value == "completed"
