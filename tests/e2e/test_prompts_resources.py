"""The prompts and resources through a real MCP client session, in-process and over stdio."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent, TextResourceContents

from foundry_mcp.config import Settings
from foundry_mcp.server import create_server
from tests.e2e.conftest import call, editor_stdio, run_to_end
from tests.fakes import FakeHTTPServer
from tests.support import served_urls

# The tool's guide and result schemas, always listed before the recent reports.
GUIDES = ["research://help", "research://schemas"]

pytestmark = pytest.mark.anyio

UNKNOWN_ID = "deepres-000000000000"


def _client(settings: Settings) -> Client:
    return Client(create_server(lambda: settings), mode="legacy")


async def _read(client: Client, uri: str) -> str:
    content = (await client.read_resource(uri)).contents[0]
    assert isinstance(content, TextResourceContents)
    return content.text


async def _prompt_text(client: Client, name: str, **arguments: str) -> str:
    result = await client.get_prompt(name, arguments)
    assert len(result.messages) == 1 and result.messages[0].role == "user"
    content = result.messages[0].content
    assert isinstance(content, TextContent)
    return content.text


async def test_prompts_are_listed_with_their_arguments(settings: Settings) -> None:
    async with _client(settings) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == {"deep_research", "research_followup"}
    arguments = {
        name: {(a.name, a.required) for a in prompt.arguments or []}
        for name, prompt in prompts.items()
    }
    assert arguments == {
        "deep_research": {("question", True), ("effort", False)},
        "research_followup": {("research_id", True), ("question", False)},
    }
    assert all(p.description for p in prompts.values())
    assert all(a.description for p in prompts.values() for a in p.arguments or [])


async def test_deep_research_prompt_renders_the_question_and_effort(settings: Settings) -> None:
    async with _client(settings) as client:
        plain = await _prompt_text(client, "deep_research", question="How do CRDTs merge?")
        deep = await _prompt_text(
            client, "deep_research", question="How do CRDTs merge?", effort=" Deep "
        )
        with pytest.raises(MCPError, match="effort must be one of quick, standard, deep"):
            await client.get_prompt("deep_research", {"question": "x", "effort": "huge"})
    assert "How do CRDTs merge?" in plain
    assert 'action="deep-research"' in plain and "wait=true" in plain
    assert 'action="deep-research-report"' in plain
    assert "effort" not in plain
    assert 'effort="deep"' in deep


async def test_followup_prompt_continues_or_answers_from_the_report(settings: Settings) -> None:
    async with _client(settings) as client:
        bare = await _prompt_text(client, "research_followup", research_id="deepres-abc")
        asked = await _prompt_text(
            client, "research_followup", research_id="deepres-abc", question="And Yjs?"
        )
    for text in (bare, asked):
        assert 'action="deep-research-resume", research_id="deepres-abc"' in text
        assert 'action="deep-research-report"' in text
    assert "And Yjs?" in asked and "And Yjs?" not in bare
    assert "summarise" in bare


async def test_sources_events_and_listed_reports_after_a_research(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    async with _client(settings) as client:
        templates = {
            t.uri_template: t for t in (await client.list_resource_templates()).resource_templates
        }
        assert set(templates) >= {
            f"research://{{research_id}}/{part}"
            for part in ("report", "claims", "sources", "events")
        }
        assert templates["research://{research_id}/sources"].mime_type == "application/json"
        assert [str(r.uri) for r in (await client.list_resources()).resources] == GUIDES

        query = (
            "How do CRDTs merge concurrent edits in collaborative editors, and at what cost? " * 2
        )
        started = await call(client, action="deep-research", query=query, max_iterations=1)
        research_id = started["data"]["research_id"]
        assert (await run_to_end(client, research_id))["status"] == "completed"
        report = (await call(client, action="deep-research-report", research_id=research_id))[
            "data"
        ]

        sources = json.loads(await _read(client, f"research://{research_id}/sources"))
        events = json.loads(await _read(client, f"research://{research_id}/events"))
        paged = await call(
            client, action="deep-research-events", research_id=research_id, limit=500
        )
        listed = [r for r in (await client.list_resources()).resources if str(r.uri) not in GUIDES]

    assert sources["research_id"] == research_id and sources["status"] == "completed"
    items = sources["sources"]
    assert sources["total"] == len(items) > sources["cited"] > 0
    cited = [s for s in items if s["cited"]]
    # The cited ones come first, as the report numbers them; the rest carry no number.
    assert items[: len(cited)] == cited
    assert [{k: s[k] for k in ("number", "source_id", "title", "url")} for s in cited] == report[
        "sources"
    ]
    assert all(s["number"] is None for s in items[len(cited) :])
    assert {s["url"] for s in items} <= served_urls(tavily_server)
    assert all(s["provider"] and s["quality"] for s in items)

    assert events["research_id"] == research_id
    assert events["events"] == paged["data"]["events"]
    assert events["events"][0]["kind"] == "created"
    assert events["events"][-1]["kind"] == "run_ended"

    [resource] = listed
    assert str(resource.uri) == f"research://{research_id}/report"
    assert resource.mime_type == "text/markdown"
    assert resource.name == query.strip()[:79] + "…"


async def test_unknown_research_is_a_resource_error(settings: Settings) -> None:
    async with _client(settings) as client:
        refused = await call(client, action="deep-research-status", research_id=UNKNOWN_ID)
        message = refused["error"]
        for part in ("report", "claims", "sources", "events"):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(f"research://{UNKNOWN_ID}/{part}")
            assert message in raised.value.error.message


@pytest.mark.stdio
async def test_prompts_and_resources_over_stdio(research_env: dict[str, str]) -> None:
    async with editor_stdio(research_env) as client:
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == {"deep_research", "research_followup"}
        text = await _prompt_text(client, "deep_research", question="What is a bloom filter?")
        assert "What is a bloom filter?" in text

        started = await call(client, action="deep-research", query="What is a bloom filter?")
        research_id = started["data"]["research_id"]
        await run_to_end(client, research_id)
        sources = json.loads(await _read(client, f"research://{research_id}/sources"))
        assert sources["cited"] > 0
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert listed == [*GUIDES, f"research://{research_id}/report"]
