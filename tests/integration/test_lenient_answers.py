"""A model that mistypes one optional field of every answer costs that field, not the answers.

A comparison researched in hierarchical mode: every search naming a cache finds that cache's
pages, whose every sentence is a planted fact, and a careful analyst makes a finding of each
fact, naming the part of the question it answers. A sloppy analyst, as small local models are,
writes those parts as an object instead of a list of ids in every answer: the report keeps every
fact it keeps with the careful analyst, and no finding is the analyst's raw JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import ResearchState
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_tavily
from tests.fakes.planted import PlantedCorpus, fact_analyst, facts_in
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

ITEMS = ("Valkey", "Memcached", "Hazelcast")
QUESTION = "Compare Valkey, Memcached and Hazelcast for eviction latency"


@pytest.fixture
def tavily_server() -> Iterator[FakeHTTPServer]:
    corpus = PlantedCorpus(ITEMS, "eviction latency", pages_per_item=2, facts_per_page=2)
    with fake_tavily(corpus) as server:
        yield server


def parts_as_an_object(analyst: Callable[[str, str], str]) -> Callable[[str, str], str]:
    """``analyst`` with every finding's ``parts`` written as an object, not a list of ids."""

    def sloppy(system: str, user: str) -> str:
        answer: dict[str, Any] = json.loads(analyst(system, user))
        for finding in answer["findings"]:
            finding["parts"] = {"ids": finding.get("parts", [])}
        return json.dumps(answer)

    return sloppy


async def research(settings: Settings) -> tuple[ResearchState, list[dict[str, Any]]]:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, mode="hierarchical", max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=60)
        assert status["status"] == "completed", status["error"]
        events: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await service.events(started["research_id"], cursor=cursor, limit=500)
            events += page["events"]
            if (cursor := page["next_cursor"]) is None:
                return service.store.load(started["research_id"]), events


async def test_a_mistyped_field_in_every_analyst_answer_keeps_every_fact(
    settings: Settings, brain: ResearchBrain
) -> None:
    careful = fact_analyst(brain)
    brain.overrides["analyzer"] = careful
    well_typed, _ = await research(settings)
    kept = facts_in(well_typed.report)
    assert len(kept) >= 6, kept  # the careful analyst's report: what the other must match

    brain.overrides["analyzer"] = parts_as_an_object(careful)
    mistyped, events = await research(settings)
    assert facts_in(mistyped.report) == kept
    findings = [f.content for f in mistyped.findings]
    assert facts_in(" ".join(findings)) >= kept
    assert not [text for text in findings if '"findings"' in text or text.startswith("{")]
    assert not [d for d in mistyped.decisions if d.action == "fallback"]
    partly = [e for e in events if e["kind"] == "answer_partly_read"]
    assert partly and all("findings[0].parts" in e["data"]["dropped"] for e in partly)
