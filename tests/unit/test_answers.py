"""Model answers read leniently, in one place: the reader keeps what is readable, drops (and
counts) what is not, and the one helper every agent asks through repairs a wholly unreadable
answer once before the agent falls back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, Field, field_validator

from foundry_mcp.errors import ProviderError
from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.jsonparse import NO_OBJECT, read_answer
from foundry_mcp.research.models import (
    AgentRole,
    AnalyzerOutput,
    Confidence,
    PlannerOutput,
    ResearchState,
    SearchTarget,
    Severity,
    SourceQuality,
)
from foundry_mcp.research.models.handoffs import RefinerOutput
from foundry_mcp.research.prompts.repair import REPAIR_SYSTEM

A, B = "src-aaaaaaaa", "src-bbbbbbbb"


def _finding(content: str, **fields: Any) -> dict[str, Any]:
    return {"content": content, "confidence": "high", "source_ids": [A], **fields}


# --------------------------------------------------------------------------- the reader


def test_a_mistyped_field_of_a_listed_item_is_dropped_and_the_item_kept() -> None:
    answer = {
        "findings": [
            _finding("Heat pumps cut bills.", parts={"sq-1": True}),
            _finding("They work in frost.", parts=["sq-2"]),
        ],
        "gaps": [{"description": "Noise is unknown.", "suggested_queries": ["noise"]}],
    }
    reading = read_answer(json.dumps(answer), AnalyzerOutput)
    output = reading.value
    assert output is not None
    assert [f.content for f in output.findings] == ["Heat pumps cut bills.", "They work in frost."]
    first, second = output.findings
    assert (first.parts, first.confidence, first.source_ids) == ([], Confidence.HIGH, [A])
    assert second.parts == ["sq-2"]
    assert [g.description for g in output.gaps] == ["Noise is unknown."]
    assert reading.dropped == ("findings[0].parts",)


def test_an_unreadable_item_is_dropped_and_counted_its_siblings_kept() -> None:
    answer = {
        "findings": [
            {"confidence": "high", "source_ids": [A]},  # no text: not a finding
            _finding("Kept."),
            "a loose remark",
            _finding("Kept too.", source_ids=[A, {"id": B}]),  # one unreadable source id
        ],
        "quality_updates": [
            {"source_id": A, "quality": "superb"},
            {"source_id": B, "quality": "high"},
        ],
    }
    reading = read_answer(json.dumps(answer), AnalyzerOutput)
    assert reading.value is not None
    assert [f.content for f in reading.value.findings] == ["Kept.", "Kept too."]
    assert reading.value.findings[1].source_ids == [A]
    assert [(u.source_id, u.quality) for u in reading.value.quality_updates] == [
        (B, SourceQuality.HIGH)
    ]
    assert set(reading.dropped) == {
        "findings[0]",
        "findings[2]",
        "findings[3].source_ids[1]",
        "quality_updates[0]",
    }


def test_nested_models_are_read_field_by_field() -> None:
    answer = {
        "gap_analysis": [
            {
                "gap_id": "gap-00000001",
                "severity": {"level": "critical"},
                "follow_up_queries": [
                    {"query": "heat pump noise", "expected_contribution": ["decibels"]},
                    {"expected_contribution": "no query"},
                ],
            }
        ],
        "iteration_recommendation": {"should_iterate": True, "rationale": {"why": "noise"}},
        "report_improvements": ["Compare costs."],
    }
    reading = read_answer(json.dumps(answer), RefinerOutput)
    output = reading.value
    assert output is not None
    assessment = output.gap_analysis[0]
    assert assessment.severity is Severity.MODERATE  # its default
    assert [q.query for q in assessment.follow_up_queries] == ["heat pump noise"]
    assert assessment.follow_up_queries[0].expected_contribution == "decibels"  # one item listed
    assert output.iteration_recommendation.should_iterate is True
    assert output.iteration_recommendation.rationale == ""
    assert output.report_improvements == ["Compare costs."]
    assert set(reading.dropped) == {
        "gap_analysis[0].severity",
        "gap_analysis[0].follow_up_queries[1]",
        "iteration_recommendation.rationale",
    }
    assert reading.coerced == ("gap_analysis[0].follow_up_queries[0].expected_contribution",)


def test_common_slips_are_coerced_where_the_meaning_is_clear() -> None:
    answer = {
        "findings": {"content": "One finding, not listed.", "source_ids": A, "confidence": "HIGH"},
        "gaps": [{"description": "Costs.", "suggested_queries": "heat pump cost", "priority": "2"}],
        "contradictions": [{"description": 42, "source_ids": [A, B]}],
    }
    reading = read_answer(json.dumps(answer), AnalyzerOutput)
    output = reading.value
    assert output is not None
    finding = output.findings[0]
    assert (finding.content, finding.source_ids, finding.confidence) == (
        "One finding, not listed.",
        [A],
        Confidence.HIGH,
    )
    assert output.gaps[0].suggested_queries == ["heat pump cost"]
    assert output.gaps[0].priority == 2  # pydantic's own lax reading
    assert output.contradictions[0].description == "42"
    assert reading.dropped == ()
    assert set(reading.coerced) == {
        "findings",
        "findings[0].source_ids",
        "findings[0].confidence",
        "gaps[0].suggested_queries",
        "contradictions[0].description",
    }


def test_the_models_own_lenient_validators_come_first() -> None:
    answer = {
        "research_brief": "Brief.",
        "sub_queries": [
            {"query": "heat pump cost", "target": "documents", "sources": "Notes"},
            {"query": "heat pump noise", "rationale": ["loud?"], "priority": "first"},
        ],
        "assumptions": "not a list",  # the validator reads it as none: nothing dropped here
    }
    reading = read_answer(json.dumps(answer), PlannerOutput)
    output = reading.value
    assert output is not None
    cost, noise = output.sub_queries
    assert (cost.target, cost.sources) == (SearchTarget.LOCAL, ["notes"])
    assert (noise.rationale, noise.priority) == ("loud?", 1)
    assert output.assumptions == []
    assert reading.dropped == ("sub_queries[1].priority",)


class _Titled(BaseModel):
    title: str
    notes: list[str] = Field(default_factory=list)
    count: int = 0

    @field_validator("notes", mode="before")
    @classmethod
    def _lines(cls, value: object) -> object:
        return value.splitlines() if isinstance(value, str) else value


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("I could not find anything useful.", NO_OBJECT),
        ('["a list, not an object"]', NO_OBJECT),
        ('{"notes": ["no title"], "count": 2}', "title: Field required"),
        ('{"title": {"text": "an object"}, "count": 2}', "title: Input should be a valid string"),
    ],
)
def test_an_unreadable_answer_says_why(text: str, why: str) -> None:
    reading = read_answer(text, _Titled)
    assert reading.value is None
    assert any(why in error for error in reading.errors), reading.errors


def test_a_validator_still_gets_the_raw_value_and_wrong_counts_go() -> None:
    reading = read_answer('{"title": "T", "notes": "a\\nb", "count": "many"}', _Titled)
    assert reading.value == _Titled(title="T", notes=["a", "b"], count=0)
    assert reading.dropped == ("count",)


# --------------------------------------------------------------------------- the helper


class Model:
    """The model's side: the next scripted text per call, the prompts remembered."""

    def __init__(self, *answers: str | Exception) -> None:
        self.answers = list(answers)
        self.prompts: list[tuple[str, str]] = []

    async def __call__(self, system: str, user: str) -> str:
        self.prompts.append((system, user))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Heard:
    """The events a research state emitted."""

    def __init__(self, state: ResearchState) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        state.attach(lambda kind, data: self.events.append((kind, data)))

    def __call__(self, kind: str) -> list[dict[str, Any]]:
        return [data for k, data in self.events if k == kind]


def _state() -> tuple[ResearchState, Heard]:
    state = ResearchState(query="Are heat pumps worth it?", llm_provider="p", llm_model="m")
    return state, Heard(state)


GOOD = json.dumps({"findings": [_finding("Heat pumps cut bills.")]})


@pytest.mark.anyio
async def test_a_partly_readable_answer_is_not_asked_again_and_what_went_is_told() -> None:
    state, heard = _state()
    answer = json.dumps({"findings": [_finding("Kept.", parts={"a": 1})], "gaps": "none"})
    model = Model(answer, answer)
    for _ in range(2):
        output = await ask_json(
            model, "system", "user", AnalyzerOutput, state=state, agent=AgentRole.ANALYZER
        )
        assert output is not None and [f.content for f in output.findings] == ["Kept."]
    assert len(model.prompts) == 2  # one call per answer: no repair
    told = heard("answer_partly_read")
    assert len(told) == 2
    assert told[0]["dropped"] == ["findings[0].parts", "gaps"]
    assert told[0]["agent"] == "analyzer" and told[0]["answer"] == "AnalyzerOutput"
    assert len(state.warnings) == 1 and "analyzer" in state.warnings[0]  # once, not per answer
    assert not [d for d in state.decisions if d.action == "fallback"]
    assert not heard("answer_repair")


@pytest.mark.anyio
async def test_a_wholly_unreadable_answer_is_repaired_once() -> None:
    state, heard = _state()
    prose = "Heat pumps cut bills [src-aaaaaaaa]; I hope this helps."
    model = Model(prose, f"```json\n{GOOD}\n```")
    output = await ask_json(
        model, "You are the research analyst.", "the sources", AnalyzerOutput, state=state,
        agent=AgentRole.ANALYZER, fallback="none",
    )  # fmt: skip
    assert output is not None and [f.content for f in output.findings] == ["Heat pumps cut bills."]
    assert len(model.prompts) == 2
    system, user = model.prompts[1]
    assert system == REPAIR_SYSTEM
    assert "You are the research analyst." in user  # its instructions, for the shape
    assert prose in user and NO_OBJECT in user and "the sources" not in user
    assert heard("answer_repair") == [
        {"agent": "analyzer", "answer": "AnalyzerOutput", "problems": [NO_OBJECT], "repaired": True}
    ]
    assert not state.decisions


@pytest.mark.anyio
async def test_an_answer_still_unreadable_after_its_repair_falls_back_with_no_third_call() -> None:
    state, heard = _state()
    model = Model('{"title": {"x": 1}}', '{"notes": []}')
    output = await ask_json(
        model,
        "s",
        "u",
        _Titled,
        state=state,
        agent=AgentRole.PLANNER,
        fallback="Used the question.",
    )
    assert output is None and len(model.prompts) == 2
    assert "title: Input should be a valid string" in model.prompts[1][1]
    assert heard("answer_repair")[0]["repaired"] is False
    fallback = [d for d in state.decisions if d.action == "fallback"]
    assert [(d.agent, d.rationale) for d in fallback] == [(AgentRole.PLANNER, "Used the question.")]


@pytest.mark.anyio
async def test_a_failed_repair_call_leaves_the_first_reading() -> None:
    state, _ = _state()
    model = Model("not json", ProviderError("down", provider="p", kind="transient"))
    assert await ask_json(model, "s", "u", _Titled, state=state, agent=AgentRole.PLANNER) is None
    assert any("down" in w for w in state.warnings)


@pytest.mark.anyio
async def test_a_check_asks_for_one_repair_and_a_worse_one_is_not_taken() -> None:
    def titled(answer: _Titled) -> list[str]:
        return [] if answer.title.istitle() else ["/title: not in title case"]

    state, _ = _state()
    model = Model('{"title": "heat pumps"}', '{"notes": ["no title at all"]}')
    output = await ask_json(
        model, "s", "u", _Titled, state=state, agent=AgentRole.SYNTHESIZER, check=titled,
        repair=lambda previous, errors: ("fix", f"{previous} {errors}"),
    )  # fmt: skip
    assert output == _Titled(title="heat pumps")
    assert model.prompts[1] == ("fix", '{"title": "heat pumps"} [\'/title: not in title case\']')

    model = Model('{"title": "heat pumps"}', '{"title": "Heat Pumps"}')
    repaired = await ask_json(
        model, "s", "u", _Titled, state=state, agent=AgentRole.SYNTHESIZER, check=titled
    )
    assert repaired == _Titled(title="Heat Pumps")
