"""Every agent reads its model's answer leniently: one field of the wrong type costs that field
(read as if the model had left it out), never the rest of the answer; a wholly unreadable
answer is asked for once more before the agent falls back.

Each agent runs for real against a fake model (the research brain, its agent's answer fixed),
once with a field of its answer mistyped and once with that field left out; the two must agree.
The answers of the hypotheses agents, the sub-question answerer, the structurer and the
follow-up answerer have models whose own validators already read every field leniently: their
cases pin that (they held before the shared reader too); what the shared helper adds for those
agents, the repair of an answer with no JSON at all, is tested at the end.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import (
    Finding,
    Gap,
    Hypothesis,
    Phase,
    ReportMetadata,
    ResearchOptions,
    ResearchState,
    Source,
    ValidationResult,
    VerificationSummary,
)
from foundry_mcp.research.service.asking.clarifier import judge
from foundry_mcp.research.verification.judge import judge_claims
from foundry_mcp.research.workflow.agents.analyzer import analyze
from foundry_mcp.research.workflow.agents.answerer import answer_sub_question
from foundry_mcp.research.workflow.agents.follow_up import answer_follow_up
from foundry_mcp.research.workflow.agents.hypothesizer import (
    assess_coverage,
    assess_hypothesis,
    propose_hypotheses,
)
from foundry_mcp.research.workflow.agents.planner import plan
from foundry_mcp.research.workflow.agents.refiner import refine
from foundry_mcp.research.workflow.agents.structurer import shape_answer
from foundry_mcp.research.workflow.reflection import reflect
from tests.fakes.brain import ResearchBrain

pytestmark = pytest.mark.anyio

A, B = "src-aaaaaaaa", "src-bbbbbbbb"
OBJECT = {"unexpected": "object"}  # the wrong type for a text, number, flag, word or list
TEXT = "not an object"  # the wrong type for an object
Path = tuple[str | int, ...]
Answer = dict[str, Any] | str
Run = Callable[..., Awaitable[dict[str, Any]]]  # (answer, repaired=...) -> what came of it
PROSE = "I looked into it: heat pumps are mostly worth it."  # no JSON object at all


class BrainModel:
    """An LLM provider answering as the research brain does."""

    name = "brain"

    def __init__(self, brain: ResearchBrain) -> None:
        self.brain = brain

    async def complete(self, request: LLMRequest) -> LLMResponse:
        text = self.brain.respond(request.system, request.user)
        return LLMResponse(text=text, model="m", provider=self.name, input_tokens=1)

    async def aclose(self) -> None:
        pass


def _state(**fields: Any) -> ResearchState:
    fields.setdefault("query", "Are heat pumps worth it in cold climates?")
    return ResearchState(llm_provider="brain", llm_model="m", **fields)


def _text(answer: Answer) -> str:
    return answer if isinstance(answer, str) else json.dumps(answer)


def _asking(
    agent: str, answer: Answer, state: ResearchState, repaired: Answer | None = None
) -> tuple[ResearchLLM, ResearchBrain]:
    """The LLM of ``state``, whose ``agent`` answers ``answer`` (and the repairer, asked again
    for an unreadable answer, ``repaired``), and its brain, which answers the rest."""
    brain = ResearchBrain()
    brain.overrides[agent] = _text(answer)
    if repaired is not None:
        brain.overrides["repairer"] = _text(repaired)
    return ResearchLLM(BrainModel(brain), "m", state, CallLog()), brain


def _fallbacks(state: ResearchState) -> list[str]:
    return [d.rationale for d in state.decisions if d.action == "fallback"]


def _at(data: Any, path: Path) -> tuple[Any, str | int]:
    for step in path[:-1]:
        data = data[step]
    return data, path[-1]


def _without(answer: dict[str, Any], path: Path) -> dict[str, Any]:
    changed = copy.deepcopy(answer)
    holder, last = _at(changed, path)
    del holder[last]
    return changed


def _with(answer: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(answer)
    holder, last = _at(changed, path)
    holder[last] = value
    return changed


async def _mistyped_reads_as_left_out(run: Run, answer: dict[str, Any], path: Path) -> None:
    """``answer`` with ``path`` mistyped (an object as a text, anything else as an object)
    gives what it gives with ``path`` left out, which is not a fallback."""
    holder, last = _at(answer, path)
    mistyped = _with(answer, path, TEXT if isinstance(holder[last], dict) else OBJECT)
    left_out = await run(_without(answer, path))
    assert not left_out.get("fallbacks"), left_out
    assert await run(mistyped) == left_out


def _name(path: Path) -> str:
    return ".".join(map(str, path))


# --------------------------------------------------------------------------- the analyst

PAGES = {
    A: "Heat pumps cut heating bills by 30 percent in Norway. They kept working at -25 C.",
    B: "Heat pumps last 15 to 20 years. One survey reports a lifetime of 12 years.",
}
ANALYST: dict[str, Any] = {
    "findings": [
        {
            "content": "Heat pumps cut heating bills by 30 percent in Norway.",
            "confidence": "high",
            "source_ids": [A],
            "category": "cost",
            "parts": ["sq-00000001"],
        },
        {"content": "Heat pumps last 15 to 20 years.", "confidence": "medium", "source_ids": [B]},
    ],
    "gaps": [
        {"description": "Noise is unknown.", "suggested_queries": ["noise"], "priority": 2},
        {"description": "Costs of installing are unknown.", "suggested_queries": ["install"]},
    ],
    "quality_updates": [{"source_id": A, "quality": "high"}, {"source_id": B, "quality": "low"}],
    "contradictions": [{"description": "Lifetimes disagree.", "source_ids": [B, A]}],
}


def _pages() -> list[Source]:
    return [Source(id=sid, title=f"Page {sid}", content=text) for sid, text in PAGES.items()]


async def _analysed(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _state(sources=_pages())
    llm, brain = _asking("analyzer", answer, state, repaired)

    async def saved() -> None:
        pass

    await analyze(llm, state, None, saved)
    return {
        "findings": [
            (f.content, f.confidence, f.source_ids, f.category, f.parts) for f in state.findings
        ],
        "gaps": [(g.description, g.suggested_queries, g.priority) for g in state.gaps],
        "quality": [(s.id, s.quality) for s in state.sources],
        "contradictions": [(c.description, c.source_ids) for c in state.contradictions],
        "analysed": [s.analyzed for s in state.sources],
        "fallbacks": _fallbacks(state),
        "calls": (brain.calls["analyzer"], brain.calls["repairer"]),
    }


@pytest.mark.parametrize(
    "path",
    [
        ("findings", 0, "confidence"),
        ("findings", 0, "source_ids"),
        ("findings", 0, "category"),
        ("findings", 0, "parts"),
        ("findings", 1, "content"),  # a finding without its text: that finding goes
        ("findings", 1),
        ("gaps", 0, "suggested_queries"),
        ("gaps", 0, "priority"),
        ("gaps", 1, "description"),
        ("quality_updates", 1, "quality"),
        ("contradictions", 0, "source_ids"),
        ("findings",),
        ("gaps",),
        ("quality_updates",),
        ("contradictions",),
    ],
    ids=_name,
)
async def test_the_analyst_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_analysed, ANALYST, path)


async def test_a_mistyped_part_keeps_every_finding_of_the_answer() -> None:
    mistyped = copy.deepcopy(ANALYST)
    for finding in mistyped["findings"]:
        finding["parts"] = {"ids": finding.get("parts", [])}
    result = await _analysed(mistyped)
    assert [f[0] for f in result["findings"]] == [f["content"] for f in ANALYST["findings"]]
    assert len(result["gaps"]) == 2 and len(result["contradictions"]) == 1
    assert result["calls"] == (1, 0) and not result["fallbacks"]


async def test_an_unreadable_analysis_is_never_kept_as_a_finding() -> None:
    raw = json.dumps(ANALYST["findings"])  # a bare list: no object to read the answer from
    result = await _analysed(raw)
    assert result["calls"] == (1, 1)  # asked once more, to no avail
    assert result["findings"] == [] and result["gaps"] == []
    assert result["analysed"] == [True, True]  # considered: nothing read from them
    assert len(result["fallbacks"]) == 1 and "could not be read" in result["fallbacks"][0]


# --------------------------------------------------------------------------- the planner

PLAN: dict[str, Any] = {
    "research_brief": "Whether heat pumps pay off where winters are cold.",
    "sub_queries": [
        {"query": "heat pump efficiency below freezing", "rationale": "COP", "priority": 1},
        {"query": "heat pump running costs Norway", "rationale": "bills", "priority": 2},
        {"query": "heat pump lifetime", "priority": 3},
    ],
}


async def _planned(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _state()
    output = await plan(_asking("planner", answer, state, repaired)[0], state, None)
    return {**output.model_dump(mode="json"), "fallbacks": _fallbacks(state)}


@pytest.mark.parametrize(
    "path",
    [
        ("research_brief",),
        ("sub_queries", 0, "rationale"),
        ("sub_queries", 1, "priority"),
        ("sub_queries", 2, "query"),
    ],
    ids=_name,
)
async def test_the_planner_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_planned, PLAN, path)


# --------------------------------------------------------------------------- the refiner

NOISE, COSTS = (
    Gap(id="gap-00000001", description="Noise is unknown.", suggested_queries=["noise"]),
    Gap(id="gap-00000002", description="Costs are unknown.", suggested_queries=["costs"]),
)
REFINER: dict[str, Any] = {
    "gap_analysis": [
        {
            "gap_id": NOISE.id,
            "severity": "critical",
            "addressable": True,
            "follow_up_queries": [
                {"query": "heat pump noise decibels", "expected_contribution": "levels"},
                {"query": "heat pump noise rules"},
            ],
        },
        {"gap_id": COSTS.id, "severity": "minor", "addressable": False},
    ],
    "iteration_recommendation": {
        "should_iterate": True,
        "rationale": "Noise matters to buyers.",
        "priority_gaps": [NOISE.id],
    },
    "report_improvements": ["Compare running costs."],
}


async def _refined(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _state(gaps=[NOISE.model_copy(), COSTS.model_copy()])
    output = await refine(_asking("refiner", answer, state, repaired)[0], state, None)
    return {
        **output.model_dump(mode="json"),
        "severities": [gap.severity for gap in state.gaps],
        "fallbacks": _fallbacks(state),
    }


@pytest.mark.parametrize(
    "path",
    [
        ("gap_analysis", 0, "severity"),
        ("gap_analysis", 0, "addressable"),
        ("gap_analysis", 0, "follow_up_queries"),
        ("gap_analysis", 0, "follow_up_queries", 0, "expected_contribution"),
        ("gap_analysis", 0, "follow_up_queries", 1, "query"),
        ("gap_analysis", 1, "gap_id"),
        ("iteration_recommendation",),
        ("iteration_recommendation", "should_iterate"),
        ("iteration_recommendation", "rationale"),
    ],
    ids=_name,
)
async def test_the_refiner_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_refined, REFINER, path)


# --------------------------------------------------------------------------- hypotheses mode

INVESTIGATOR: dict[str, Any] = {
    "research_brief": "Why heat pumps may or may not pay off.",
    "hypotheses": [
        {
            "statement": "Heat pumps lose most of their efficiency below -15 C",
            "confidence": 60,
            "search_strategy": {"queries": ["heat pump COP -15 C"], "signals": ["COP"]},
            "exploration_priority": 1,
            "priority_reasoning": "It decides the answer.",
        },
        {"statement": "Running costs fall with heat pumps", "confidence": 70},
    ],
}


async def _proposed(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _state()
    llm = _asking("investigator", answer, state, repaired)[0]
    brief, hypotheses = await propose_hypotheses(llm, state, None, local_search=False)
    return {
        "brief": brief,
        "hypotheses": [h.model_dump(mode="json", exclude={"id"}) for h in hypotheses],
        "fallbacks": _fallbacks(state),
    }


@pytest.mark.parametrize(
    "path",
    [
        ("research_brief",),
        ("hypotheses", 0, "confidence"),
        ("hypotheses", 0, "search_strategy"),
        ("hypotheses", 0, "search_strategy", "queries"),
        ("hypotheses", 0, "exploration_priority"),
        ("hypotheses", 0, "priority_reasoning"),
    ],
    ids=_name,
)
async def test_the_investigator_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_proposed, INVESTIGATOR, path)


FINDINGS = [
    Finding(content="Heat pumps kept working at -25 C.", source_ids=[A]),
    Finding(content="Heat pumps lose efficiency in deep frost.", source_ids=[B]),
]
EXPLORED = Hypothesis(statement="Heat pumps fail in frost", confidence=40)
REMAINING = Hypothesis(statement="Running costs fall with heat pumps", confidence=70)
ASSESSOR: dict[str, Any] = {
    "final_confidence": 25,
    "verdict": "refuted",
    "evidence_for": ["2"],
    "evidence_against": ["1"],
    "entities_found": ["COP"],
    "reasoning": "They kept working at -25 C.",
}
COVERAGE: dict[str, Any] = {
    "sufficient": False,
    "reasoning": "Costs are open.",
    "recommended_next": "H2",
}


async def _assessed(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _state(findings=list(FINDINGS))
    hypothesis = EXPLORED.model_copy()
    llm = _asking("assessor", answer, state, repaired)[0]
    await assess_hypothesis(llm, state, 1, hypothesis, None)
    return {**hypothesis.model_dump(mode="json"), "fallbacks": _fallbacks(state)}


async def _covered(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _state(findings=list(FINDINGS))
    llm = _asking("coverage", answer, state, repaired)[0]
    coverage = await assess_coverage(llm, state, [(1, EXPLORED)], [(2, REMAINING)], None)
    return {**coverage.model_dump(mode="json"), "fallbacks": _fallbacks(state)}


@pytest.mark.parametrize("path", [(name,) for name in ASSESSOR], ids=_name)
async def test_the_evidence_assessor_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_assessed, ASSESSOR, path)


@pytest.mark.parametrize("path", [(name,) for name in COVERAGE], ids=_name)
async def test_the_coverage_assessor_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_covered, COVERAGE, path)


# --------------------------------------------------------------------------- the writers


def _findings_state(**fields: Any) -> ResearchState:
    findings = [
        Finding(content="Heat pumps cut heating bills by 30 percent in Norway.", source_ids=[A]),
        Finding(content="Heat pumps last 15 to 20 years.", source_ids=[B]),
    ]
    return _state(sources=_pages(), findings=findings, **fields)


ANSWERER: dict[str, Any] = {
    "direct_answer": f"Yes: they cut bills by 30 percent [{A}].",
    "evidence": [f"Bills fell by 30 percent in Norway [{A}].", f"They last 15 years [{B}]."],
    "caveats": ["Prices differ by country."],
    "confidence": "high",
}


async def _answered(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _findings_state()
    await answer_sub_question(_asking("answerer", answer, state, repaired)[0], state, None)
    assert state.answer is not None
    return {**state.answer.model_dump(mode="json"), "fallbacks": _fallbacks(state)}


@pytest.mark.parametrize("path", [("evidence",), ("caveats",), ("confidence",)], ids=_name)
async def test_the_sub_question_answerer_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_answered, ANSWERER, path)


SCHEMA = {
    "type": "object",
    "properties": {"saving_percent": {"type": "number"}, "lifetime": {"type": "string"}},
}
STRUCTURER: dict[str, Any] = {
    "answer": {"saving_percent": 30, "lifetime": "15 to 20 years"},
    "sources": {"/saving_percent": [A], "/lifetime": [B]},
    "unknown": {},
}


async def _structured(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _findings_state(options=ResearchOptions(output_schema=SCHEMA))
    for source in state.sources:
        source.content = None  # no text to judge the values against: no fact-check calls
    shaped = await shape_answer(_asking("structurer", answer, state, repaired)[0], state)
    return {**shaped.model_dump(mode="json"), "fallbacks": _fallbacks(state)}


@pytest.mark.parametrize("path", [("sources",), ("unknown",)], ids=_name)
async def test_the_answer_structurer_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_structured, STRUCTURER, path)


async def test_the_structurers_repair_is_asked_once_through_the_shared_helper() -> None:
    state = _findings_state(options=ResearchOptions(output_schema=SCHEMA))
    heard: list[tuple[str, dict[str, Any]]] = []
    state.attach(lambda kind, data: heard.append((kind, data)))
    for source in state.sources:
        source.content = None
    llm, brain = _asking("structurer", PROSE, state)
    shaped = await shape_answer(llm, state)
    assert shaped.data is None and brain.calls["structurer"] == 2  # its own repair prompt
    repairs = [data for kind, data in heard if kind == "answer_repair"]
    assert [(r["answer"], r["repaired"]) for r in repairs] == [("_Draft", False)]


FOLLOW_UP: dict[str, Any] = {
    "answerable": True,
    "answer": "Heat pumps cut heating bills by 30 percent in Norway [1].",
    "reason": "Source 1 says so.",
}


async def _followed_up(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _findings_state(report="A report.", report_metadata=ReportMetadata())
    llm = _asking("follow_up", answer, state, repaired)[0]
    reply = await answer_follow_up(llm, state, "How much do heat pumps cut heating bills?")
    return {
        **reply.model_dump(mode="json", exclude={"id", "asked_at"}),
        "fallbacks": _fallbacks(state),
    }


@pytest.mark.parametrize("path", [("answerable",), ("reason",)], ids=_name)
async def test_the_follow_up_answerer_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_followed_up, FOLLOW_UP, path)


# --------------------------------------------------------------------------- the others

CLARIFIER: dict[str, Any] = {
    "ambiguous": True,
    "reason": "Worth it for whom?",
    "questions": [{"question": "Which climate?", "choices": ["Nordic", "Alpine"]}],
}


async def _clarified(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _state()
    output = await judge(_asking("clarifier", answer, state, repaired)[0], state)
    return {"output": output and output.model_dump(mode="json")}


@pytest.mark.parametrize("path", [("ambiguous",), ("reason",)], ids=_name)
async def test_the_clarifier_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_clarified, CLARIFIER, path)


SUPERVISOR: dict[str, Any] = {
    "action": "iterate",
    "rationale": "Costs are thin.",
    "quality_assessment": {"score": 6, "strengths": ["cited"], "weaknesses": ["costs"]},
    "guidance": "Look for running costs.",
}


async def _reflected(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _state()
    llm = _asking("supervisor", answer, state, repaired)[0]
    decision = await reflect(llm, state, Phase.ANALYSIS, "Judge.", ValidationResult(valid=True), {})
    return {**decision.model_dump(mode="json"), "fallbacks": _fallbacks(state)}


@pytest.mark.parametrize(
    "path",
    [
        ("rationale",),
        ("quality_assessment",),
        ("quality_assessment", "score"),
        ("quality_assessment", "strengths"),
        ("quality_assessment", "weaknesses"),
        ("guidance",),
    ],
    ids=_name,
)
async def test_the_supervisors_reflection_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_reflected, SUPERVISOR, path)


CLAIMS = [
    ("Heat pumps cut heating bills by 30 percent.", [(A, PAGES[A])]),
    ("Heat pumps last 15 to 20 years.", [(B, PAGES[B])]),
    ("Heat pumps run silently.", [(B, PAGES[B])]),
]
JUDGE: dict[str, Any] = {
    "verdicts": [
        {"claim": 1, "verdict": "supported", "reason": "Stated."},
        {"claim": 2, "verdict": "partial", "reason": "A survey says 12."},
        {"claim": 3, "verdict": "unsupported", "reason": "Not said."},
    ]
}


async def _judged(answer: Answer, repaired: Answer | None = None) -> dict[str, Any]:
    state = _state()
    summary = VerificationSummary()
    llm = _asking("verifier", answer, state, repaired)[0]
    judged = await judge_claims(llm, state, CLAIMS, summary)
    return {"answers": judged.answers, "unreadable": judged.unreadable}


@pytest.mark.parametrize("path", [("verdicts", 1), ("verdicts",)], ids=_name)
async def test_the_fact_checker_keeps_the_rest_of_an_answer(path: Path) -> None:
    await _mistyped_reads_as_left_out(_judged, JUDGE, path)


async def test_the_fact_checkers_other_verdicts_survive_a_malformed_one() -> None:
    result = await _judged(_with(JUDGE, ("verdicts", 1), "claim 2: partly"))
    verdicts = [verdict.value if verdict else None for verdict, _ in result["answers"]]
    assert verdicts == ["supported", None, "unsupported"]
    assert result["unreadable"] == 0


# --------------------------------------------------------------------------- the repair

AGENTS: dict[str, tuple[Run, dict[str, Any]]] = {
    "analyst": (_analysed, ANALYST),
    "planner": (_planned, PLAN),
    "refiner": (_refined, REFINER),
    "investigator": (_proposed, INVESTIGATOR),
    "assessor": (_assessed, ASSESSOR),
    "coverage": (_covered, COVERAGE),
    "answerer": (_answered, ANSWERER),
    "follow_up": (_followed_up, FOLLOW_UP),
    "clarifier": (_clarified, CLARIFIER),
    "supervisor": (_reflected, SUPERVISOR),
    "fact_checker": (_judged, JUDGE),
}


@pytest.mark.parametrize("agent", list(AGENTS))
async def test_an_answer_with_no_json_is_asked_for_once_more(agent: str) -> None:
    run, answer = AGENTS[agent]
    expected = await run(answer)
    if "calls" in expected:
        expected["calls"] = (1, 1)
    assert await run(PROSE, repaired=answer) == expected
