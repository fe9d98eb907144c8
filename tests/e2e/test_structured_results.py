"""Structured results over MCP stdio: every action's structuredContent fits the outputSchema the
server publishes (the failures too), the text content is the same JSON without nulls, and the
tool carries its hints."""

from __future__ import annotations

import json
from typing import Any, get_args

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from foundry_mcp.server.results.data import RESULT_MODELS, ActionResult
from foundry_mcp.server.results.hints import ACTION_HINTS
from tests.e2e.conftest import TERMINAL

PUBLISHED = {model.__name__ for model in get_args(ActionResult)}

pytestmark = [pytest.mark.anyio, pytest.mark.stdio]


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


class Checked:
    """Calls the research tool and checks each answer against the published schemas: the
    tool's ``outputSchema`` (the envelope) and ``research://schemas`` (each action's data)."""

    def __init__(self, client: Client, schema: dict[str, Any], results: dict[str, Any]) -> None:
        self.client = client
        self.envelope = Draft202012Validator(schema)
        self.defs = results["$defs"]
        self.models: set[str] = set()

    def data_validator(self, name: str) -> Draft202012Validator:
        return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": self.defs})

    async def __call__(self, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool("research", arguments)
        envelope = result.structured_content
        assert envelope is not None, result
        assert result.is_error == (not envelope["success"])
        self.envelope.validate(envelope)
        name = RESULT_MODELS[arguments["action"]].__name__ if envelope["success"] else "ErrorData"
        self.data_validator(name).validate(envelope["data"])  # its own model, not just the union
        self.models.add(name)
        text = result.content[0].text  # type: ignore[union-attr]
        assert "\n" not in text and ":null" not in text
        assert json.loads(text) == without_nulls(envelope)
        return envelope


async def test_every_action_answers_in_the_published_schema(editor: Client) -> None:
    client = editor
    (tool,) = [t for t in (await client.list_tools()).tools if t.name == "research"]
    schema = tool.output_schema
    assert schema is not None and schema["type"] == "object"
    read = await client.read_resource("research://schemas")
    results = json.loads(read.contents[0].text)  # type: ignore[union-attr]
    call = Checked(client, schema, results)

    started = await call(action="deep-research", query="How does WAL mode work in SQLite?")
    rid = started["data"]["research_id"]
    with anyio.fail_after(60):
        status = {"status": "queued"}
        while status["status"] not in TERMINAL:
            polled = await call(
                action="deep-research-status", research_id=rid, wait=True, wait_timeout=2
            )
            status = polled["data"]
    assert status["status"] == "completed", status
    report = await call(action="deep-research-report", research_id=rid)
    await call(action="deep-research-evidence", research_id=rid)
    await call(action="deep-research-list")
    await call(action="deep-research-events", research_id=rid)
    await call(action="deep-research-export", research_id=rid, format="json")
    await call(action="deep-research-ask", research_id=rid, query="Which practitioners?")
    await call(action="deep-research-ask", research_id=rid, query="Martian penguins?")
    source_id = report["data"]["sources"][0]["source_id"]
    await call(action="deep-research-restore", research_id=rid, item_id=source_id)
    await call(action="health")
    await call(action="deep-research-versions", research_id=rid)
    await call(action="deep-research-revise", research_id=rid, revise={"kind": "rewrite"})

    other = (await call(action="deep-research", query="How do B-trees split?"))["data"]
    await call(action="deep-research-cancel", research_id=other["research_id"])
    await call(action="deep-research-resume", research_id=other["research_id"])
    await call(action="deep-research-cancel", research_id=other["research_id"])
    await call(action="deep-research-delete", research_id=other["research_id"])

    missing = await call(action="deep-research-status", research_id="deepres-000000000000")
    refused = await call(action="deep-research-list", limit=0)

    assert missing["data"]["error_code"] == "RESEARCH_NOT_FOUND"
    assert refused["data"]["field"] == "limit"
    assert call.models == PUBLISHED  # every shape data may take was met and checked


async def test_the_tool_publishes_its_hints_per_action(editor: Client) -> None:
    (tool,) = [t for t in (await editor.list_tools()).tools if t.name == "research"]
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is False
    assert tool.annotations.destructive_hint is True
    assert tool.annotations.idempotent_hint is False
    assert tool.annotations.open_world_hint is True
    assert tool.meta is not None
    hints = tool.meta["foundry-mcp/actions"]
    assert "deep-research-status" in hints["readOnly"] and "health" in hints["readOnly"]
    assert set(hints["destructive"]) == {"deep-research-delete", "deep-research-export"}
    assert "deep-research" not in hints["idempotent"] + hints["readOnly"]
    assert set(hints["readOnly"] + hints["destructive"] + hints["idempotent"]) <= set(ACTION_HINTS)
