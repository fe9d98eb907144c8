"""A question asked in German gets a German report: every writer of the report is told the
language; ``language`` overrides the question's; an English or unclear question asks nothing."""

from __future__ import annotations

import pytest
from mcp import Client

from foundry_mcp.config import Settings
from foundry_mcp.server import create_server
from tests.e2e.conftest import call, run_to_end
from tests.fakes import ResearchBrain

pytestmark = pytest.mark.anyio

GERMAN = "Wie lange pausiert der Garbage Collector von Go bei großen Heaps?"


async def _writer_prompts(
    settings: Settings, brain: ResearchBrain, **arguments: object
) -> tuple[dict, list[str]]:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        started = await call(client, action="deep-research", max_iterations=1, **arguments)
        assert started["success"], started
        final = await run_to_end(client, started["data"]["research_id"])
    assert final["status"] == "completed", final
    return final, [system for agent, system, _ in brain.history if agent == "writer"]


@pytest.mark.parametrize("mode", ["simple", "hierarchical"])
async def test_a_german_question_gets_a_german_report(
    settings: Settings, brain: ResearchBrain, mode: str
) -> None:
    final, writers = await _writer_prompts(settings, brain, query=GERMAN, mode=mode)
    assert final["language"] == "German"
    assert writers and all("Write the report in German" in system for system in writers)


async def test_language_overrides_the_question(settings: Settings, brain: ResearchBrain) -> None:
    final, writers = await _writer_prompts(settings, brain, query=GERMAN, language="fr")
    assert final["language"] == "French"
    assert all("Write the report in French" in system for system in writers)


async def test_an_unclear_question_asks_nothing_of_the_writer(
    settings: Settings, brain: ResearchBrain
) -> None:
    final, writers = await _writer_prompts(settings, brain, query="Postgres vs MySQL for OLTP")
    assert final["language"] is None
    assert writers and not any("Write the report in" in system for system in writers)


async def test_an_unknown_language_is_refused_at_start(settings: Settings) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        refused = await call(client, action="deep-research", query=GERMAN, language="Klingon")
        assert refused["data"]["error_code"] == "VALIDATION_ERROR"
        assert (
            "language" in refused["data"]["remediation"] or "(de)" in refused["data"]["remediation"]
        )
        listed = await call(client, action="deep-research-list")
        assert listed["data"]["items"] == []
