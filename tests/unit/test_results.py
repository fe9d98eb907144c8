"""The published result models against the payloads the real service returns.

Research runs through the real service, its SDKs talking to the loopback fakes; each action's
payload is taken from its dispatch handler before any checking, then validated strictly by its
model, searched for keys the model does not declare (recursively: a nested key the model lacks
is drift), and passed through ``conform`` to show the client gets it unchanged.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from foundry_mcp.config import Settings
from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.context.levels import FIDELITY_BANDS, ContentLevel
from foundry_mcp.errors import FoundryError
from foundry_mcp.research.models import (
    AgentRole,
    BranchStatus,
    Confidence,
    HypothesisVerdict,
    Phase,
    ResearchMode,
    Status,
    Verdict,
)
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from foundry_mcp.server.actions import HANDLERS
from foundry_mcp.server.actions import Call as ActionCall
from foundry_mcp.server.app import _result
from foundry_mcp.server.arguments import parse_arguments
from foundry_mcp.server.envelope import Envelope, compact_text, failure, ok, tool_answer_json
from foundry_mcp.server.results import report as results_report
from foundry_mcp.server.results import status as results_status
from foundry_mcp.server.results.data import (
    RESULT_MODELS,
    ActionResult,
    ErrorData,
    SearchPlan,
    conform,
)
from foundry_mcp.server.results.hints import ACTION_HINTS, tool_annotations, tool_meta
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_tavily
from tests.integration.test_token_management import (
    QUESTION as LONG_QUESTION,
)
from tests.integration.test_token_management import (
    SMALL_WINDOW,
    extractive_summary,
    long_corpus,
    make_settings,
)
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How do vector databases index embeddings?"
COMPARISON = "Compare PostgreSQL, MySQL and SQLite for embedded analytics"
HYPOTHESES = "Why do honeybee colonies collapse in winter?"

Call = tuple[str, dict[str, Any], dict[str, Any]]  # action, its parameters, the raw payload


def undeclared(value: Any, path: str = "data") -> list[str]:
    """The keys, anywhere in a validated result, that no model declares."""
    if isinstance(value, BaseModel):
        found = [f"{path}.{key}" for key in value.model_extra or {}]
        for name in type(value).model_fields:
            found += undeclared(getattr(value, name), f"{path}.{name}")
        return found
    if isinstance(value, list):
        return [key for i, item in enumerate(value) for key in undeclared(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [key for k, item in value.items() for key in undeclared(item, f"{path}.{k}")]
    return []


def check(calls: list[Call]) -> set[str]:
    """Every payload fits its model exactly; returns the models seen."""
    seen = set()
    for action, given, payload in calls:
        model = RESULT_MODELS[action]
        validated = model.model_validate(payload)  # strict: raises on a wrong type
        assert undeclared(validated) == [], f"{action} {given}: not declared on {model.__name__}"
        assert conform(action, payload) == json.loads(json.dumps(payload))
        seen.add(model.__name__)
    return seen


async def run(service: ResearchService, action: str, **given: Any) -> Call:
    """One action through its dispatch handler; the payload before any checking."""
    payload, _ = await HANDLERS[action](service, given, ActionCall())
    return action, given, payload


async def finished(service: ResearchService, question: str, **options: Any) -> list[Call]:
    """Start a research and follow it to the end; the start and the final status."""
    start = await run(service, "deep-research", query=question, max_iterations=1, **options)
    research_id = start[2]["research_id"]
    final = await wait_until(service, research_id, TERMINAL, timeout=60)
    assert final["status"] == "completed", final["error"]
    status = await run(service, "deep-research-status", research_id=research_id)
    return [start, status]


async def test_every_action_returns_what_its_model_declares(
    settings: Settings,
    brain: ResearchBrain,
    tavily_server: FakeHTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # the export's workspace
    async with research_runtime(settings, warm=False) as service:
        calls = await finished(service, QUESTION)
        rid = calls[0][2]["research_id"]
        source_id = service.store.load(rid).sources[0].id
        calls += [
            await run(service, "deep-research-report", research_id=rid, max_chars=1000),
            await run(service, "deep-research-evidence", research_id=rid),
            await run(service, "deep-research-list", limit=5),
            await run(service, "deep-research-events", research_id=rid, limit=500),
            await run(service, "deep-research-export", research_id=rid, format="markdown"),
            await run(
                service, "deep-research-export", research_id=rid, format="json", path="r.json"
            ),
            # A follow-up the sources answer, and one they do not.
            await run(service, "deep-research-ask", research_id=rid, query="Which practitioners?"),
            await run(service, "deep-research-ask", research_id=rid, query="Martian penguins?"),
            await run(service, "deep-research-restore", research_id=rid, item_id=source_id),
            await run(service, "health"),
            await run(service, "deep-research-versions", research_id=rid),
            await run(service, "deep-research-revise", research_id=rid, revise={"kind": "rewrite"}),
        ]
        revised = await wait_until(service, rid, TERMINAL, timeout=60)
        assert revised["status"] == "completed", revised["error"]
        calls.append(await run(service, "deep-research-versions", research_id=rid, version=2))
        # A second research: cancelled while queued, resumed, cancelled again, deleted.
        other = (await run(service, "deep-research", query=QUESTION))[2]["research_id"]
        calls += [
            await run(service, "deep-research-cancel", research_id=other),
            await run(service, "deep-research-resume", research_id=other),
            await run(service, "deep-research-cancel", research_id=other),
            await run(service, "deep-research-delete", research_id=other),
        ]
    # Every published shape but the failure's was met and checked.
    assert check(calls) == {model.__name__ for model in get_args(ActionResult)} - {"ErrorData"}
    assert calls[3][2]["claims"], "the evidence page has no claims to check"
    assert calls[4][2]["items"] and calls[5][2]["events"]


async def test_the_status_tree_of_hierarchical_and_hypotheses_research(
    settings: Settings, brain: ResearchBrain, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        hierarchical = await finished(service, COMPARISON, mode="hierarchical")
        hypotheses = await finished(service, HYPOTHESES, mode="hypotheses")
        reports = [
            await run(service, "deep-research-report", research_id=calls[0][2]["research_id"])
            for calls in (hierarchical, hypotheses)
        ]
    check(hierarchical + hypotheses + reports)
    assert hierarchical[1][2]["tree"]["sub_questions"]
    assert hypotheses[1][2]["tree"]["hypotheses"]


async def test_the_fidelity_blocks_of_shortened_content(
    research_env: dict[str, str], tmp_path: Path, brain: ResearchBrain
) -> None:
    brain.overrides["other"] = extractive_summary
    with fake_tavily(long_corpus(per_query=2, sentences=300)) as tavily:
        small = make_settings(research_env, tmp_path, tavily, SMALL_WINDOW)
        async with research_runtime(small, warm=False) as service:
            calls = await finished(service, LONG_QUESTION, max_sources_per_query=2)
            rid = calls[0][2]["research_id"]
            calls.append(await run(service, "deep-research-report", research_id=rid))
    check(calls)
    assert calls[1][2]["fidelity"]["phases"]
    assert calls[2][2]["fidelity"]["content_fidelity"]


async def test_failures_carry_error_data(settings: Settings, tmp_path: Path) -> None:
    errors: list[FoundryError] = []
    async with research_runtime(settings, warm=False) as service:
        for attempt in (
            lambda: service.status("deepres-000000000000"),
            lambda: service.status("not-an-id"),
        ):
            with pytest.raises(FoundryError) as caught:
                await attempt()
            errors.append(caught.value)
        with pytest.raises(FoundryError) as caught:
            parse_arguments({"action": "deep-research-list", "limit": 0})
        errors.append(caught.value)
    errors.append(FoundryError("Boom.", details={"field": "path", "reason": "too_large"}))
    for error in errors:
        data = failure(error).data
        validated = ErrorData.model_validate(data)
        assert undeclared(validated) == [], data
    assert {e.error_code for e in errors} >= {"RESEARCH_NOT_FOUND", "VALIDATION_ERROR"}


def test_the_word_lists_spell_the_research_enumerations() -> None:
    def words(literal: Any) -> set[str]:
        return set(get_args(literal))

    assert words(results_status.StatusName) == {s.value for s in Status}
    assert words(results_status.PhaseName) == {p.value for p in Phase}
    assert words(results_status.ModeName) == {m.value for m in ResearchMode}
    assert words(results_status.AgentName) == {a.value for a in AgentRole}
    assert words(results_status.BranchStatusName) == {b.value for b in BranchStatus}
    assert words(results_status.ConfidenceName) == {c.value for c in Confidence}
    assert words(results_status.HypothesisVerdictName) == {v.value for v in HypothesisVerdict}
    assert words(results_status.FidelityBand) == {name for _, name in FIDELITY_BANDS}
    assert words(results_report.VerdictName) == {v.value for v in Verdict}
    assert words(results_report.ContentLevelName) == {c.value for c in ContentLevel}
    strategy = ResearchSettings.model_fields["deep_research_search_strategy"].annotation
    assert words(SearchPlan.model_fields["strategy"].annotation) == words(strategy)


def test_every_action_has_a_model_and_hints_and_every_model_is_published() -> None:
    assert set(RESULT_MODELS) == set(HANDLERS) == set(ACTION_HINTS)
    published = set(get_args(ActionResult))
    assert set(RESULT_MODELS.values()) <= published
    assert published == {*RESULT_MODELS.values(), ErrorData}
    # One shape per action.
    assert len(set(RESULT_MODELS.values())) == len(RESULT_MODELS)


def test_the_tool_hints_are_those_of_its_least_careful_action() -> None:
    annotations = tool_annotations()
    assert annotations.read_only_hint is False
    assert annotations.destructive_hint is True  # delete, and export with overwrite
    assert annotations.idempotent_hint is False  # every start is a new research
    assert annotations.open_world_hint is True
    hints = tool_meta()["foundry-mcp/actions"]
    assert (
        "deep-research-delete" in hints["destructive"]
        and "deep-research-delete" in hints["idempotent"]
    )
    assert {"deep-research-status", "health"} <= set(hints["readOnly"])
    assert "deep-research-resume" not in hints["idempotent"] + hints["readOnly"]


def test_a_payload_that_does_not_fit_is_logged_and_returned_unchanged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    drifted = {"research_id": "deepres-0123456789ab", "deleted": "yes, gone", "new_key": None}
    with caplog.at_level(logging.ERROR, logger="foundry_mcp.server.results.data"):
        assert conform("deep-research-delete", drifted) is drifted
    assert "does not fit DeleteResult" in caplog.text and "deleted" in caplog.text
    # An extra key is not drift at runtime: it passes through.
    fits = {"research_id": "deepres-0123456789ab", "deleted": True, "new_key": None}
    assert conform("deep-research-delete", fits) == fits


def test_the_text_content_is_the_envelope_without_nulls() -> None:
    envelope = Envelope(success=True, data={"a": None, "b": [None, {"c": None, "d": 1}], "e": {}})
    text = compact_text(envelope.model_dump(mode="json"))
    assert "\n" not in text and ": " not in text
    assert json.loads(text) == {
        "success": True,
        "data": {"b": [None, {"d": 1}], "e": {}},
        "meta": json.loads(envelope.meta.model_dump_json()),
    }


@pytest.mark.parametrize(
    "envelope",
    [
        ok({"status": "running", "ratio": 1e-05, "query": "é \u2028 </script>", "x": None}, ["w"]),
        failure(FoundryError("No such research.", details={"field": "research_id", "n": None})),
    ],
)
def test_a_quick_answer_is_the_sdk_answer_encoded_once(envelope: Envelope) -> None:
    """What ``server.team.quick_answers`` sends is what the SDK would send for the same result."""
    sdk = _result(envelope).model_dump(by_alias=True, mode="json", exclude_none=True)
    quick = json.loads(tool_answer_json(7, envelope))
    assert quick == {"jsonrpc": "2.0", "id": 7, "result": sdk}


def test_every_answer_gets_its_own_request_id() -> None:
    ids = {ok({}).meta.request_id for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"req-[0-9a-f]{12}", request_id) for request_id in ids)
