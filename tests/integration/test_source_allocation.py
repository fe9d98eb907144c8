"""Seed 003's allocation end to end: the planner splits the work between the user's documents
and the web, each side is searched only with its providers, and both run at once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.providers.search import local as local_module
from foundry_mcp.providers.search.local import LocalDocuments
from foundry_mcp.research.models import ResearchState, SearchTarget
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "Do heat pumps work in cold climates?"
LATENCY = 0.3  # seconds each search takes, on both sides


def _settings(research_env: dict[str, str], tmp_path: Path, *, web: bool = True) -> Settings:
    notes = tmp_path / "notes"
    notes.mkdir()
    # The fake planner aims at the documents the angle their names share words with.
    (notes / "limitations.md").write_text(
        "# Limitations and risks of heat pumps\n\nOur field log: heat pumps in cold climates "
        "lost efficiency below minus twenty degrees; defrost cycles cost ten percent.\n"
    )
    (notes / "install-log.md").write_text(
        "# Installation log\n\nThe heat pumps were installed in January in a cold climate.\n"
    )
    config = Path(research_env["FOUNDRY_MCP_CONFIG"])
    config.write_text(config.read_text() + f'\n[research.local]\npaths = ["{notes}"]\n')
    env = dict(research_env)
    if not web:  # no key, and no web search with no key either
        env.pop("TAVILY_API_KEY")
        env["FOUNDRY_MCP_SEARCH_PROVIDERS"] = "local"
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


async def _research(settings: Settings, **options: Any) -> ResearchState:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, max_iterations=1, **options)
        status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        return service.store.load(started["research_id"])


@pytest.mark.parametrize("mode", ["simple", "auto"])
async def test_the_planner_splits_the_work_and_both_sides_search_at_once(
    research_env: dict[str, str],
    tmp_path: Path,
    brain: ResearchBrain,
    tavily_server: FakeHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    monkeypatch.setattr(local_module, "SCAN_INTERVAL", 0.0)
    spans: dict[str, tuple[float, float]] = {}  # local query -> when its search ran
    search_index = LocalDocuments._search_sync

    def slow_local_search(self: LocalDocuments, query: str, max_results: int) -> Any:
        started = time.time()
        time.sleep(LATENCY)
        try:
            return search_index(self, query, max_results)
        finally:
            spans[query] = (started, time.time())

    monkeypatch.setattr(LocalDocuments, "_search_sync", slow_local_search)
    tavily_server.latency = LATENCY
    state = await _research(_settings(research_env, tmp_path), mode=mode)

    # The planner saw the fenced sample and was asked to allocate.
    planner_prompts = [
        (system, user) for agent, system, user in brain.history if agent == "planner"
    ]
    assert len(planner_prompts) == 1
    system, user = planner_prompts[0]
    assert '"target": "local|web|both"' in system
    assert "<documents>\n- limitations.md — Limitations and risks of heat pumps" in user
    assert "- install-log.md — Installation log" in user

    by_target = {sq.target: sq for sq in state.sub_queries}
    assert set(by_target) == set(SearchTarget) and len(state.sub_queries) == 3
    local, web, both = (
        by_target[t] for t in (SearchTarget.LOCAL, SearchTarget.WEB, SearchTarget.BOTH)
    )
    assert "limitations" in local.query
    assert (local.providers, web.providers, set(both.providers)) == (
        ["local"],
        ["tavily"],
        {"tavily", "local"},
    )
    sent_to_tavily = {r.json["query"] for r in tavily_server.requests_to("/search") if r.json}
    assert sent_to_tavily == {web.query, both.query}
    assert set(spans) == {local.query, both.query}
    assert any(s.provider == "local" for s in state.sources)
    assert any(s.provider == "tavily" for s in state.sources)

    (decision,) = [d for d in state.decisions if d.action == "allocate_sources"]
    assert decision.outputs is not None
    assert (decision.outputs["local"], decision.outputs["web"], decision.outputs["both"]) == (
        1,
        1,
        1,
    )
    assert "the user's documents" in decision.outputs["allocation_strategy"]

    # The documents-only search and the web-only search of the round overlapped in time.
    local_started, local_ended = spans[local.query]
    (web_request,) = [
        r for r in tavily_server.requests_to("/search") if r.json and r.json["query"] == web.query
    ]
    assert local_started < web_request.timestamp + LATENCY
    assert web_request.timestamp < local_ended


async def test_hierarchical_researchers_allocate_their_own_sub_questions(
    research_env: dict[str, str], tmp_path: Path, brain: ResearchBrain
) -> None:
    settings = _settings(research_env, tmp_path)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(
            "Compare heat pumps, gas boilers and pellet stoves for cold climates",
            max_iterations=1,
            mode="hierarchical",
        )
        status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        branches = service.store.load_branches(started["research_id"])
    assert len(branches) == 3
    researcher_prompts = [
        user for agent, system, user in brain.history if agent == "planner" and "larger" in user
    ]
    assert len(researcher_prompts) == 3
    assert all("<documents>" in user for user in researcher_prompts)
    for branch in branches.values():
        assert any(d.action == "allocate_sources" for d in branch.decisions)


@pytest.mark.parametrize("web", [False, True], ids=["documents only", "web only"])
async def test_one_kind_of_source_means_no_allocation(
    research_env: dict[str, str], tmp_path: Path, brain: ResearchBrain, web: bool
) -> None:
    if web:
        settings = load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))
    else:
        settings = _settings(research_env, tmp_path, web=False)
    state = await _research(settings, mode="simple")
    assert state.search_providers == (["tavily"] if web else ["local"])
    assert all("<documents>" not in user for agent, _, user in brain.history if agent == "planner")
    assert all(sq.target is SearchTarget.BOTH for sq in state.sub_queries)
    assert not any(d.action == "allocate_sources" for d in state.decisions)
