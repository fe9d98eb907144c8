"""A report that lives, through a real MCP client over stdio: a rewrite started with the tool and
followed to its version 2; versions read from the store by a server, and again by a second
server after the first has stopped; a version's report, resource and export; the delta between
two; and the errors, each naming its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from foundry_mcp.config import Settings
from foundry_mcp.research.export.document import ResearchExport
from tests.e2e.conftest import call, editor_stdio, run_to_end
from tests.report_versions import store_versioned_and_stopped

pytestmark = [pytest.mark.anyio, pytest.mark.stdio]

RID = "deepres-0000000000a1"
STOPPED = "deepres-0000000000b2"
RULE = "\n\n---\n"  # the cost footer's


def _failure(envelope: dict[str, Any]) -> dict[str, Any]:
    assert not envelope["success"], envelope
    data: dict[str, Any] = envelope["data"]
    assert data["remediation"], data
    return data


async def _read(client: Client, uri: str) -> str:
    return (await client.read_resource(uri)).contents[0].text  # type: ignore[union-attr]


async def test_a_rewrite_through_the_tool_becomes_version_2(editor: Client) -> None:
    started = await call(editor, action="deep-research", query="How do B-trees split pages?")
    rid = started["data"]["research_id"]
    # Asked while the research runs: refused, saying to wait for it.
    early = await call(
        editor, action="deep-research-revise", research_id=rid, revise={"kind": "rewrite"}
    )
    if not early["success"]:  # (a research this quick may already be done)
        assert early["data"]["error_code"] == "INVALID_STATE"
        assert "wait=true" in early["data"]["remediation"]
    assert (await run_to_end(editor, rid))["status"] == "completed"
    first = (await call(editor, action="deep-research-report", research_id=rid))["data"]

    revise = {"kind": "rewrite", "form": "brief", "audience": "a CTO"}
    asked = await call(editor, action="deep-research-revise", research_id=rid, revise=revise)
    assert asked["success"], asked
    revision = asked["data"]
    assert (revision["kind"], revision["version"], revision["base_version"]) == ("rewrite", 2, 1)
    assert "one-page brief for a CTO" in revision["plan"] and "no search" in revision["plan"]
    assert "deep-research-status" in revision["next_action"]
    assert (await run_to_end(editor, rid))["status"] == "completed"

    latest = (await call(editor, action="deep-research-report", research_id=rid))["data"]
    again = await call(editor, action="deep-research-report", research_id=rid, version=1)
    assert latest["version"] == 2 and again["data"]["version"] == 1
    # The same report; its footer tells the research's whole cost, the rewrite's included.
    body = [page["report"].split(RULE)[0] for page in (again["data"], first, latest)]
    assert body[0] == body[1] != body[2]
    listed = (await call(editor, action="deep-research-versions", research_id=rid))["data"]
    assert [(v["number"], v["kind"]) for v in listed["versions"]] == [
        (1, "research"),
        (2, "rewrite"),
    ]
    rewrite = listed["versions"][1]
    assert rewrite["instructions"] == {"form": "brief", "audience": "a CTO"}
    assert rewrite["cost"]["total"]["calls"] > 0 and rewrite["cost"]["search_calls"] == 0
    assert set(rewrite["cost"]["by_phase"]) and rewrite["latest"]
    delta = (await call(editor, action="deep-research-versions", research_id=rid, version=2))[
        "data"
    ]["delta"]
    assert delta["compare_to"] == 1 and delta["summary"].startswith("Version 2 has")


async def test_versions_survive_a_restart_are_exported_and_compared(
    settings: Settings, research_env: dict[str, str]
) -> None:
    store_versioned_and_stopped(settings, RID, STOPPED)

    async with editor_stdio(research_env) as client:
        before = (await call(client, action="deep-research-versions", research_id=RID))["data"]
        old = await call(client, action="deep-research-report", research_id=RID, version=1)
        resource = await _read(client, f"research://{RID}/report/2")
        exported = await call(
            client, action="deep-research-export", research_id=RID, format="json", version=2
        )
        markdown = await call(
            client, action="deep-research-export", research_id=RID, format="markdown", version=1
        )
        compared = await call(
            client, action="deep-research-versions", research_id=RID, version=3, compare_to=1
        )
        missing = await call(client, action="deep-research-report", research_id=RID, version=7)
        not_an_object = await call(
            client, action="deep-research-revise", research_id=RID, revise={"tone": "dry"}
        )
        stopped = await call(
            client, action="deep-research-revise", research_id=STOPPED, revise={"kind": "rewrite"}
        )
        deepen_nothing = await call(
            client, action="deep-research-revise", research_id=RID, revise={"kind": "deepen"}
        )
    # A second server on the same store: the versions are the store's, not a process's.
    async with editor_stdio(research_env) as client:
        after = (await call(client, action="deep-research-versions", research_id=RID))["data"]
        latest = (await call(client, action="deep-research-report", research_id=RID))["data"]

    assert after == before and [v["number"] for v in after["versions"]] == [1, 2, 3]
    assert [v["kind"] for v in after["versions"]] == ["research", "rewrite", "refresh"]
    assert after["versions"][2]["cost"]["by_phase"]["synthesis"]["calls"] == 2
    assert latest["version"] == 3 and "What changed" in latest["report"]
    assert old["data"]["version"] == 1 and "Heat pumps in cold climates" in old["data"]["report"]
    assert (
        resource.startswith("# Heat pumps: a brief for the CFO") and "What changed" not in resource
    )

    assert exported["data"]["version"] == 2
    document = ResearchExport.model_validate_json(exported["data"]["content"])
    assert document.version == 2 and document.report is not None
    assert "What changed" not in document.report and len(document.versions) == 3
    assert "*Version 1 of 3: the research's own report" in markdown["data"]["content"]

    delta = compared["data"]["delta"]
    assert "What changed" in delta["added"]["sections"] and "Costs" in delta["removed"]["sections"]
    assert [s["title"] for s in delta["added"]["sources"]] == ["Gamma 2026 update"]
    assert [f["finding_id"] for f in delta["added"]["findings"]] == ["fnd-new00003"]
    assert delta["removed"]["findings"] == [] and delta["changes"][0]["kind"] == "refresh"

    unknown = _failure(missing)
    assert unknown["error_code"] == "VALIDATION_ERROR" and unknown["field"] == "version"
    assert "its versions: 1, 2, 3" in missing["error"]
    refused = _failure(not_an_object)
    assert refused["field"] == "revise" and "tone" in not_an_object["error"]
    assert "kind (rewrite, deepen or refresh)" in refused["remediation"]
    assert _failure(stopped)["error_code"] == "INVALID_STATE"
    assert "deep-research-resume" in stopped["data"]["remediation"]
    assert _failure(deepen_nothing)["field"] == "revise"
    assert json.loads(json.dumps(before)) == before
