"""A revision requested: which researches may be revised, what a request may hold, and what it
records before its run (the first version, the usage it starts from, its step)."""

from __future__ import annotations

import importlib
import sys
import types
from datetime import UTC, datetime

import pytest

from foundry_mcp.errors import InputError, InvalidStateError
from foundry_mcp.research.models import (
    Finding,
    LLMCallRecord,
    ReportForm,
    ResearchState,
    RevisionKind,
    RevisionStep,
    Status,
    SubQuestion,
    WritingInstructions,
)
from foundry_mcp.research.revision import starting
from foundry_mcp.research.revision.starting import new_revision

DEEPEN_MODULE = "foundry_mcp.research.revision.deepen"


def stand_in_resolve_part(state: ResearchState, part: str) -> tuple[str | None, str]:
    """A sub-question's id resolves to it; "nothing" to nothing; anything else is a question."""
    known = {sq.id: sq.question for sq in state.sub_questions}
    if part in known:
        return part, known[part]
    return None, "" if part == "nothing" else part


@pytest.fixture(autouse=True)
def parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deepen module's ``resolve_part`` (another room's rules) stood in for."""
    if hasattr(starting, "resolve_part"):
        monkeypatch.setattr(starting, "resolve_part", stand_in_resolve_part)
        return
    try:
        deepen = importlib.import_module(DEEPEN_MODULE)
    except ImportError:
        module = types.ModuleType(DEEPEN_MODULE)
        module.resolve_part = stand_in_resolve_part  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, DEEPEN_MODULE, module)
    else:
        monkeypatch.setattr(deepen, "resolve_part", stand_in_resolve_part)


def completed(**fields: object) -> ResearchState:
    state = ResearchState(
        query="How do heat pumps work in cold climates?",
        llm_provider="openai",
        llm_model="gpt-test",
        status=Status.COMPLETED,
        iteration=2,
        report="# Heat pumps\n\nThey work [1].\n",
        completed_at=datetime(2026, 3, 1, tzinfo=UTC),
        findings=[Finding(content="They work.", source_ids=["src-aaaaaaaa"])],
        search_calls=7,
    )
    state.llm_usage.add(
        LLMCallRecord(
            provider="openai",
            model="gpt-test",
            phase="synthesis",
            purpose="synthesis",
            input_tokens=900,
            output_tokens=90,
        )
    )
    return state.model_copy(update=fields)


def test_a_rewrite_keeps_the_report_as_version_one_and_starts_at_writing() -> None:
    state = completed()
    asked = WritingInstructions(form=ReportForm.BRIEF, language="de")
    revision = new_revision(state, RevisionKind.REWRITE, instructions=asked)
    assert state.revision is revision
    assert revision.step is RevisionStep.WRITING
    assert revision.iteration == state.iteration == 2  # a rewrite searches nothing
    assert revision.instructions.language == "German"  # the code, as the language's name
    assert [(v.number, v.kind) for v in state.versions] == [(1, RevisionKind.RESEARCH)]
    first = state.versions[0]
    assert first.report == state.report and first.cost.total.input_tokens == 900
    assert first.cost.search_calls == 7
    assert revision.base_version == 1
    assert revision.usage_before["total"].input_tokens == 900
    assert revision.usage_before["synthesis"].calls == 1
    assert revision.search_calls_before == 7
    assert revision.finding_ids_before == [state.findings[0].id]
    # The snapshot is a copy: calls made after do not move it.
    state.llm_usage.total.input_tokens += 50
    assert revision.usage_before["total"].input_tokens == 900


def test_a_deepen_and_a_refresh_search_in_a_new_iteration() -> None:
    state = completed(sub_questions=[SubQuestion(id="sqn-1", question="What of defrosting?")])
    deepen = new_revision(state, RevisionKind.DEEPEN, part=" sqn-1 ", max_searches=4)
    assert deepen.step is RevisionStep.GATHERING
    assert (deepen.part, deepen.part_id, deepen.part_question) == (
        "sqn-1",
        "sqn-1",
        "What of defrosting?",
    )
    assert deepen.iteration == state.iteration == 3
    assert deepen.max_searches == 4 and deepen.since is None

    state = completed()
    first_done = state.completed_at
    refresh = new_revision(state, RevisionKind.REFRESH)
    assert refresh.step is RevisionStep.GATHERING and refresh.iteration == 3
    assert refresh.since == first_done  # what is new came after the version it revises
    own = new_revision(completed(), RevisionKind.DEEPEN, part="What do they cost to run?")
    assert (own.part_id, own.part_question) == (None, "What do they cost to run?")


def test_versions_already_kept_are_not_kept_again() -> None:
    state = completed()
    new_revision(state, RevisionKind.REWRITE)
    state.revision = None
    again = new_revision(state, RevisionKind.REWRITE)
    assert len(state.versions) == 1 and again.base_version == 1


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"status": Status.RUNNING}, "running"),
        ({"status": Status.QUEUED}, "queued"),
        ({"report": None}, "no report"),
        ({"status": Status.FAILED}, "not final"),
        ({"status": Status.CANCELLED}, "not final"),
    ],
)
def test_only_a_completed_research_with_a_report_is_revised(
    fields: dict[str, object], said: str
) -> None:
    state = completed(**fields)
    with pytest.raises(InvalidStateError, match=said) as caught:
        new_revision(state, RevisionKind.REWRITE)
    assert caught.value.remediation
    assert state.revision is None and not state.versions


def test_a_revision_that_stopped_unfinished_is_replaced() -> None:
    state = completed()
    stopped = new_revision(state, RevisionKind.REFRESH)
    state.status = Status.CANCELLED
    rewrite = new_revision(state, RevisionKind.REWRITE)
    assert state.revision is rewrite and rewrite.id != stopped.id
    assert any(d.action == "replace_revision" for d in state.decisions)
    assert len(state.versions) == 1


@pytest.mark.parametrize(
    ("kind", "options", "field"),
    [
        (RevisionKind.DEEPEN, {}, "part"),
        (RevisionKind.DEEPEN, {"part": "   "}, "part"),
        (RevisionKind.DEEPEN, {"part": "nothing"}, "part"),
        (RevisionKind.REWRITE, {"part": "sqn-1"}, "part"),
        (RevisionKind.REFRESH, {"part": "sqn-1"}, "part"),
        (RevisionKind.REWRITE, {"max_searches": 3}, "max_searches"),
        (
            RevisionKind.REWRITE,
            {"instructions": WritingInstructions(language="Klingon")},
            "language",
        ),
    ],
)
def test_a_request_its_kind_cannot_take_names_the_field(
    kind: RevisionKind, options: dict[str, object], field: str
) -> None:
    state = completed()
    with pytest.raises(InputError) as caught:
        new_revision(state, kind, **options)  # type: ignore[arg-type]
    assert caught.value.details == {"field": field}
    assert caught.value.remediation
    assert state.revision is None and not state.versions and state.iteration == 2
