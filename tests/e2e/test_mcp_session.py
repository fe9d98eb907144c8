"""The research tool through a real MCP client session, in-process (the protocol Claude Code speaks)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextResourceContents

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.server import create_server
from foundry_mcp.server.arguments import ACTION_PARAMS
from tests.e2e.conftest import call, run_to_end
from tests.fakes import FakeHTTPServer
from tests.support import assert_citations_resolve, served_urls

pytestmark = pytest.mark.anyio


def _client(settings: Settings) -> Client:
    return Client(create_server(lambda: settings), mode="legacy")


async def test_whole_research_through_mcp(
    settings: Settings, tavily_server: FakeHTTPServer
) -> None:
    async with _client(settings) as client:
        started = await call(
            client, action="deep-research", query="How do CRDTs merge edits?", max_iterations=2
        )
        assert started["success"], started
        research_id = started["data"]["research_id"]
        assert research_id.startswith("deepres-") and len(research_id) == 20
        assert started["meta"]["request_id"] and started["meta"]["version"]

        final = await run_to_end(client, research_id)
        assert final["status"] == "completed", final
        assert final["progress"]["findings"] >= 2
        assert final["usage"]["total"]["output_tokens"] > 0

        report = await call(client, action="deep-research-report", research_id=research_id)
        assert report["success"], report
        data = report["data"]
        assert data["summary"]
        assert data["total_chars"] == len(data["report"])  # small report: one page
        cited = assert_citations_resolve(data["report"], served_urls(tavily_server))
        # The default answer stays well under the ~10k tokens clients accept without warning.
        assert len(str(report)) < 30_000
        log = data["decision_log"]
        assert log["by_action"]["evaluate_phase"] >= 5
        assert any(d["action"] == "decide_iteration" for d in log["key_decisions"])
        assert final["recent_decisions"] and final["recent_decisions"][-1]["agent"] == "supervisor"
        assert [s["number"] for s in data["sources"]] == cited

        resource = await client.read_resource(f"research://{research_id}/report")
        content = resource.contents[0]
        assert isinstance(content, TextResourceContents)
        assert content.text == data["report"]

        listed = await call(client, action="deep-research-list")
        assert [i["research_id"] for i in listed["data"]["items"]] == [research_id]


async def test_report_pages_cover_the_whole_report(settings: Settings) -> None:
    async with _client(settings) as client:
        started = await call(client, action="deep-research", query="What is a B-tree?")
        research_id = started["data"]["research_id"]
        await run_to_end(client, research_id)
        full = (await call(client, action="deep-research-report", research_id=research_id))["data"][
            "report"
        ]
        pages, offset = [], 0
        while offset is not None:
            page = await call(
                client,
                action="deep-research-report",
                research_id=research_id,
                offset=offset,
                max_chars=1000,
            )
            pages.append(page["data"]["report"])
            offset = page["data"]["next_offset"]
        assert len(pages) > 1
        assert "".join(pages) == full


async def test_start_returns_at_once_while_the_llm_is_slow(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 5.0
    async with _client(settings) as client:
        before = time.perf_counter()
        started = await call(client, action="deep-research", query="What is RAFT consensus?")
        elapsed = time.perf_counter() - before
        assert started["success"]
        assert elapsed < 1.0, f"start took {elapsed:.2f}s"
        # Status does not block on the running research either.
        before = time.perf_counter()
        status = await call(
            client, action="deep-research-status", research_id=started["data"]["research_id"]
        )
        assert time.perf_counter() - before < 0.5
        assert status["data"]["status"] in ("queued", "running")


async def test_cancel_and_delete_through_mcp(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 2.0
    async with _client(settings) as client:
        started = await call(client, action="deep-research", query="How do compilers inline?")
        research_id = started["data"]["research_id"]
        cancelled = await call(client, action="deep-research-cancel", research_id=research_id)
        assert cancelled["success"], cancelled
        assert cancelled["data"]["status"] in ("cancelling", "cancelled")
        final = await run_to_end(client, research_id, timeout=10)
        assert final["status"] == "cancelled"

        again = await call(client, action="deep-research-cancel", research_id=research_id)
        assert again["success"] and again["data"]["status"] == "cancelled"

        deleted = await call(client, action="deep-research-delete", research_id=research_id)
        assert deleted["data"] == {"research_id": research_id, "deleted": True}
        gone = await call(client, action="deep-research-status", research_id=research_id)
        assert gone["data"]["error_code"] == "RESEARCH_NOT_FOUND"


async def test_list_finds_research_by_the_words_of_its_question(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 2.0  # the researches stay running; listing reads the store only
    async with _client(settings) as client:
        ids = {}
        for question in ("How do compilers inline calls?", "How do linkers resolve symbols?"):
            started = await call(client, action="deep-research", query=question)
            ids[question] = started["data"]["research_id"]

        async def listed(**arguments: object) -> list[str]:
            answer = await call(client, action="deep-research-list", **arguments)
            assert answer["success"], answer
            return [item["research_id"] for item in answer["data"]["items"]]

        assert await listed(query="HOW do") == list(reversed(ids.values()))
        assert await listed(query="compilers inline") == [ids["How do compilers inline calls?"]]
        assert await listed(query="compilers symbols") == []
        eleven = " ".join(f"word{n}" for n in range(11))
        too_many = await call(client, action="deep-research-list", query=eleven)
        assert too_many["data"]["error_code"] == "VALIDATION_ERROR"
        for research_id in ids.values():
            await call(client, action="deep-research-cancel", research_id=research_id)


async def test_delete_cancels_a_running_research(
    settings: Settings, openai_server: FakeHTTPServer
) -> None:
    openai_server.latency = 3.0
    async with _client(settings) as client:
        started = await call(client, action="deep-research", query="What is eBPF used for?")
        research_id = started["data"]["research_id"]
        deleted = await call(client, action="deep-research-delete", research_id=research_id)
        assert deleted["success"], deleted
        listed = await call(client, action="deep-research-list")
        assert listed["data"]["items"] == []


BAD_CALLS: list[tuple[dict[str, Any], str, str | None]] = [
    (
        {"action": "deep-research-restore", "research_id": "deepres-000000000000"},
        "VALIDATION_ERROR",
        "item_id",
    ),
    (
        {
            "action": "deep-research-restore",
            "research_id": "deepres-000000000000",
            "item_id": "src-1a2b3c4d",
        },
        "RESEARCH_NOT_FOUND",
        None,
    ),
    ({"action": "deep-research"}, "VALIDATION_ERROR", "query"),
    ({"action": "deep-research", "query": "   "}, "VALIDATION_ERROR", "query"),
    ({"action": "deep-research", "query": "x" * 200_001}, "VALIDATION_ERROR", "query"),
    (
        {"action": "deep-research", "query": "ok?", "max_iterations": 11},
        "VALIDATION_ERROR",
        "max_iterations",
    ),
    (
        {"action": "deep-research", "query": "ok?", "max_sub_queries": 0},
        "VALIDATION_ERROR",
        "max_sub_queries",
    ),
    (
        {"action": "deep-research", "query": "ok?", "max_sources_per_query": 51},
        "VALIDATION_ERROR",
        "max_sources_per_query",
    ),
    (
        {"action": "deep-research", "query": "ok?", "max_concurrent": 11},
        "VALIDATION_ERROR",
        "max_concurrent",
    ),
    (
        {"action": "deep-research", "query": "ok?", "task_timeout": 1},
        "VALIDATION_ERROR",
        "task_timeout",
    ),
    (
        {"action": "deep-research", "query": "ok?", "deep_research_action": "cancel"},
        "VALIDATION_ERROR",
        "deep_research_action",
    ),
    (
        {"action": "deep-research", "query": "ok?", "provider_id": "nosuch"},
        "PROVIDER_NOT_CONFIGURED",
        None,
    ),
    ({"action": "summon"}, "UNKNOWN_ACTION", "action"),
    ({"action": "deep-research-status"}, "INVALID_RESEARCH_ID", None),
    ({"action": "deep-research-status", "research_id": "../x"}, "INVALID_RESEARCH_ID", None),
    (
        {"action": "deep-research-report", "research_id": "deepres-../../etc"},
        "INVALID_RESEARCH_ID",
        None,
    ),
    (
        {"action": "deep-research-status", "research_id": "deepres-000000000000"},
        "RESEARCH_NOT_FOUND",
        None,
    ),
    (
        {"action": "deep-research-resume", "research_id": "deepres-000000000000"},
        "RESEARCH_NOT_FOUND",
        None,
    ),
    (
        {
            "action": "deep-research-status",
            "research_id": "deepres-000000000000",
            "wait": True,
            "wait_timeout": 61,
        },
        "VALIDATION_ERROR",
        "wait_timeout",
    ),
    ({"action": "deep-research-list", "limit": 0}, "VALIDATION_ERROR", "limit"),
    ({"action": "deep-research-list", "cursor": "not-a-cursor!"}, "VALIDATION_ERROR", None),
]


@pytest.mark.parametrize(("arguments", "code", "field"), BAD_CALLS)
async def test_bad_input_gets_a_specific_error_and_the_server_keeps_serving(
    settings: Settings, arguments: dict[str, Any], code: str, field: str | None
) -> None:
    async with _client(settings) as client:
        envelope = await call(client, **arguments)
        assert envelope["success"] is False
        assert envelope["data"]["error_code"] == code
        assert envelope["data"]["error_type"]
        assert envelope["data"]["remediation"]
        assert envelope["error"]
        if field:
            assert envelope["data"]["field"] == field
        still = await call(client, action="deep-research-list")
        assert still["success"]


async def test_no_provider_key_fails_at_start_not_in_the_background(
    research_env: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in research_env.items() if k != "OPENAI_API_KEY"}
    settings = load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))
    async with _client(settings) as client:
        envelope = await call(client, action="deep-research", query="What is Zig comptime?")
        assert envelope["data"]["error_code"] == "PROVIDER_NOT_CONFIGURED"
        assert "OPENAI_API_KEY" in envelope["data"]["remediation"]
        listed = await call(client, action="deep-research-list")
        assert listed["data"]["items"] == []


async def test_ignored_parameters_are_reported_as_warnings(settings: Settings) -> None:
    async with _client(settings) as client:
        envelope = await call(client, action="deep-research-list", item_id="src-1a2b3c4d")
        assert envelope["success"]
        assert any("item_id" in w for w in envelope["meta"]["warnings"])


async def test_every_action_parameter_is_in_the_published_schema(settings: Settings) -> None:
    async with _client(settings) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["research"]
    schema = tools[0].input_schema
    properties = schema["properties"]
    assert set(properties["action"]["enum"]) == set(ACTION_PARAMS)
    for action, params in ACTION_PARAMS.items():
        for param in params:
            assert param in properties, f"{action} takes {param}, missing from the schema"
            assert param in (tools[0].description or "")
    assert schema["required"] == ["action"]
    assert "ctx" not in properties


async def test_secrets_never_reach_responses(
    settings: Settings, research_env: dict[str, str]
) -> None:
    async with _client(settings) as client:
        started = await call(client, action="deep-research", query="What is QUIC?")
        final = await run_to_end(client, started["data"]["research_id"])
        texts = [str(started), str(final)]
        texts.append(str(await call(client, action="deep-research-list")))
    for text in texts:
        assert research_env["OPENAI_API_KEY"] not in text
        assert research_env["TAVILY_API_KEY"] not in text


async def test_configuration_error_is_reported_on_every_call(tmp_path: Path) -> None:
    bad = tmp_path / "foundry-mcp.toml"
    bad.write_text("[research]\ndeep_research_max_iterations = 'three'\n")

    def loader() -> Settings:
        return load_settings(env={"FOUNDRY_MCP_CONFIG": str(bad)}, cwd=tmp_path, home=tmp_path)

    async with Client(create_server(loader), mode="legacy") as client:
        envelope = await call(client, action="deep-research-list")
    assert envelope["data"]["error_code"] == "CONFIG_INVALID"
    assert str(bad) in envelope["error"]
    assert "deep_research_max_iterations" in envelope["error"]
