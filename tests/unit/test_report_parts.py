"""A report written in parts at once: its sections, how they are put together, and the calls."""

from __future__ import annotations

import re
import threading

import anyio
import pytest

from foundry_mcp.providers.llm.base import LLMRequest, LLMResponse
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import (
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
from foundry_mcp.research.verification import ExcerptSelector
from foundry_mcp.research.workflow.report.parts import (
    MAX_SECTIONS,
    ReportSection,
    assemble,
    merge_smallest,
    sections_by_sub_query,
    sections_by_sub_question,
    without_title,
)
from foundry_mcp.research.workflow.report.synthesizer import Writing, synthesize
from tests.fakes import ResearchBrain

TOPICS = ("heat pump efficiency in frost", "heat pump noise levels", "heat pump running costs")


def _state(findings_per_topic: int = 2, max_concurrent: int = 4) -> ResearchState:
    state = ResearchState(
        query="How do heat pumps perform in cold climates?",
        llm_provider="scripted",
        llm_model="m",
        limits=ResearchLimits(max_concurrent=max_concurrent),
        options=ResearchOptions(verify_citations=False),
    )
    for t, topic in enumerate(TOPICS):
        sub_query = SubQuery(query=topic)
        source = Source(title=f"page {t}", url=f"https://x.example/{t}", sub_query_id=sub_query.id)
        sub_query.source_ids.append(source.id)
        state.sub_queries.append(sub_query)
        state.sources.append(source)
        state.findings += [
            Finding(content=f"Fact {t}.{n} about {topic} holds.", source_ids=[source.id])
            for n in range(findings_per_topic)
        ]
    return state


def _checked_state() -> ResearchState:
    """The state of :func:`_state`, fact-checked, each source's page holding its findings."""
    state = _state()
    state.options.verify_citations = True
    for source in state.sources:
        source.content = " ".join(f.content for f in state.findings if source.id in f.source_ids)
    return state


def test_findings_are_grouped_by_the_sub_query_that_found_them() -> None:
    state = _state()
    orphan = Finding(content="A fact from a source no sub-query found.", source_ids=["src-x"])
    state.findings.insert(0, orphan)
    state.findings[-1].content += " (also the biggest group)"
    state.findings.append(Finding(content="One more on costs.", source_ids=[state.sources[2].id]))

    sections = sections_by_sub_query(state)

    assert [s.topic for s in sections] == list(TOPICS)
    assert [len(s.finding_ids) for s in sections] == [2, 2, 4]  # the orphan joins the largest
    assert orphan.id in sections[2].finding_ids


def test_one_topic_or_few_findings_make_a_single_call() -> None:
    few = _state(findings_per_topic=1)
    assert sections_by_sub_query(few) == []  # three findings
    single = _state()
    for finding in single.findings:
        finding.source_ids = [single.sources[0].id]
    assert sections_by_sub_query(single) == []


def test_too_many_topics_are_merged_smallest_first_keeping_order() -> None:
    sizes = [5, 1, 4, 2, 6, 1, 3, 2]
    sections = [
        ReportSection(f"t{n}", tuple(f"f{n}-{k}" for k in range(size)))
        for n, size in enumerate(sizes)
    ]
    merged = merge_smallest(sections)

    assert len(merged) == MAX_SECTIONS
    ids = [i for s in merged for i in s.finding_ids]
    assert ids == [i for s in sections for i in s.finding_ids]  # nothing lost, order kept
    # Each single-finding topic joined its smaller neighbour.
    assert [s.topic for s in merged] == ["t0", "t1; t2", "t3", "t4", "t5; t6", "t7"]


def test_sections_go_between_the_summary_and_the_rest_of_the_frame() -> None:
    frame = (
        "# Heat pumps in the cold\n\n## Executive Summary\n\nThey work [src-1].\n\n"
        "## Limitations and Open Questions\n\nFew trials.\n\n## Conclusion\n\nBuy one."
    )
    report = assemble(frame, ["## Efficiency\n\nCOP of 2 [src-1].", "", "## Noise\n\nQuiet."])

    headings = re.findall(r"^#+ (.+)$", report, re.MULTILINE)
    assert headings == [
        "Heat pumps in the cold",
        "Executive Summary",
        "Efficiency",
        "Noise",
        "Limitations and Open Questions",
        "Conclusion",
    ]
    # A frame the model wrote without the expected headings keeps every part.
    plain = assemble("Just a paragraph.", ["## Efficiency\n\nCOP of 2."])
    assert plain.startswith("Just a paragraph.") and "## Efficiency" in plain


def test_a_title_a_section_writer_added_is_left_out() -> None:
    assert without_title("# Heat pumps\n\n## Noise\n\nQuiet.") == "## Noise\n\nQuiet."
    assert without_title("## Noise\n\nQuiet.") == "## Noise\n\nQuiet."


class ConcurrentBrain:
    """The fake brain as a provider that counts the writer calls in flight at once."""

    name = "scripted"

    def __init__(self) -> None:
        self.brain = ResearchBrain()
        self.in_flight = 0
        self.max_in_flight = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await anyio.sleep(0.05)
            text = self.brain.respond(request.system, request.user)
        finally:
            self.in_flight -= 1
        return LLMResponse(text=text, model="m", provider=self.name, input_tokens=1)

    async def aclose(self) -> None:
        pass


@pytest.mark.anyio
@pytest.mark.parametrize("max_concurrent", [4, 2])
async def test_the_frame_and_every_section_are_written_at_once(max_concurrent: int) -> None:
    state = _state(max_concurrent=max_concurrent)
    provider = ConcurrentBrain()

    output = await synthesize(ResearchLLM(provider, "m", state, CallLog()), state, None)

    writer_calls = provider.brain.calls["writer"]
    assert writer_calls == len(TOPICS) + 1  # three sections and the frame
    assert provider.max_in_flight == min(max_concurrent, writer_calls)
    body = output.report.split("\n## Sources\n", 1)[0]
    headings = re.findall(r"^## (.+)$", body, re.MULTILINE)
    assert headings[0] == "Executive Summary"
    assert headings[1 : 1 + len(TOPICS)] == list(TOPICS)  # in the sub-queries' order
    for finding in state.findings:
        assert finding.content.rstrip(".") in body
    assert output.report_metadata.sources_cited == len(state.sources)


@pytest.mark.anyio
async def test_parallel_writing_can_be_switched_off() -> None:
    state = _state()
    state.options.parallel_writing = False
    provider = ConcurrentBrain()

    await synthesize(ResearchLLM(provider, "m", state, CallLog()), state, None)

    assert provider.brain.calls["writer"] == 1


def _answered_state() -> tuple[ResearchState, list[tuple[SubQuestion, SubQuestionSynthesis]]]:
    """Three sub-questions with two findings each (two sources apiece); the first two answered,
    each answer citing only its first source."""
    state = _state()
    answered = []
    for t, topic in enumerate(TOPICS):
        sub_question = SubQuestion(question=f"What about {topic}?")
        state.sub_questions.append(sub_question)
        extra = Source(title=f"extra {t}", url=f"https://y.example/{t}")
        state.sources.append(extra)
        own = [f for f in state.findings if f.content.startswith(f"Fact {t}.")]
        own[1].source_ids = [extra.id]
        for finding in own:
            finding.sub_question_id = sub_question.id
        if t < 2:
            answer = SubQuestionSynthesis(
                direct_answer=f"Answer {t}: it holds [{state.sources[t].id}].",
                evidence=[f"Evidence line {t} [{state.sources[t].id}]."],
                citations=[state.sources[t].id],
                caveats=[f"Caveat {t}."],
            )
            sub_question.synthesis = answer
            answered.append((sub_question, answer))
    return state, answered


@pytest.mark.anyio
async def test_a_sub_answer_stands_for_its_findings_in_the_frame() -> None:
    state, answered = _answered_state()
    provider = ConcurrentBrain()
    writing = Writing(
        system=META_SYSTEM,
        material=render_sub_answers([(sq.question, a) for sq, a in answered]),
        citable=frozenset(sid for _, a in answered for sid in a.citations),
        sections=tuple(sections_by_sub_question(state, answered)),
        frame_system=META_FRAME_SYSTEM,
    )

    output = await synthesize(ResearchLLM(provider, "m", state, CallLog()), state, None, writing)

    prompts = [user for agent, _, user in provider.brain.history if agent == "writer"]
    frame = next(p for p in prompts if "Body sections written separately" in p)
    sections = [p for p in prompts if p is not frame]
    answered_facts = [f for f in state.findings if f.content.startswith(("Fact 0.", "Fact 1."))]
    open_facts = [f for f in state.findings if f.content.startswith("Fact 2.")]
    # The frame reads the answers (with their evidence) and the findings no answer covers ...
    assert "Evidence line 0" in frame and "Evidence line 1" in frame
    assert all(f.content in frame for f in open_facts)
    assert not any(f.content in frame for f in answered_facts)
    # ... and lists the sources those cite, not the ones only an answered finding cites.
    listed = frame.split("Sources available for citation:", 1)[1]
    assert state.sources[0].id in listed and state.sources[2].id in listed
    assert all(s.id not in listed for s in state.sources if s.title in ("extra 0", "extra 1"))
    # A section reads its answer's conclusion and caveats, and its own findings in full.
    first = next(p for p in sections if "Answer 0" in p)
    assert "Caveat 0" in first and "Evidence line 0" not in first
    assert all(f.content in first for f in answered_facts[:2])
    # Every finding still reaches the report through its section.
    body = output.report.split("\n## Sources\n", 1)[0]
    assert all(f.content.rstrip(".") in body for f in state.findings)


@pytest.mark.anyio
async def test_sources_are_indexed_for_the_fact_checker_while_the_writers_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = _checked_state()
    provider = ConcurrentBrain()
    loop_thread = threading.get_ident()
    indexed: list[tuple[str, bool]] = []  # source id, indexed on the event loop's thread
    original = ExcerptSelector._sentence_index

    def recording(self: ExcerptSelector, source_id: str) -> object:
        if source_id not in self._sentences:
            indexed.append((source_id, threading.get_ident() == loop_thread))
        return original(self, source_id)

    monkeypatch.setattr(ExcerptSelector, "_sentence_index", recording)

    await synthesize(ResearchLLM(provider, "m", state, CallLog()), state, None)

    assert provider.brain.calls["verifier"] >= 1
    assert {sid for sid, _ in indexed} == {s.id for s in state.sources}
    assert not any(on_loop for _, on_loop in indexed)  # in a thread, while the writers wrote


class SlowFrameBrain(ConcurrentBrain):
    """The fake brain with a frame writer that answers last, long after the sections."""

    def __init__(self) -> None:
        super().__init__()
        self.frame_out = False

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if "Body sections written separately" not in request.user:
            return await super().complete(request)
        self.frame_out = True
        try:
            await anyio.sleep(0.5)
            return await super().complete(request)
        finally:
            self.frame_out = False


@pytest.mark.anyio
async def test_the_claims_of_a_part_get_their_excerpts_while_the_other_parts_are_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A section written while the frame's writer is still out has its cited sentences'
    excerpts chosen then, in a thread; the fact-check uses them without choosing again."""
    state = _checked_state()
    provider = SlowFrameBrain()
    loop_thread = threading.get_ident()
    chosen: list[tuple[str, bool, bool]] = []  # claim, frame still out, on the loop's thread
    original = ExcerptSelector._choose

    def recording(self: ExcerptSelector, claim: str, source_ids: object) -> object:
        chosen.append((claim, provider.frame_out, threading.get_ident() == loop_thread))
        return original(self, claim, source_ids)  # type: ignore[arg-type]

    monkeypatch.setattr(ExcerptSelector, "_choose", recording)

    await synthesize(ResearchLLM(provider, "m", state, CallLog()), state, None)

    judged = [check.sentence for check in state.claim_checks if check.quotes]
    ahead = {claim for claim, frame_out, _ in chosen if frame_out}
    assert provider.brain.calls["verifier"] >= 1
    assert any(
        finding.content.rstrip(".") in claim for claim in ahead for finding in state.findings
    )
    assert ahead <= set(judged)  # chosen ahead for sentences the fact-check then judged
    assert len(chosen) == len({claim for claim, _, _ in chosen})  # none chosen twice
    assert not any(on_loop for _, _, on_loop in chosen)
