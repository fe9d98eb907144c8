"""A report's evidence over MCP stdio: every quote is the stored source text at its span."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextResourceContents

from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.store.sqlite.store import ResearchStore
from tests.e2e.conftest import call, run_to_end

pytestmark = [pytest.mark.anyio, pytest.mark.stdio]


def _stored_state(research_env: dict[str, str], research_id: str) -> ResearchState:
    store = ResearchStore(Path(research_env["FOUNDRY_MCP_RESEARCH_DIR"]))
    try:
        state = store.load(research_id)
        store.load_pages(state)  # the page text, kept apart from the state
        return state
    finally:
        store.close()


async def test_every_quote_is_the_stored_source_text_at_its_span(
    editor: Client, editor_env: dict[str, str]
) -> None:
    client = editor
    started = await call(client, action="deep-research", query="How do heat pumps work?")
    research_id = started["data"]["research_id"]
    assert (await run_to_end(client, research_id))["status"] == "completed"
    claims: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:  # paged like the report
        page = await call(
            client,
            action="deep-research-evidence",
            research_id=research_id,
            offset=offset,
            max_chars=1000,
        )
        assert page["success"], page
        claims += page["data"]["claims"]
        offset = page["data"]["next_offset"]
    resource = await client.read_resource(f"research://{research_id}/claims")
    state = _stored_state(editor_env, research_id)

    assert len(claims) == page["data"]["total_claims"] == len(state.claim_checks) > 0
    content = resource.contents[0]
    assert isinstance(content, TextResourceContents)
    assert json.loads(content.text)["claims"] == claims
    sources = state.source_by_id()
    numbers = {sid: n for n, sid in enumerate(state.report_metadata.cited_source_ids, 1)}
    quoted = 0
    for claim in claims:
        assert claim["verdict"] in {"supported", "partial", "unsupported", "unverified"}
        cited = {s["source_id"] for s in claim["sources"]}
        for quote in claim["quotes"]:
            assert quote["source_id"] in cited
            stored = getattr(sources[quote["source_id"]], quote["field"])
            assert stored[quote["start"] : quote["end"]] == quote["text"]
            assert quote["number"] == numbers.get(quote["source_id"])
            quoted += 1
    assert quoted >= len([c for c in claims if c["verdict"] == "supported"])
