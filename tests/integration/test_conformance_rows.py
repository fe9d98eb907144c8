"""Rows of docs/conformance.md that no other test showed: kept reports, quality ratings,
read-only providers and the documented defaults."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import Phase, ResearchState, SourceQuality, Status
from foundry_mcp.research.workflow.supervisor import SupervisorHooks
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def _inside(path: Path, directory: Path) -> bool:
    return path.resolve().is_relative_to(Path(directory).resolve())


class HoldBeforeRefinement(SupervisorHooks):
    """Holds the research when its first refinement is about to start."""

    def __init__(self) -> None:
        self.reached = anyio.Event()
        self.release = anyio.Event()

    async def on_phase_start(self, state: ResearchState, phase: Phase) -> None:
        if phase is Phase.REFINEMENT and not self.release.is_set():
            self.reached.set()
            await self.release.wait()


async def test_a_cancelled_research_keeps_the_report_it_had_with_a_warning(
    settings: Settings,
) -> None:
    hooks = HoldBeforeRefinement()
    async with research_runtime(settings, hooks, warm=False) as service:
        started = await service.start("How do LSM trees compact?", max_iterations=2)
        research_id = started["research_id"]
        with anyio.fail_after(30):
            await hooks.reached.wait()
        await service.cancel(research_id)
        hooks.release.set()
        status = await wait_until(service, research_id, TERMINAL)
        report, warnings = await service.report(research_id)
    assert status["status"] == "cancelled"
    assert report["status"] == "cancelled" and "LSM" in report["report"]
    assert any("unfinished run" in w for w in warnings)


async def test_the_analysts_quality_ratings_are_kept_on_the_sources(
    settings: Settings, brain: ResearchBrain
) -> None:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What is a write-ahead log?", mode="simple", max_iterations=1)
        await wait_until(service, started["research_id"], TERMINAL)
        state = service.store.load(started["research_id"])
    assert state.status is Status.COMPLETED
    rated = {s.quality for s in state.sources if s.analyzed}
    # The fake analyst rates the first source of each call high and the others medium.
    assert SourceQuality.HIGH in rated and SourceQuality.UNKNOWN not in rated


async def test_providers_are_only_read_and_nothing_is_written_outside_the_store(
    settings: Settings,
    tmp_path: Path,
    openai_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
) -> None:
    before = _files(tmp_path)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start("What is a bloom filter?", max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
    assert status["status"] == "completed"
    asked = {(r.method, r.path) for r in [*openai_server.requests, *tavily_server.requests]}
    assert asked <= {("POST", "/v1/chat/completions"), ("POST", "/search")}  # searches, prompts
    written = _files(tmp_path) - before
    assert written and all(_inside(p, settings.research.research_dir) for p in written)


def test_max_iterations_defaults_to_three(settings: Settings) -> None:
    assert settings.research.deep_research_max_iterations == 3
    assert Settings().research.deep_research_max_iterations == 3


def test_the_suggested_assistant_overheads_are_documented() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text("utf-8")
    table = text.split("| assistant | `assistant_overhead` |", 1)[1].split("\n\n", 1)[0]
    for assistant, tokens in (
        ("Claude Code", "60000"),
        ("Cursor", "40000"),
        ("Codex, OpenCode", "30000"),
        ("Gemini CLI", "20000"),
        ("directly", "10000"),
    ):
        row = next(line for line in table.splitlines() if assistant in line)
        assert tokens in row, row
