"""Private stays private: a codename only the user's own notes hold is used in the report, and
never reaches a public search service.

The user's notes name "Project Quillmoor" and its build server "db-prod-7"; the question names
neither. The refiner, as a real model does, writes the next round's queries from the findings it
was shown ("Project Quillmoor throughput sqlite3 inserts wal mode"), and later rounds search
both the notes and the web. Tavily must never see either word; the notes are searched with them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.research.models import ResearchState
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.support import TERMINAL, searched_queries, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How many sqlite3 inserts per second does WAL mode sustain?"
NOTE = (
    "# Load test notes\n\n"
    "Project Quillmoor sustained 48,000 sqlite3 inserts a second in WAL mode on db-prod-7, "
    "with synchronous set to NORMAL and one writer.\n"
)
SECRETS = ("quillmoor", "db-prod-7")


def settings_with_notes(research_env: dict[str, str], tmp_path: Path, extra: str = "") -> Settings:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "load-test.md").write_text(NOTE)
    config = Path(research_env["FOUNDRY_MCP_CONFIG"])
    config.write_text(
        config.read_text() + f'\n[research]\n{extra}\n\n[research.local]\npaths = ["{notes}"]\n'
    )
    return load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))


def follow_ups_from_findings(brain: ResearchBrain) -> None:
    """A refiner that writes follow-up queries from the findings' names, as models do."""

    def refine(system: str, user: str) -> str:
        answer = brain.refine(user)
        named = re.search(r"Project (\w+)", user)
        query = (
            f"Project {named.group(1)} throughput sqlite3 inserts wal mode db-prod-7"
            if named
            else "sqlite3 insert throughput wal mode benchmarks"
        )
        for gap in answer["gap_analysis"]:
            gap["follow_up_queries"] = [{"query": query, "expected_contribution": "more"}]
        return json.dumps(answer)

    brain.overrides["refiner"] = refine


async def research(settings: Settings) -> tuple[ResearchState, dict[str, Any]]:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, mode="simple", max_iterations=2)
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=60)
        assert status["status"] == "completed", status["error"]
        return service.store.load(started["research_id"]), status


async def test_a_codename_from_the_users_notes_reaches_the_report_but_no_public_search(
    research_env: dict[str, str],
    tmp_path: Path,
    brain: ResearchBrain,
    tavily_server: FakeHTTPServer,
) -> None:
    follow_ups_from_findings(brain)
    state, status = await research(settings_with_notes(research_env, tmp_path))

    assert "Quillmoor" in (state.report or "")  # the notes were read and used
    refined = [sq.query for sq in state.sub_queries if sq.iteration == 2]
    assert any("Quillmoor" in query for query in refined)  # the next round did name it
    sent = " ".join(searched_queries(tavily_server)).lower()
    assert sent  # the web was searched, in both rounds
    assert not [secret for secret in SECRETS if secret in sent], searched_queries(tavily_server)
    # Round two's query still went to the web, without the user's words.
    assert any("throughput sqlite3 inserts wal mode" in q for q in searched_queries(tavily_server))
    assert any("private_text_in_public_searches" in w for w in status["warnings"])


async def test_the_user_may_let_their_words_go_to_public_searches(
    research_env: dict[str, str],
    tmp_path: Path,
    brain: ResearchBrain,
    tavily_server: FakeHTTPServer,
) -> None:
    follow_ups_from_findings(brain)
    settings = settings_with_notes(research_env, tmp_path, "private_text_in_public_searches = true")
    state, status = await research(settings)

    assert "Quillmoor" in (state.report or "")
    sent = " ".join(searched_queries(tavily_server)).lower()
    assert "quillmoor" in sent  # allowed: the words went where the query went
    assert not any("private_text_in_public_searches" in w for w in status["warnings"])
