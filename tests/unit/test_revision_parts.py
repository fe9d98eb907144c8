"""Naming the part of a research a deepen researches further (revision/deepen.py)."""

from __future__ import annotations

import pytest

from foundry_mcp.errors import InputError
from foundry_mcp.research.models import (
    Gap,
    Hypothesis,
    ReportMetadata,
    ResearchState,
    Revision,
    RevisionKind,
    SearchStrategy,
    SubQuery,
    SubQuestion,
)
from foundry_mcp.research.revision.deepen import deepen_queries, resolve_part

QUESTION = "Compare Valkey and Memcached for eviction latency"


def research() -> ResearchState:
    return ResearchState(
        query=QUESTION,
        llm_provider="openai",
        llm_model="m",
        sub_questions=[
            SubQuestion(
                id="sqn-0a0a0a0a", question="How does Valkey perform for eviction latency?"
            ),
            SubQuestion(id="sqn-0b0b0b0b", question="How does Memcached perform?"),
        ],
        hypotheses=[
            Hypothesis(
                id="hyp-0c0c0c0c",
                statement="Slab allocation explains the tail latency",
                search_strategy=SearchStrategy(queries=["memcached slab allocator p99"]),
            )
        ],
        gaps=[
            Gap(
                id="gap-0d0d0d0d",
                description="Long-term eviction behaviour under memory pressure",
                suggested_queries=["valkey eviction memory pressure", "memcached lru tuning"],
            )
        ],
        sub_queries=[SubQuery(query="memcached lru tuning")],
        report_metadata=ReportMetadata(sections=["Executive Summary", "Tail Latency Findings"]),
    )


@pytest.mark.parametrize(
    ("named", "expected"),
    [
        ("sqn-0a0a0a0a", "sqn-0a0a0a0a"),
        ("SQN-0B0B0B0B", "sqn-0b0b0b0b"),
        ("  how does VALKEY perform   for eviction latency ", "sqn-0a0a0a0a"),
        ("hyp-0c0c0c0c", "hyp-0c0c0c0c"),
        ("gap-0d0d0d0d", "gap-0d0d0d0d"),
        ("long-term eviction behaviour under memory pressure.", "gap-0d0d0d0d"),
    ],
)
def test_ids_and_texts_name_their_part(named: str, expected: str) -> None:
    state = research()
    part_id, question = resolve_part(state, named)
    assert part_id == expected
    texts = {sq.id: sq.question for sq in state.sub_questions}
    texts |= {h.id: h.statement for h in state.hypotheses}
    texts |= {g.id: g.description for g in state.gaps}
    assert question == texts[expected]


def test_a_section_heading_is_researched_in_the_research_context() -> None:
    part_id, question = resolve_part(research(), "## tail latency findings")
    assert part_id is None
    assert question.startswith("Tail Latency Findings") and QUESTION in question


def test_free_text_is_the_callers_own_question() -> None:
    assert resolve_part(research(), "How do eviction pauses affect p99 latency?") == (
        None,
        "How do eviction pauses affect p99 latency?",
    )


@pytest.mark.parametrize("named", ["", "   ", "?!", "sqn-deadbeef", "gap-12345678"])
def test_an_empty_or_unknown_part_is_refused_with_the_parts_one_can_name(named: str) -> None:
    with pytest.raises(InputError) as raised:
        resolve_part(research(), named)
    remedy = raised.value.remediation
    assert raised.value.details == {"field": "part"}
    for named_part in ("sqn-0a0a0a0a", "sqn-0b0b0b0b", "gap-0d0d0d0d", "Tail Latency Findings"):
        assert named_part in remedy
    assert "question of your own" in remedy


def _revision(state: ResearchState, part: str, max_searches: int | None = None) -> Revision:
    part_id, question = resolve_part(state, part)
    return Revision(
        kind=RevisionKind.DEEPEN,
        part=part,
        part_id=part_id,
        part_question=question,
        max_searches=max_searches,
        iteration=2,
    )


def test_a_gaps_searches_are_its_description_and_its_suggestions_not_asked_before() -> None:
    state = research()
    revision = _revision(state, "gap-0d0d0d0d")
    planned = deepen_queries(state, revision)
    assert [sq.query for sq in planned] == [
        "Long-term eviction behaviour under memory pressure",
        "valkey eviction memory pressure",  # "memcached lru tuning" was asked already
    ]
    assert all(sq.gap_id == "gap-0d0d0d0d" and sq.iteration == 2 for sq in planned)
    assert all(sq.id.startswith(f"{revision.id}-sq") for sq in planned)


def test_a_sub_question_is_searched_by_its_question_within_the_budget() -> None:
    state = research()
    planned = deepen_queries(state, _revision(state, "sqn-0a0a0a0a"))
    assert [sq.query for sq in planned] == ["How does Valkey perform for eviction latency?"]
    hypothesis = deepen_queries(state, _revision(state, "hyp-0c0c0c0c", max_searches=1))
    assert [sq.query for sq in hypothesis] == ["Slab allocation explains the tail latency"]
    assert hypothesis[0].hypothesis_id == "hyp-0c0c0c0c"


def test_a_question_off_the_subject_is_searched_within_it() -> None:
    state = research()
    planned = deepen_queries(state, _revision(state, "What do operators recommend?"))
    assert [sq.query for sq in planned] == [f"What do operators recommend? ({QUESTION})"]
