"""One research per mode over MCP stdio, as an editor runs them: valid citations, a recorded mode."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.e2e.conftest import Since, call, run_to_end
from tests.fakes import FakeHTTPServer
from tests.support import assert_citations_resolve, served_urls

pytestmark = [pytest.mark.anyio, pytest.mark.stdio]

CASES = [
    ("simple", "How does write-ahead logging work in SQLite?", "simple"),
    ("hierarchical", "Compare PostgreSQL, MySQL and SQLite for embedded analytics", "hierarchical"),
    (
        "hypotheses",
        "Which explanation best accounts for the decline of honeybee colonies?",
        "hypotheses",
    ),
    ("auto", "Compare PostgreSQL, MySQL and SQLite for embedded analytics", "hierarchical"),
    ("auto", "What is the boiling point of water at sea level?", "simple"),
]


@pytest.mark.parametrize(("mode", "question", "chosen"), CASES)
async def test_each_mode_over_stdio(
    editor: Client,
    shared_tavily: FakeHTTPServer,
    mode: str,
    question: str,
    chosen: str,
) -> None:
    searches = Since(shared_tavily)
    started = await call(
        editor, action="deep-research", query=question, mode=mode, max_iterations=1
    )
    assert started["success"], started
    assert started["data"]["mode"] == mode
    final = await run_to_end(editor, started["data"]["research_id"])
    assert final["status"] == "completed", final
    assert final["mode"] == chosen
    report = await call(
        editor, action="deep-research-report", research_id=started["data"]["research_id"]
    )
    assert_citations_resolve(report["data"]["report"], served_urls(searches))
    key = report["data"]["decision_log"]["key_decisions"]
    choice = [d for d in key if d["action"] == "choose_mode"]
    assert choice and choice[0]["rationale"].startswith(f"Mode {chosen}")
    if chosen == "hierarchical":
        assert final["tree"] and len(final["tree"]["sub_questions"]) == 3
    if chosen == "hypotheses":
        assert final["tree"] and final["tree"]["hypotheses"]
        assert "Hypothesis exploration" in report["data"]["report"]
