"""A research answers in the caller's shape (output_schema) over a real MCP session: a table
of libraries whose every value is cited with a quote of a source that states it; a value no
source states is null with the reason; a value the model makes up is caught by the fact-check;
a schema that cannot work is refused before anything starts (test_structured_answer_bounds.py:
any nesting, patterns); the answer is in the report, the JSON export and the resource."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.server import create_server
from tests.e2e.conftest import call, run_to_end
from tests.e2e.test_terminal import piped
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.fakes.providers import fake_tavily

pytestmark = pytest.mark.anyio

QUESTION = "Compare the Python HTTP clients httpx, requests and aiohttp: licence, version, release"
PAGES = {
    "httpx": "httpx is released under the BSD-3-Clause licence, its major version is 0 and it "
    "was first released on 2019-08-21.",
    "requests": "requests is released under the Apache-2.0 licence, its major version is 2 and "
    "it was first released on 2011-02-14.",
    # No day of first release: that value is unknown.
    "aiohttp": "aiohttp is released under the Apache-2.0 licence and its major version is 3.",
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["libraries"],
    "properties": {
        "libraries": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "licence", "major_version", "first_release"],
                "properties": {
                    "name": {"type": "string"},
                    "licence": {"type": "string", "enum": ["BSD-3-Clause", "Apache-2.0", "MIT"]},
                    "major_version": {"type": "number"},
                    "first_release": {"type": "string", "format": "date"},
                },
            },
        }
    },
}


def _pages(query: str) -> list[dict[str, Any]]:
    return [
        {
            "title": f"{name} documentation",
            "url": f"https://docs.example.org/{name}",
            "content": text,
            "raw_content": text,
            "score": 0.9,
        }
        for name, text in PAGES.items()
    ]


@pytest.fixture
def library_pages() -> Iterator[FakeHTTPServer]:
    with fake_tavily(_pages) as server:
        yield server


def _settings(research_env: dict[str, str], tmp_path: Path, tavily: FakeHTTPServer) -> Settings:
    env = {**research_env, "TAVILY_BASE_URL": tavily.base_url}
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


async def _run(client: Client, **options: Any) -> dict[str, Any]:
    """A one-round simple research of the question with the schema, run to its end."""
    started = await call(
        client,
        action="deep-research",
        query=QUESTION,
        mode="simple",
        max_iterations=1,
        clarify="off",
        output_schema=SCHEMA,
        **options,
    )
    assert started["success"], started
    return await run_to_end(client, started["data"]["research_id"])


async def _answer(settings: Settings) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The report action's answer, the JSON export and the answer resource."""
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        final = await _run(client)
        assert final["status"] == "completed", final
        rid = final["research_id"]
        report = await call(client, action="deep-research-report", research_id=rid)
        exported = await call(client, action="deep-research-export", research_id=rid, format="json")
        resource = await client.read_resource(f"research://{rid}/answer")
    document = json.loads(exported["data"]["content"])
    return report["data"]["answer"], document, json.loads(resource.contents[0].text)


def _rows(answer: dict[str, Any]) -> dict[str, tuple[int, dict[str, Any]]]:
    return {row["name"]: (n, row) for n, row in enumerate(answer["data"]["libraries"])}


async def test_a_table_is_answered_with_every_value_cited_and_an_unknown_one_null(
    research_env: dict[str, str], library_pages: FakeHTTPServer, tmp_path: Path
) -> None:
    answer, exported, resource = await _answer(_settings(research_env, tmp_path, library_pages))
    assert answer["valid"], answer
    # Against the schema as given, only the unknown value fails: a required string is null.
    assert len(answer["errors"]) == 1 and "first_release" in answer["errors"][0], answer
    rows = _rows(answer)
    assert set(rows) == {"httpx", "requests", "aiohttp"}, answer["data"]
    n, httpx = rows["httpx"]
    assert httpx == {
        "name": "httpx",
        "licence": "BSD-3-Clause",
        "major_version": 0,
        "first_release": "2019-08-21",
    }
    # Every value but a name has a source whose quote states it, and only its own page.
    for name, (n, row) in rows.items():
        for key, value in row.items():
            if value is None or key == "name":
                continue
            cited = answer["citations"][f"/libraries/{n}/{key}"]
            assert cited and all(c["url"] == f"https://docs.example.org/{name}" for c in cited)
            assert all(str(value) in c["quote"] and c["quote"] in PAGES[name] for c in cited)
    # aiohttp's first release is stated nowhere: null, with why; the strict schema is not met.
    n, aiohttp = rows["aiohttp"]
    assert aiohttp["first_release"] is None
    assert answer["unknown"][f"/libraries/{n}/first_release"]
    assert answer["strict_valid"] is False
    assert exported["answer"] == answer and exported["output_schema"] == SCHEMA
    assert resource == answer


async def test_a_value_the_model_makes_up_is_caught_by_the_fact_check(
    research_env: dict[str, str],
    brain: ResearchBrain,
    library_pages: FakeHTTPServer,
    tmp_path: Path,
) -> None:
    def inventing(system: str, user: str) -> str:
        written = brain.structure(user)
        for n, row in enumerate(written["answer"]["libraries"]):
            if row.get("name") == "aiohttp":  # a day no source gives, citing aiohttp's page
                row["first_release"] = "2014-10-01"
                pointer = f"/libraries/{n}/first_release"
                written["sources"][pointer] = written["sources"][f"/libraries/{n}/licence"]
                written["unknown"].pop(pointer, None)
        return json.dumps(written)

    brain.overrides["structurer"] = inventing
    answer, _, _ = await _answer(_settings(research_env, tmp_path, library_pages))
    n, aiohttp = _rows(answer)["aiohttp"]
    assert aiohttp["first_release"] is None, answer
    assert "do not state" in answer["unknown"][f"/libraries/{n}/first_release"]
    assert answer["removed"] == 1 and answer["valid"]


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}}, "$ref"),
        ({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}}, "anyOf"),
        ({"type": "object", "properties": {"a": {"type": "strng"}}}, "strng"),
        ({"type": "string"}, "root must be"),
    ],
)
async def test_a_schema_that_cannot_work_is_refused_at_start(
    research_env: dict[str, str],
    library_pages: FakeHTTPServer,
    tmp_path: Path,
    schema: dict[str, Any],
    says: str,
) -> None:
    settings = _settings(research_env, tmp_path, library_pages)
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        refused = await call(client, action="deep-research", query=QUESTION, output_schema=schema)
        listed = await call(client, action="deep-research-list")
    assert not refused["success"] and refused["data"]["error_code"] == "VALIDATION_ERROR"
    assert says in refused["error"] and refused["data"]["remediation"], refused
    assert listed["data"]["items"] == [] and not library_pages.requests


def test_the_command_line_takes_a_schema_file_and_source_bounds(
    research_env: dict[str, str], library_pages: FakeHTTPServer, tmp_path: Path
) -> None:
    schema_file = tmp_path / "libraries.json"
    schema_file.write_text(json.dumps(SCHEMA))
    env = {**research_env, "TAVILY_BASE_URL": library_pages.base_url}
    flags = ["--mode", "simple", "--max-iterations", "1", "--clarify", "off"]
    bounds = ["--include-domain", "docs.example.org", "--published-after", "2020-01-01"]
    done = piped(env, "research", QUESTION, *flags, *bounds, "--schema", str(schema_file), "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["answer"]["valid"] and _rows(printed["answer"])["httpx"][1]["licence"]
    sent = [r.json for r in library_pages.requests if r.path == "/search"]
    assert sent and all(body["include_domains"] == ["docs.example.org"] for body in sent)
    assert all(body["start_date"] == "2020-01-01" for body in sent)
    # In words, on a terminal's stderr, without --json.
    done = piped(env, "research", QUESTION, *flags, "--schema", str(schema_file))
    assert "answer in your schema's shape:" in done.stderr and "1 unknown" in done.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    refused = piped(env, "research", QUESTION, "--schema", str(broken))
    assert (
        refused.returncode != 0
        and "--schema" in refused.stderr
        and "Traceback" not in refused.stderr
    )


async def test_an_answer_not_written_by_max_time_s_is_left_out_saying_so(
    research_env: dict[str, str],
    brain: ResearchBrain,
    library_pages: FakeHTTPServer,
    tmp_path: Path,
) -> None:
    def slow(system: str, user: str) -> str:
        time.sleep(7)  # the model takes longer than the research has left
        return json.dumps(brain.structure(user))

    brain.overrides["structurer"] = slow
    settings = _settings(research_env, tmp_path, library_pages)
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        began = time.monotonic()
        final = await _run(client, max_time_s=5)
        took = time.monotonic() - began
        report = await call(client, action="deep-research-report", research_id=final["research_id"])
    assert final["status"] == "completed" and took < 7.5, (final, took)  # not the 7 s answer
    answer = report["data"]["answer"]
    assert answer["data"] is None and "max_time_s (5 s) ran out" in answer["errors"][0]
    assert any("max_time_s (5 s) ran out" in warning for warning in final["warnings"])
    assert report["data"]["report"]
