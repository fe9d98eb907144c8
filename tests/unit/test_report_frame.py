"""A report written in parts on a small window: the frame fitted, then written by code; a section
that cannot fit listed by code; errors reaching the caller as their own type."""

from __future__ import annotations

import re

import pytest

from foundry_mcp.context.errors import ContextExceededError
from foundry_mcp.context.options import TokenBudgetOptions
from foundry_mcp.context.tokens import EstimateCounter
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import (
    Contradiction,
    Finding,
    ResearchLimits,
    ResearchOptions,
    ResearchState,
    Source,
    SubQuery,
    SubQuestion,
    SubQuestionSynthesis,
)
from foundry_mcp.research.prompts.report_parts import META_FRAME_SYSTEM
from foundry_mcp.research.prompts.synthesizer import META_SYSTEM, render_sub_answers
from foundry_mcp.research.workflow.agents.answerer import answer_sub_question
from foundry_mcp.research.workflow.report.frame import (
    UNFITTED_SUMMARY,
    FrameFit,
    shortened_blocks,
)
from foundry_mcp.research.workflow.report.parts import sections_by_sub_question
from foundry_mcp.research.workflow.report.synthesizer import Writing, synthesize
from tests.fakes.brain import FRAME_MARKER, SECTION_TOPIC_RE
from tests.unit.test_report_parts import ConcurrentBrain

pytestmark = pytest.mark.anyio
ESTIMATOR = EstimateCounter()

TOPICS = ("heat pump efficiency in frost", "heat pump noise levels", "heat pump running costs")
SENTENCE = "Heat pump {n} kept a coefficient of performance of {cop} at minus {t} degrees."


def small_window_state(sizes: tuple[int, ...], window: int) -> ResearchState:
    """A research with ``sizes[t]`` findings found by topic ``t``'s sub-query, and a model
    of ``window`` tokens (content never dropped: the default)."""
    budget = TokenBudgetOptions(context_window=window, max_output=window // 4)
    state = ResearchState(
        query="How do heat pumps perform in cold climates?",
        llm_provider="scripted",
        llm_model="m",
        limits=ResearchLimits(max_concurrent=4),
        options=ResearchOptions(verify_citations=False, token_budget=budget),
    )
    for t, (topic, size) in enumerate(zip(TOPICS, sizes, strict=True)):
        sub_query = SubQuery(query=topic)
        source = Source(title=f"page {t}", url=f"https://x.example/{t}", sub_query_id=sub_query.id)
        sub_query.source_ids.append(source.id)
        state.sub_queries.append(sub_query)
        state.sources.append(source)
        state.findings += [
            Finding(
                content=SENTENCE.format(n=f"{t}.{n}", cop=2 + n % 3, t=n), source_ids=[source.id]
            )
            for n in range(size)
        ]
    return state


def body_of(report: str) -> str:
    return report.split("\n## Sources\n", 1)[0]


async def test_a_frame_too_big_for_the_window_is_written_by_code() -> None:
    # Contradictions are the frame's alone and never shortened: no prompt of it fits.
    state = small_window_state((3, 3, 3), window=6_000)
    state.contradictions = [
        Contradiction(description=f"Trial {n} disagrees: " + "colder " * 120, source_ids=[s.id])
        for n, s in enumerate(state.sources * 4)
    ]
    provider = ConcurrentBrain()

    output = await synthesize(ResearchLLM(provider, "m", state, CallLog()), state, None)

    body = body_of(output.report)
    assert body.startswith(f"# {state.query}\n\n## Executive Summary\n\n{UNFITTED_SUMMARY}")
    # The sections were written by the model, every finding with its citation.
    prompts = [user for agent, _, user in provider.brain.history if agent == "writer"]
    assert not [user for user in prompts if FRAME_MARKER in user]
    assert len([user for user in prompts if SECTION_TOPIC_RE.search(user)]) == len(TOPICS)
    for topic in TOPICS:
        assert f"## {topic}\n" in body
    assert all(f.content.rstrip(".") in body for f in state.findings)
    assert output.report_metadata.sources_cited == len(state.sources)
    assert any(
        "frame (title, summary, conclusion) did not fit the model's window (6,000 tokens)" in w
        for w in state.warnings
    ), state.warnings


async def test_a_section_too_big_for_the_window_lists_its_findings() -> None:
    # Sixty findings of one topic do not fit one section's call even at their shortest; the
    # frame leaves most of them out (their section states them).
    state = small_window_state((60, 2, 2), window=4_000)
    provider = ConcurrentBrain()

    output = await synthesize(ResearchLLM(provider, "m", state, CallLog()), state, None)

    prompts = [user for agent, _, user in provider.brain.history if agent == "writer"]
    topics = [m.group(1) for p in prompts if (m := SECTION_TOPIC_RE.search(p))]
    assert sorted(topics) == sorted(TOPICS[1:])  # the big section was never sent
    body = body_of(output.report)
    stated = body.split("## Heat pump efficiency in frost\n", 1)[1].split("\n## ", 1)[0]
    for finding in state.findings[:60]:
        assert re.search(re.escape(finding.content.rstrip(".")) + r" \[\d+\]\.", stated)
    assert all(f"## {topic}\n" in body for topic in TOPICS[1:])
    assert any(
        f"section on {TOPICS[0]!r} did not fit the model's window (4,000 tokens)" in w
        for w in state.warnings
    ), state.warnings
    assert any("written from" in w and "of its 64 findings" in w for w in state.warnings)


async def test_a_whole_report_too_big_for_the_window_fails_with_its_own_error() -> None:
    state = small_window_state((30, 30, 30), window=4_000)
    state.options.parallel_writing = False
    provider = ConcurrentBrain()

    # Not an exception group: the run's handler gives the error's own remediation.
    with pytest.raises(ContextExceededError) as raised:
        await synthesize(ResearchLLM(provider, "m", state, CallLog()), state, None)
    assert "allow_content_dropping" in raised.value.remediation


def test_the_frame_reads_shorter_sub_answers_with_their_tags() -> None:
    answers = [
        (
            f"Question {n}?",
            SubQuestionSynthesis(
                direct_answer=f"Answer {n} holds for every model tested [src-0000000{n}].",
                evidence=[SENTENCE.format(n=k, cop=3, t=k) for k in range(20)],
                citations=[f"src-0000000{n}"],
                caveats=["Few winters measured."],
            ),
        )
        for n in range(3)
    ]
    material = render_sub_answers(answers)
    frame = FrameFit("Body sections written separately:", material)

    full, short = frame.material_at(1.0, ESTIMATOR), frame.material_at(0.2, ESTIMATOR)

    assert full.startswith(material) and full.endswith(frame.note)
    assert ESTIMATOR.count(short) < 0.35 * ESTIMATOR.count(full)
    assert re.findall(r"</?subanswer\b[^>]*>", short) == re.findall(r"</?subanswer\b[^>]*>", full)
    for n in range(3):  # each answer's conclusion comes first and stays
        assert f"Answer {n} holds for every model tested" in short
    assert shortened_blocks(material, 1.0, ESTIMATOR) == material
    frame.findings, frame.shown = 5, 2
    assert frame.cut()
    assert "2 of its 5 findings, the sub-answers shortened to about 20%" in frame.warning(8_000)


async def test_the_frame_of_answered_sub_questions_reads_them_shortened() -> None:
    state = small_window_state((4, 4, 4), window=6_000)
    answered = []
    for t, topic in enumerate(TOPICS):
        sub_question = SubQuestion(question=f"What about {topic}?")
        state.sub_questions.append(sub_question)
        cited = state.sources[t].id
        for finding in state.findings[4 * t : 4 * t + 4]:
            finding.sub_question_id = sub_question.id
        answer = SubQuestionSynthesis(
            direct_answer=f"Answer {t}: it holds [{cited}].",
            evidence=[SENTENCE.format(n=f"{t}.{k}", cop=3, t=k) + f" [{cited}]" for k in range(60)],
            citations=[cited],
        )
        sub_question.synthesis = answer
        answered.append((sub_question, answer))
    writing = Writing(
        system=META_SYSTEM,
        material=render_sub_answers([(sq.question, a) for sq, a in answered]),
        citable=frozenset(s.id for s in state.sources),
        sections=tuple(sections_by_sub_question(state, answered)),
        frame_system=META_FRAME_SYSTEM,
    )
    provider = ConcurrentBrain()

    output = await synthesize(ResearchLLM(provider, "m", state, CallLog()), state, None, writing)

    prompts = [user for agent, _, user in provider.brain.history if agent == "writer"]
    (frame,) = [user for user in prompts if FRAME_MARKER in user]
    assert ESTIMATOR.count(frame) < 3_600  # what one call of this window may carry
    for t in range(3):  # every answer, its conclusion first, the evidence cut short
        assert f"Answer {t}: it holds" in frame
        assert SENTENCE.format(n=f"{t}.59", cop=3, t=59) not in frame
    body = body_of(output.report)
    assert all(f"## What about {topic}?" in body for topic in TOPICS)
    assert all(f.content.rstrip(".") in body for f in state.findings)
    assert any("the sub-answers shortened to about" in w for w in state.warnings), state.warnings


async def test_a_sub_question_answer_rests_on_the_findings_its_window_holds() -> None:
    # Sixty findings do not fit the answerer's prompt even at their shortest: it is written
    # from the strongest (the report's sections state them all), never failing the research.
    state = small_window_state((60, 0, 0), window=4_000)
    state.branch, state.parent_query = "sqn-00000001", state.query
    provider = ConcurrentBrain()

    output = await answer_sub_question(ResearchLLM(provider, "m", state, CallLog()), state, None)

    assert state.answer is not None and state.answer.fallback is None
    assert output.report
    assert any(
        "was written from" in w and "of its 60 findings" in w and "window holds" in w
        for w in state.warnings
    ), state.warnings
