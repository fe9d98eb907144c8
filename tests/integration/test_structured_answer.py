"""A structured answer in the caller's schema: written from the findings, every value cited to
a quote that states it, an invented value made null, a repair call, and provider failures."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import (
    Finding,
    ReportMetadata,
    ResearchOptions,
    ResearchState,
    Source,
    StructuredAnswer,
)
from foundry_mcp.research.workflow.agents.structurer import shape_answer
from foundry_mcp.research.workflow.report.answer_schema import check_output_schema
from foundry_mcp.research.workflow.report.json_pointers import leaves
from tests.fakes import ResearchBrain

pytestmark = pytest.mark.anyio

A, B, C = "src-aaaaaaa1", "src-bbbbbbb2", "src-ccccccc3"
QUESTION = "Which Python HTTP libraries are popular, and under which licences?"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "stars": {"type": "number"},
                    "licence": {"enum": ["MIT", "Apache-2.0", "BSD-3-Clause"]},
                    "released": {"type": "string", "format": "date"},
                },
                "required": ["name", "licence"],
            },
        }
    },
    "required": ["rows"],
}
PAGES = {
    A: "Requests is an HTTP library for Python, maintained by the Python Software Foundation. "
    "The requests project has 51000 stars on GitHub. "
    "The requests library is licensed under Apache-2.0. "
    "Its latest version was released on 2023-05-22. Many tutorials use it.",
    B: "HTTPX is a next-generation HTTP client for Python. "
    "The httpx project has 12000 stars on GitHub. "
    "httpx is licensed under BSD-3-Clause and supports HTTP/2.",
    C: "Python is a programming language that lets you work quickly.",
}


class BrainProvider:
    """The fake brain as an LLM provider; the agents in ``failing`` raise a provider error."""

    name = "scripted"

    def __init__(self, brain: ResearchBrain, failing: Iterable[str] = ()) -> None:
        self.brain = brain
        self.failing = set(failing)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if ResearchBrain.identify(request.system) in self.failing:
            raise ProviderError("the model is overloaded", provider=self.name, kind="transient")
        reply = self.brain.reply(request.system, request.user)
        return LLMResponse(
            text=reply.text,
            model="m",
            provider=self.name,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
        )

    async def aclose(self) -> None:
        pass


def researched(max_verified_claims: int = 60) -> ResearchState:
    """A research whose report is written: three sources, findings citing two of them."""
    state = ResearchState(
        query=QUESTION,
        llm_provider="scripted",
        llm_model="m",
        options=ResearchOptions(
            output_schema=check_output_schema(SCHEMA), max_verified_claims=max_verified_claims
        ),
    )
    for source_id, text in PAGES.items():
        state.sources.append(
            Source(id=source_id, title=f"page {source_id}", url=f"https://x.example/{source_id}")
        )
        state.sources[-1].content = text
    state.findings = [
        Finding(
            content="requests has 51000 stars on GitHub, is licensed under Apache-2.0 and was "
            "released on 2023-05-22.",
            source_ids=[A],
        ),
        Finding(
            content="httpx has 12000 stars on GitHub and is licensed under BSD-3-Clause.",
            source_ids=[B],
        ),
    ]
    state.report = "# Python HTTP libraries\n\nhttpx [1] and requests [2] are popular.\n"
    state.report_metadata = ReportMetadata(cited_source_ids=[B, A])
    return state


async def shaped(
    brain: ResearchBrain, state: ResearchState, failing: Iterable[str] = ()
) -> StructuredAnswer:
    llm = ResearchLLM(BrainProvider(brain, failing), "m", state, CallLog())
    return await shape_answer(llm, state)


def assert_cited_by_quotes(answer: StructuredAnswer, state: ResearchState) -> None:
    """Every value left standing cites a source whose stored text holds, verbatim, a quote
    stating the value; every null value says why."""
    pages = state.source_by_id()
    numbers = {B: 1, A: 2}
    for pointer, value in leaves(answer.data):
        if value is None:
            assert answer.unknown.get(pointer), pointer
            assert pointer not in answer.citations
            continue
        cited = answer.citations[pointer]
        assert cited, pointer
        for source in cited:
            assert source.quote and source.quote in (pages[source.source_id].content or "")
            assert source.number == numbers.get(source.source_id)
            assert source.url == f"https://x.example/{source.source_id}"
        assert any(str(value).lower() in s.quote.lower() for s in cited), (pointer, cited)


async def test_a_table_is_filled_from_the_findings_each_value_cited_by_a_quote_that_states_it(
    brain: ResearchBrain,
) -> None:
    state = researched()
    answer = await shaped(brain, state)

    assert state.structured_answer is answer
    assert answer.valid, answer.errors
    rows = answer.data["rows"]
    assert rows == [
        {"name": "requests", "stars": 51000, "licence": "Apache-2.0", "released": "2023-05-22"},
        {"name": "httpx", "stars": 12000, "licence": "BSD-3-Clause", "released": None},
    ]
    assert_cited_by_quotes(answer, state)
    assert {s.verdict for c in answer.citations.values() for s in c} <= {"supported", "partial"}
    assert answer.unknown == {"/rows/1/released": "no finding states the released"}
    # The null date breaks the schema as given, not the schema with nulls allowed.
    assert not answer.strict_valid
    assert answer.errors == ["/rows/1/released: None is not of type 'string'"]
    assert (answer.checked, answer.supported, answer.removed) == (7, 7, 0)
    assert brain.calls["structurer"] == 1 and brain.calls["verifier"] >= 1
    assert not state.warnings
    assert state.llm_usage.total.calls == 1 + brain.calls["verifier"]


async def test_a_value_its_sources_do_not_state_is_made_null_with_the_reason(
    brain: ResearchBrain,
) -> None:
    invented = {
        "answer": {
            "rows": [
                {"name": "requests", "stars": 51000, "licence": "MIT", "released": "2023-05-22"},
                {"name": "httpx", "stars": 98000, "licence": "BSD-3-Clause", "released": None},
            ]
        },
        "sources": {
            "/rows/0/name": [A],
            "/rows/0/stars": [A],
            "/rows/0/licence": [A],  # the page says Apache-2.0
            "#/rows/0/released": A,  # written leniently: a "#" pointer, one id as a string
            "/rows/1/name": [B],
            "/rows/1/stars": ["src-deadbeef"],  # no source the research gathered
            "/rows/1/licence": [B],
        },
        "unknown": {"/rows/1/released": "No finding dates an httpx release."},
    }
    brain.overrides["structurer"] = json.dumps(invented)
    state = researched()
    answer = await shaped(brain, state)

    assert answer.valid, answer.errors
    rows = answer.data["rows"]
    assert rows[0] == {
        "name": "requests",
        "stars": 51000,
        "licence": None,
        "released": "2023-05-22",
    }
    assert rows[1] == {"name": "httpx", "stars": None, "licence": "BSD-3-Clause", "released": None}
    assert answer.unknown["/rows/0/licence"].startswith("its sources do not state it")
    assert answer.unknown["/rows/1/stars"] == "no source cited"
    assert answer.unknown["/rows/1/released"] == "No finding dates an httpx release."
    assert (answer.checked, answer.removed) == (6, 1)
    assert_cited_by_quotes(answer, state)


async def test_an_answer_that_does_not_validate_is_asked_for_once_more(
    brain: ResearchBrain,
) -> None:
    prompts: list[str] = []

    def structurer(system: str, user: str) -> str:
        prompts.append(user)
        if len(prompts) == 1:
            bad = {"rows": [{"name": "requests", "stars": "many", "licence": "GPL"}]}
            return json.dumps({"answer": bad, "sources": {}, "unknown": {}})
        return json.dumps(brain.structure(user))

    brain.overrides["structurer"] = structurer
    state = researched()
    answer = await shaped(brain, state)

    assert len(prompts) == 2
    assert "does not validate" in prompts[1] and "/rows/0/licence" in prompts[1]
    assert '"many"' in prompts[1]  # the previous answer is shown
    assert answer.valid and answer.data["rows"][0]["licence"] == "Apache-2.0"
    assert_cited_by_quotes(answer, state)


async def test_a_provider_error_gives_an_answer_without_data_and_a_warning(
    brain: ResearchBrain,
) -> None:
    state = researched()
    answer = await shaped(brain, state, failing={"structurer"})

    assert state.structured_answer is answer
    assert answer.data is None and not answer.valid and not answer.strict_valid
    assert len(answer.errors) == 1 and "overloaded" in answer.errors[0]
    assert any("structured answer could not be written" in w for w in state.warnings)


async def test_values_the_fact_checker_could_not_judge_are_kept_unverified_with_one_warning(
    brain: ResearchBrain,
) -> None:
    state = researched()
    answer = await shaped(brain, state, failing={"verifier"})

    assert answer.valid and answer.removed == 0 and answer.supported == 0
    assert answer.data["rows"][0]["licence"] == "Apache-2.0"
    assert {s.verdict for c in answer.citations.values() for s in c} == {"unverified"}
    assert len([w for w in state.warnings if "not fact-checked" in w]) == 1


async def test_the_values_checked_are_capped_by_max_verified_claims(brain: ResearchBrain) -> None:
    state = researched(max_verified_claims=2)
    answer = await shaped(brain, state)

    assert answer.checked == 2
    verdicts = [s.verdict for c in answer.citations.values() for s in c]
    assert verdicts.count("unverified") == 5
    assert any("not fact-checked" in w for w in state.warnings)
