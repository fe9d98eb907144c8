"""Follow-up questions (``deep-research-ask``) through a real MCP client session: answered from
the completed research's saved sources, cited by the report's numbers with verbatim quotes,
without a new search; kept with the research, appended, and exported."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from foundry_mcp.config import Settings
from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.store.sqlite.store import ResearchStore
from foundry_mcp.server import create_server
from tests.e2e.conftest import call, run_to_end
from tests.fakes import FakeHTTPServer, ResearchBrain

pytestmark = pytest.mark.anyio

QUESTION = "How do heat pumps work in cold climates?"
# The fake corpus's pages say what share of practitioners consider the topic a priority...
ANSWERABLE = "What share of practitioners consider heat pumps a priority?"
# ...and nothing of this (the fake answerer finds none of its long words in any passage).
UNANSWERABLE = "What does the Martian tax code say about penguins?"


def _searches(tavily: FakeHTTPServer) -> int:
    return len(tavily.requests_to("/search")) + len(tavily.requests_to("/extract"))


def _stored(settings: Settings, research_id: str) -> ResearchState:
    store = ResearchStore(Path(settings.research.research_dir))
    try:
        state = store.load(research_id)
        store.load_pages(state)
        return state
    finally:
        store.close()


async def _completed(client: Client, **arguments: Any) -> str:
    started = await call(
        client, action="deep-research", query=QUESTION, max_iterations=1, **arguments
    )
    assert started["success"], started
    research_id = str(started["data"]["research_id"])
    assert (await run_to_end(client, research_id))["status"] == "completed"
    return research_id


async def _ask(client: Client, research_id: str, question: str) -> dict[str, Any]:
    asked = await call(client, action="deep-research-ask", research_id=research_id, query=question)
    assert asked["success"], asked
    data: dict[str, Any] = asked["data"]
    return data


async def _export(client: Client, research_id: str, fmt: str) -> str:
    done = await call(client, action="deep-research-export", research_id=research_id, format=fmt)
    assert done["success"], done
    return str(done["data"]["content"])


async def test_an_answer_cites_the_reports_sources_with_their_quotes_and_searches_nothing(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        research_id = await _completed(client)
        report = (await call(client, action="deep-research-report", research_id=research_id))[
            "data"
        ]
        checks_before = json.loads(await _export(client, research_id, "json"))["claim_checks"]
        searched, planned = _searches(tavily_server), brain.calls["planner"]

        answer = await _ask(client, research_id, ANSWERABLE)

        assert _searches(tavily_server) == searched  # no new search, no page fetched
        assert brain.calls["planner"] == planned and brain.calls["follow_up"] == 1
        status = (await call(client, action="deep-research-status", research_id=research_id))[
            "data"
        ]
        exported = json.loads(await _export(client, research_id, "json"))
    state = _stored(settings, research_id)

    assert answer["answerable"] is True and answer["status"] == "completed"
    assert status["status"] == "completed"  # the research keeps its status
    listed = {s["number"]: s for s in report["sources"]}  # the report's Sources list
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", answer["answer"])}
    assert numbers and numbers == {s["number"] for s in answer["sources"]}
    for source in answer["sources"]:
        assert source["in_report"] is True
        assert listed[source["number"]]["source_id"] == source["source_id"]
        assert listed[source["number"]]["url"] == source["url"]
    assert answer["verdicts"]["supported"] >= 1 and answer["verdicts"]["unsupported"] == 0
    assert answer["quotes"]
    by_id = state.source_by_id()
    for quote in answer["quotes"]:
        assert quote["source_id"] in {s["source_id"] for s in answer["sources"]}
        assert quote["number"] == listed[quote["number"]]["number"]
        stored = by_id[quote["source_id"]]
        assert quote["quote"] in (stored.content or "") or quote["quote"] in stored.snippet
    # One answer call and its fact-check, booked in the research's usage as the follow-up's.
    assert answer["usage"]["calls"] == 2 == brain.calls["follow_up"] + 1
    assert status["usage"]["by_phase"]["follow_up"]["calls"] == 2
    # The research's own claim checks are as they were.
    assert exported["claim_checks"] == checks_before
    assert [f["id"] for f in exported["follow_ups"]] == [answer["follow_up_id"]]
    assert "next_action" not in answer and "gap_id" not in answer
    assert not [gap for gap in state.gaps if gap.description == ANSWERABLE]


async def test_a_question_the_sources_cannot_answer_offers_to_continue_the_research(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        research_id = await _completed(client, mode="simple")
        searched = _searches(tavily_server)

        answer = await _ask(client, research_id, UNANSWERABLE)

        assert _searches(tavily_server) == searched
        assert answer["answerable"] is False
        assert "do not say" in answer["answer"] and answer["sources"] == []
        assert (
            "action='deep-research-resume'," in answer["next_action"]
            and f"research_id='{research_id}'" in answer["next_action"]
            and "max_iterations=2" in answer["next_action"]
        )
        gaps = [g for g in _stored(settings, research_id).gaps if g.id == answer["gap_id"]]
        assert [(g.description, g.addressed) for g in gaps] == [(UNANSWERABLE, False)]
        # What next_action names is accepted: the research goes on with the question.
        resumed = await call(
            client, action="deep-research-resume", research_id=research_id, max_iterations=2
        )
        assert resumed["success"], resumed
        assert (await run_to_end(client, research_id))["status"] == "completed"


async def test_a_research_not_completed_is_refused_and_keeps_its_status(
    settings: Settings, brain: ResearchBrain
) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        started = await call(
            client, action="deep-research", query=QUESTION, review_plan=True, clarify="off"
        )
        research_id = started["data"]["research_id"]
        assert (await run_to_end(client, research_id))["status"] == "waiting"

        refused = await call(
            client, action="deep-research-ask", research_id=research_id, query=ANSWERABLE
        )
        assert refused["success"] is False
        assert refused["data"]["error_code"] == "INVALID_STATE"
        assert "waiting" in refused["error"]
        assert "deep-research-resume" in refused["data"]["remediation"]
        status = await call(client, action="deep-research-status", research_id=research_id)
        assert status["data"]["status"] == "waiting"
        assert brain.calls["follow_up"] == 0

        empty = await call(client, action="deep-research-ask", research_id=research_id, query=" ")
        assert empty["data"]["error_code"] == "VALIDATION_ERROR"
        assert empty["data"]["field"] == "query"
        unknown = await call(
            client, action="deep-research-ask", research_id="deepres-000000000000", query="Why?"
        )
        assert unknown["data"]["error_code"] == "RESEARCH_NOT_FOUND"


async def test_follow_ups_are_appended_and_exported(settings: Settings) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        research_id = await _completed(client)
        first = await _ask(client, research_id, ANSWERABLE)
        second = await _ask(client, research_id, UNANSWERABLE)
        exported = json.loads(await _export(client, research_id, "json"))
        markdown = await _export(client, research_id, "markdown")

    assert (first["follow_ups"], second["follow_ups"]) == (1, 2)
    kept = exported["follow_ups"]
    assert [(f["id"], f["question"], f["answerable"]) for f in kept] == [
        (first["follow_up_id"], ANSWERABLE, True),
        (second["follow_up_id"], UNANSWERABLE, False),
    ]
    assert kept[0]["answer"] == first["answer"]
    assert kept[0]["sources"] == [
        {"source_id": s["source_id"], "number": s["number"]} for s in first["sources"]
    ]
    assert kept[0]["quotes"] == first["quotes"]
    body, section = markdown.split("\n## Follow-up questions\n", 1)
    assert "## Sources" in body  # the section follows the report
    assert section.index(f"### {ANSWERABLE}") < section.index(f"### {UNANSWERABLE}")
    assert first["answer"] in section
    source = first["sources"][0]
    assert f"[{source['number']}] " in section and source["url"] in section
    assert "*Cost:" in section.rsplit("\n---\n", 1)[1]  # the cost footer stays last
