"""The team server over streamable HTTP talks with its callers' users as stdio does: a vague
question is clarified through the client's elicitation, a plan to review is put to the user
when its status is read; a client that cannot be asked is asked nothing."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.client.session import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from tests.e2e.conftest import call, run_to_end
from tests.e2e.teamserver import TeamServer, mcp_client
from tests.fakes import FakeHTTPServer
from tests.support import searched_queries

pytestmark = pytest.mark.anyio

VAGUE = "What is the best database?"
ALICE = "alice-token-3f9a0c2e7b1d4a65"


async def _user(_: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    """Answers the clarifying questions (the first choice, a year) and approves plans edited
    down to their first query."""
    properties: dict[str, Any] = params.requested_schema["properties"]  # type: ignore[union-attr]
    if "decision" in properties:
        first = properties["queries"]["default"].splitlines()[0]
        return ElicitResult(action="accept", content={"decision": "approve", "queries": first})
    content = {
        name: spec["enum"][0] if "enum" in spec else "2024" for name, spec in properties.items()
    }
    return ElicitResult(action="accept", content=content)


async def test_a_team_caller_is_asked_through_its_client(
    research_env: dict[str, str], tavily_server: FakeHTTPServer
) -> None:
    env = {**research_env, "FOUNDRY_MCP_TOKENS": f"alice:{ALICE}"}
    with TeamServer(env) as server:
        async with mcp_client(server.url, ALICE, elicitation_callback=_user) as client:
            started = await call(
                client, action="deep-research", query=VAGUE, review_plan=True, max_iterations=1
            )
            assert started["success"], started
            assert started["data"]["clarification"]["outcome"] == "answered"
            final = await run_to_end(client, started["data"]["research_id"])
        assert final["status"] == "completed", final
        assert final["plan_review"] == "edited"
        assert len(set(searched_queries(tavily_server))) == 1  # the plan cut to its first query

        async with mcp_client(server.url, ALICE) as plain:  # no elicitation: nothing asked
            started = await call(plain, action="deep-research", query=VAGUE, max_iterations=1)
            assert "clarification" not in started["data"]
            final = await run_to_end(plain, started["data"]["research_id"])
        assert final["clarification"]["outcome"] == "not_asked"
