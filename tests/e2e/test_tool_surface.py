"""What the research tool costs an assistant on every turn, read over a real MCP session: the
whole ``tools/list`` answer within 1,500 tokens, and the detail it leaves out on demand."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from foundry_mcp.context.tokens import counter_for_model
from foundry_mcp.server import create_server
from foundry_mcp.server.arguments import ACTION_PARAMS, ResearchArguments
from foundry_mcp.server.results.data import RESULT_MODELS
from foundry_mcp.server.surface import tokens_estimate

pytestmark = pytest.mark.anyio

TOOLS_LIST_TOKENS = 1_500


def o200k_tokens(text: str) -> int:
    """The o200k count when tiktoken's encoding is at hand, else a conservative estimate."""
    counter = counter_for_model("gpt-4o")  # an o200k model
    return counter.count(text) if counter.name == "o200k_base" else tokens_estimate(text)


async def _tools_list(client: Client) -> dict[str, Any]:
    listed = await client.list_tools()
    return listed.model_dump(mode="json", by_alias=True, exclude_none=True)


@pytest.mark.stdio
async def test_the_whole_tool_list_costs_at_most_1500_tokens(editor: Client) -> None:
    listed = await _tools_list(editor)  # from the server as an editor starts it
    text = json.dumps(listed, separators=(",", ":"), ensure_ascii=False)
    assert o200k_tokens(text) <= TOOLS_LIST_TOKENS, len(text)
    print(f"tools/list: {len(text):,} characters, {o200k_tokens(text):,} tokens")
    (tool,) = listed["tools"]
    assert "outputSchema" in tool and tool["outputSchema"]["required"] == [
        "success",
        "data",
        "meta",
    ]
    # Compact: no nullable wrappers, titles or defaults restated.
    schema = json.dumps(tool["inputSchema"])
    assert '"null"' not in schema and '"title"' not in schema and '"default"' not in schema


async def test_the_detail_left_out_is_read_on_demand() -> None:
    async with Client(create_server(), mode="legacy") as client:
        guide = (await client.read_resource("research://help")).contents[0].text  # type: ignore[union-attr]
        schemas = json.loads(
            (await client.read_resource("research://schemas")).contents[0].text  # type: ignore[union-attr]
        )
    for action in ACTION_PARAMS:
        assert f"`{action}`" in guide
    for name, field in ResearchArguments.model_fields.items():
        assert f"`{name}`" in guide and str(field.description) in guide
    assert set(RESULT_MODELS) <= set(schemas["actions"])
    for entry in schemas["actions"].values():
        assert entry["$ref"].removeprefix("#/$defs/") in schemas["$defs"]
