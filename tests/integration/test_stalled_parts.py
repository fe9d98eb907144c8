"""A part of a research that stops moving never holds the research: it is stopped, named in the
status, and the research goes on without it (a resume researches it again).

The stalled part is made by a supervisor hook that waits for ever when the Valkey part's
researcher reaches its analysis: the part then waits on nothing any provider timeout would end,
the shape of a deadlock. A part whose own phase runs past its timeout is stopped the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.research.models import BranchStatus, Phase, ResearchState
from foundry_mcp.research.workflow.supervisor import SupervisorHooks
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "Compare Valkey, Memcached and Hazelcast for eviction latency"


class HangsInValkeyAnalysis(SupervisorHooks):
    """Waits for ever when the Valkey part's researcher starts its analysis phase."""

    def __init__(self) -> None:
        self.hung = 0

    async def on_phase_start(self, state: ResearchState, phase: Phase) -> None:
        if state.branch and "Valkey" in state.query and phase is Phase.ANALYSIS:
            self.hung += 1
            await anyio.sleep_forever()


def with_config(research_env: dict[str, str], tmp_path: Path, text: str) -> Settings:
    config = tmp_path / "extra.toml"
    config.write_text(
        "[research]\n" + text + "\n\n[research.fetch]\nenabled = false\n\n"
        "[providers.openai]\nmax_retries = 0\n\n[providers.tavily]\nmax_retries = 0\n"
    )
    env = {**research_env, "FOUNDRY_MCP_CONFIG": str(config)}
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


def valkey_part(state: ResearchState) -> Any:
    (part,) = [sq for sq in state.sub_questions if "Valkey" in sq.question]
    return part


async def test_a_part_that_stops_moving_is_stopped_named_and_the_research_goes_on(
    research_env: dict[str, str], tmp_path: Path, brain: ResearchBrain
) -> None:
    settings = with_config(research_env, tmp_path, "deep_research_stall_timeout = 3")
    hooks = HangsInValkeyAnalysis()
    async with research_runtime(settings, hooks, warm=False) as service:
        started = await service.start(QUESTION, mode="hierarchical", max_iterations=1)
        research_id = started["research_id"]
        status = await wait_until(service, research_id, TERMINAL, timeout=60)
        state = service.store.load(research_id)
    assert hooks.hung == 1
    assert status["status"] == "completed", status
    part = valkey_part(state)
    assert part.status is BranchStatus.FAILED
    assert "made no progress for 3 s" in (part.error or "")
    # Named in the status, where the caller sees it, with what to do.
    (shown,) = [sq for sq in status["tree"]["sub_questions"] if sq["id"] == part.id]
    assert shown["status"] == "failed" and "resume" in shown["error"]
    assert "1 sub-question(s) were stopped" in status["next_action"]
    assert any("Valkey" in warning and "stopped" in warning for warning in state.warnings)
    # The other parts were answered, and the report rests on them.
    others = [sq for sq in state.sub_questions if sq is not part]
    assert all(sq.status is BranchStatus.COMPLETED for sq in others)
    assert state.report and "## " in state.report


async def test_a_resumed_research_researches_the_stopped_part_again(
    research_env: dict[str, str], tmp_path: Path, brain: ResearchBrain
) -> None:
    settings = with_config(research_env, tmp_path, "deep_research_stall_timeout = 3")
    hooks = HangsInValkeyAnalysis()
    async with research_runtime(settings, hooks, warm=False) as service:
        started = await service.start(QUESTION, mode="hierarchical", max_iterations=1)
        research_id = started["research_id"]
        await wait_until(service, research_id, TERMINAL, timeout=60)
    # A new server without the hang: the stopped part is what a resume takes up.
    async with research_runtime(settings, warm=False) as service:
        await service.resume(research_id)
        status = await wait_until(service, research_id, {"completed", "failed"}, timeout=60)
        state = service.store.load(research_id)
    assert status["status"] == "completed", status
    assert all(sq.status is BranchStatus.COMPLETED for sq in state.sub_questions)
    assert valkey_part(state).error is None


async def test_a_part_whose_phase_runs_past_its_timeout_is_stopped_alone(
    research_env: dict[str, str],
    tmp_path: Path,
    brain: ResearchBrain,
    tavily_server: FakeHTTPServer,
) -> None:
    settings = with_config(research_env, tmp_path, "deep_research_gathering_timeout = 4")

    def slow_for_valkey(request: Any, response: Any) -> float:
        return 12.0 if "valkey" in str((request.json or {}).get("query", "")).lower() else 0.0

    tavily_server.delay = slow_for_valkey
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, mode="hierarchical", max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=60)
        state = service.store.load(started["research_id"])
    assert status["status"] == "completed", status
    part = valkey_part(state)
    assert part.status is BranchStatus.FAILED
    assert "gathering phase ran past its timeout of 4 s" in (part.error or "")
    others = [sq for sq in state.sub_questions if sq is not part]
    assert all(sq.status is BranchStatus.COMPLETED for sq in others), others
