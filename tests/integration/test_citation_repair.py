"""A true sentence that cites the wrong source is re-cited, not removed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from foundry_mcp.config import load_settings
from foundry_mcp.runtime import research_runtime
from tests.fakes import ResearchBrain, fake_tavily
from tests.fakes.planted import PlantedCorpus, fact_analyst, facts_in
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "Compare Redis and Memcached for session caching"


async def test_miscited_facts_stay_in_the_report_cited_to_a_source_that_says_them(
    research_env: dict[str, str], brain: ResearchBrain
) -> None:
    brain.overrides["analyzer"] = fact_analyst(brain)
    brain.miscite_every = 3  # every third sentence the writer states cites the wrong source
    brain.check_figures = True  # a figure of another page's sentence does not back it
    corpus = PlantedCorpus(["Redis", "Memcached"], "session caching", pages_per_item=2)
    with fake_tavily(corpus) as tavily:
        env = {**research_env, "TAVILY_BASE_URL": tavily.base_url}
        settings = load_settings(env=env, cwd=Path(env["HOME"]), home=Path(env["HOME"]))
        async with research_runtime(settings, warm=False) as service:
            started = await service.start(QUESTION, mode="simple", max_iterations=1)
            status = await wait_until(service, started["research_id"], TERMINAL)
            state = service.store.load(started["research_id"])
            service.store.load_pages(state)
            events = (await service.events(started["research_id"], limit=500))["events"]
    assert status["status"] == "completed", status["error"]
    assert brain.miscited, "the writer cited no fact wrongly: the test proves nothing"
    report = state.report or ""
    metadata = state.report_metadata
    assert metadata is not None and metadata.verification is not None

    found = facts_in("\n".join(f.content for f in state.findings))
    assert found and found <= facts_in(report)  # nothing the analysis found was lost
    by_number = dict(enumerate(metadata.cited_source_ids, start=1))
    sources = state.source_by_id()
    body = report.split("\n## Evidence Quality\n", 1)[0]
    for line in body.splitlines():
        for tag in facts_in(line):
            numbers = [int(n) for n in re.findall(r"\[(\d+)\]", line)]
            backing = [sources[by_number[n]].content or "" for n in numbers if n in by_number]
            assert any(tag in text for text in backing), (tag, line)

    repaired = metadata.verification.repaired
    assert repaired >= 1 and metadata.verification.removed == 0
    assert len([e for e in events if e["kind"] == "citation_repaired"]) == repaired
    assert f"Citations repaired: {repaired}" in report
    assert sum(1 for check in state.claim_checks if check.repaired_from) == repaired
