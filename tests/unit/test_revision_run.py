"""A revision's run: its steps in order, each saved before the next, a stopped one going on
from its step, and a refresh that found nothing new asking no model.

The steps' own work (searching, reading, writing) is stood in for: what is tested is the walk.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from foundry_mcp.research.llm.calls import CallLog
from foundry_mcp.research.models import (
    Finding,
    Phase,
    ReportMetadata,
    ResearchState,
    Revision,
    RevisionKind,
    RevisionStep,
    Source,
    Status,
    WritingInstructions,
)
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.revision import run
from foundry_mcp.research.revision.changes import REFRESH_HEADING
from foundry_mcp.research.revision.run import revise
from foundry_mcp.research.revision.starting import new_revision

pytestmark = pytest.mark.anyio
REPORT = "# Heat pumps\n\nThey work [1].\n\n## Sources\n\n[1] A survey - https://a.example\n"


class NoModel:
    """A kit's LLM that must not be asked anything."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the model was used ({name}) where no call is made")


class Walk:
    """The steps stood in for, recording what ran, in which phase, and what was saved."""

    def __init__(self, state: ResearchState, monkeypatch: pytest.MonkeyPatch) -> None:
        self.state = state
        self.ran: list[tuple[str, Phase]] = []
        self.saved: list[RevisionStep | None] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.fail_in: str | None = None
        self.found: list[str] = []  # the new pages a gathering finds
        state.attach(lambda kind, data: self.events.append((kind, data)))
        for kind in (RevisionKind.DEEPEN, RevisionKind.REFRESH):
            monkeypatch.setitem(run._GATHERERS, kind, self.step("gather"))
        monkeypatch.setattr(run, "analyze_new", self.step("analyze"))
        monkeypatch.setattr(run, "write_again", self.step("write"))

    def step(self, name: str) -> Any:
        async def work(kit: ResearchKit, state: ResearchState, revision: Revision) -> None:
            self.ran.append((name, state.phase))
            if name == self.fail_in:
                raise RuntimeError(f"{name} stopped")
            if name == "gather":
                state.search_calls += 3
                revision.changes.new_source_ids += self.found
            if name == "write":
                state.report = f"# Report written again ({revision.kind.value})\n"

        return work

    def kit(self) -> ResearchKit:
        async def checkpoint() -> None:
            revision = self.state.revision
            self.saved.append(revision.step if revision else None)

        model: Any = NoModel()
        return ResearchKit(llm=model, search=[], calls=CallLog(), checkpoint=checkpoint)


def completed() -> ResearchState:
    return ResearchState(
        query="How do heat pumps work in cold climates?",
        llm_provider="openai",
        llm_model="gpt-test",
        status=Status.COMPLETED,
        report=REPORT,
        report_metadata=ReportMetadata(cited_source_ids=["src-aaaaaaaa"]),
        sources=[Source(id="src-aaaaaaaa", title="A survey", url="https://a.example")],
        findings=[Finding(content="They work.", source_ids=["src-aaaaaaaa"])],
        completed_at=datetime(2026, 3, 1, tzinfo=UTC),
        search_calls=5,
    )


async def test_a_deepen_walks_its_steps_in_order_saving_after_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = completed()
    walk = Walk(state, monkeypatch)
    walk.found = ["src-bbbbbbbb"]
    new_revision(state, RevisionKind.DEEPEN, part="What do they cost to run?")
    await revise(walk.kit(), state)
    assert walk.ran == [
        ("gather", Phase.GATHERING),
        ("analyze", Phase.ANALYSIS),
        ("write", Phase.SYNTHESIS),
    ]
    assert walk.saved == [RevisionStep.ANALYSIS, RevisionStep.WRITING, RevisionStep.DONE, None]
    assert state.revision is None
    assert [(v.number, v.kind) for v in state.versions] == [
        (1, RevisionKind.RESEARCH),
        (2, RevisionKind.DEEPEN),
    ]
    second = state.versions[1]
    assert second.report == state.report == "# Report written again (deepen)\n"
    assert second.part == "What do they cost to run?" and second.cost.search_calls == 3
    assert second.changes is not None and second.changes.new_source_ids == ["src-bbbbbbbb"]
    steps = [data["step"] for kind, data in walk.events if kind == "revision_step"]
    assert steps == ["gathering", "analysis", "writing"]
    assert ("version_added", {"number": 2, "kind": "deepen", "llm_calls": 0}) in walk.events


async def test_a_rewrite_only_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    state = completed()
    walk = Walk(state, monkeypatch)
    new_revision(state, RevisionKind.REWRITE)
    await revise(walk.kit(), state)
    assert walk.ran == [("write", Phase.SYNTHESIS)]
    assert walk.saved == [RevisionStep.DONE, None]
    assert state.versions[-1].kind is RevisionKind.REWRITE and state.versions[-1].changes is None


async def test_a_stopped_revision_goes_on_from_its_step(monkeypatch: pytest.MonkeyPatch) -> None:
    state = completed()
    walk = Walk(state, monkeypatch)
    walk.found = ["src-bbbbbbbb"]
    new_revision(state, RevisionKind.REFRESH)
    walk.fail_in = "analyze"
    with pytest.raises(RuntimeError):
        await revise(walk.kit(), state)
    assert state.revision is not None and state.revision.step is RevisionStep.ANALYSIS
    assert walk.saved == [RevisionStep.ANALYSIS]  # saved once its searches were made
    assert len(state.versions) == 1
    walk.fail_in = None
    walk.ran.clear()
    await revise(walk.kit(), state)  # resumed: the searches are not made again
    assert [name for name, _ in walk.ran] == ["analyze", "write"]
    assert [v.kind for v in state.versions] == [RevisionKind.RESEARCH, RevisionKind.REFRESH]
    assert state.versions[-1].cost.search_calls == 3


async def test_a_refresh_that_found_nothing_new_asks_no_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = completed()
    walk = Walk(state, monkeypatch)
    new_revision(state, RevisionKind.REFRESH)
    await revise(walk.kit(), state)  # NoModel: any call fails the test
    assert [name for name, _ in walk.ran] == ["gather"]  # no analysis, no writing
    version = state.versions[-1]
    assert version.kind is RevisionKind.REFRESH and version.changes is not None
    assert version.changes.nothing_new
    assert version.cost.total.calls == 0 and version.cost.search_calls == 3
    assert state.report == version.report
    assert state.report.startswith("# Heat pumps\n\nThey work [1].\n\n" + REFRESH_HEADING)
    assert "since 2026-03-01 (3 searches), and 1 cited page read again" in state.report
    assert state.report.endswith("[1] A survey - https://a.example\n")


async def test_nothing_new_is_still_written_when_the_caller_asked_for_other_writing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = completed()
    walk = Walk(state, monkeypatch)
    asked = WritingInstructions(language="German")
    new_revision(state, RevisionKind.REFRESH, instructions=asked)
    await revise(walk.kit(), state)
    assert [name for name, _ in walk.ran] == ["gather", "write"]


async def test_a_research_with_no_revision_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    state = completed()
    walk = Walk(state, monkeypatch)
    await revise(walk.kit(), state)
    assert walk.ran == [] and walk.saved == [] and state.versions == []
