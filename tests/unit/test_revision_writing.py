"""What the writer is given when a report is written again (form, audience, length, language,
corrections), and the sections code writes on what a deepen or a refresh changed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from foundry_mcp.research.models import (
    Finding,
    ReportForm,
    ReportMetadata,
    ResearchMode,
    ResearchOptions,
    ResearchState,
    Revision,
    RevisionKind,
    Source,
    SubQuery,
    SubQuestion,
    SubQuestionSynthesis,
    VersionChanges,
    WritingInstructions,
)
from foundry_mcp.research.prompts.revision import BRIEF_SYSTEM, MEMO_SYSTEM, TABLE_SYSTEM
from foundry_mcp.research.prompts.synthesizer import META_SYSTEM, SYNTHESIZER_SYSTEM
from foundry_mcp.research.revision.changes import (
    DEEPEN_HEADING,
    REFRESH_HEADING,
    changes_section,
    unchanged_report,
    with_section,
    without_changes_section,
)
from foundry_mcp.research.revision.versions import first_version
from foundry_mcp.research.revision.writing import guidance_for, in_language, writing_for
from tests.fakes.brain import ResearchBrain

A, B, C, D = "src-aaaaaaaa", "src-bbbbbbbb", "src-cccccccc", "src-dddddddd"
REPORT = (
    "# Heat pumps\n\nThey work in the cold [1].\n\n## Evidence Quality\n\nAll checked.\n\n"
    "## Sources\n\n[1] A survey - https://a.example\n"
)


def researched(mode: ResearchMode = ResearchMode.SIMPLE) -> ResearchState:
    sources = [
        Source(id=sid, title=f"Page {sid[-1]}", url=f"https://{sid[-1]}.example", sub_query_id=q)
        for sid, q in ((A, "sq-1"), (B, "sq-1"), (C, "sq-2"), (D, "sq-2"))
    ]
    findings = [
        Finding(content=f"Fact {n}.", source_ids=[sid], sub_question_id=part)
        for n, (sid, part) in enumerate(((A, "sqn-1"), (B, "sqn-1"), (C, "sqn-2"), (D, "sqn-2")))
    ]
    return ResearchState(
        query="How do heat pumps work in cold climates?",
        llm_provider="openai",
        llm_model="gpt-test",
        mode=mode,
        sources=sources,
        findings=findings,
        sub_queries=[SubQuery(id="sq-1", query="defrost"), SubQuery(id="sq-2", query="costs")],
        report=REPORT,
        search_calls=4,
        completed_at=datetime(2026, 3, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("form", "system"),
    [
        (ReportForm.BRIEF, BRIEF_SYSTEM),
        (ReportForm.TABLE, TABLE_SYSTEM),
        (ReportForm.MEMO, MEMO_SYSTEM),
    ],
)
def test_a_brief_a_table_or_a_memo_is_one_call_by_the_research_writer(
    form: ReportForm, system: str
) -> None:
    writing = writing_for(researched(), form, appendix="## What Changed\n\nx\n")
    assert writing.system == system and writing.sections == ()
    assert writing.appendix == "## What Changed\n\nx\n"
    # The writer still cites ids, so citations resolve and sentences are checked, and the fake
    # model (as any writer prompt) takes it for the research writer.
    assert "[src-1a2b3c4d]" in system and ResearchBrain.identify(system) == "writer"


def test_the_full_report_keeps_the_modes_sections() -> None:
    simple = writing_for(researched(), ReportForm.REPORT)
    assert simple.system == SYNTHESIZER_SYSTEM
    assert [s.topic for s in simple.sections] == ["defrost", "costs"]
    state = researched(ResearchMode.HIERARCHICAL)
    answer = SubQuestionSynthesis(direct_answer="Yes [src-aaaaaaaa].", citations=[A])
    state.sub_questions = [
        SubQuestion(id="sqn-1", question="Do they defrost?", synthesis=answer),
        SubQuestion(id="sqn-2", question="What do they cost?"),
    ]
    meta = writing_for(state, ReportForm.REPORT)
    assert meta.system == META_SYSTEM and meta.citable == frozenset({A})
    assert [s.topic for s in meta.sections] == ["Do they defrost?", "What do they cost?"]
    assert meta.material and "Yes [src-aaaaaaaa]." in meta.material
    # A brief of a hierarchical research is written from its sub-answers too.
    brief = writing_for(state, ReportForm.BRIEF)
    assert brief.material == meta.material and brief.sections == ()


def test_the_guidance_says_what_the_caller_asked_and_nothing_else() -> None:
    assert guidance_for(WritingInstructions()) is None
    asked = WritingInstructions(
        audience="  the   engineering team ",
        length_words=400,
        corrections="The 2019 figure is a forecast, not a measurement.",
    )
    guidance = guidance_for(asked)
    assert guidance is not None
    assert "the engineering team" in guidance and "about 400 words" in guidance
    assert "The 2019 figure is a forecast" in guidance
    assert "never state what no finding supports" in guidance


def test_a_language_is_the_reports_only_while_it_is_written() -> None:
    options = ResearchOptions(language=None, language_from_question=True)
    with in_language(options, "German"):
        assert (options.language, options.language_from_question) == ("German", False)
    assert (options.language, options.language_from_question) == (None, True)
    with pytest.raises(RuntimeError), in_language(options, "French"):
        raise RuntimeError("the writer failed")
    assert options.language is None  # restored before the run saves what it stopped at
    with in_language(options, None):
        assert options.language_from_question  # the research's own, decided as usual


def test_a_deepens_section_cites_its_new_findings_sources() -> None:
    state = researched()
    new = Finding(content="Defrost cycles cost 5% of output.", source_ids=[C, D])
    state.findings.append(new)
    state.search_calls = 7
    revision = Revision(
        kind=RevisionKind.DEEPEN,
        part="sqn-1",
        part_question="How often do   they defrost?",
        search_calls_before=4,
        changes=VersionChanges(new_source_ids=[C, "src-eeeeeeee"], new_finding_ids=[new.id]),
    )
    section = changes_section(state, revision)
    assert section is not None and section.startswith(DEEPEN_HEADING)
    assert '"How often do they defrost?" was researched further (3 searches)' in section
    assert f"- New pages: 2 [{C}]; 1 gave no finding" in section
    assert f"  - Defrost cycles cost 5% of output [{C}][{D}]." in section
    assert "src-eeeeeeee" not in section  # a page no finding cites is counted, never cited
    assert (
        changes_section(state, revision.model_copy(update={"kind": RevisionKind.REWRITE})) is None
    )


def test_a_refreshs_section_says_what_changed_and_what_no_longer_holds() -> None:
    state = researched()
    gone = Finding(content="Old efficiency figure.", source_ids=[B])
    revision = Revision(
        kind=RevisionKind.REFRESH,
        since=datetime(2026, 3, 1, tzinfo=UTC),
        search_calls_before=4,
        changes=VersionChanges(
            changed_source_ids=[B],
            moved_source_ids=[D],
            moved_to={D: "https://d2.example"},
            dropped_finding_ids=[gone.id],
            dropped_findings=[gone],
        ),
    )
    section = changes_section(state, revision)
    assert section is not None and section.startswith(REFRESH_HEADING)
    assert "since 2026-03-01 (0 searches)" in section
    assert f"- Pages whose text changed: 1\n  - Page b <https://b.example> [{B}]\n" in section
    assert f"  - Page d <https://d.example>, now at <https://d2.example> [{D}]\n" in section
    assert "and 4 cited pages read again" in section  # two unchanged, one changed, one gone
    assert "- Findings the changed pages no longer support: 1" in section
    assert "  - Old efficiency figure." in section


def test_a_refresh_that_found_nothing_keeps_the_report_saying_so() -> None:
    state = researched()
    state.report_metadata = ReportMetadata(cited_source_ids=[A, B, "src-00000000"])
    first_version(state)
    state.search_calls = 7
    revision = Revision(
        kind=RevisionKind.REFRESH,
        since=datetime(2026, 3, 1, tzinfo=UTC),
        search_calls_before=4,
        base_version=1,
    )
    report = unchanged_report(state, revision)
    body, _, rest = report.partition("## Evidence Quality")
    assert body.startswith("# Heat pumps\n\nThey work in the cold [1].")
    assert f"{REFRESH_HEADING}\n\n" in body
    assert "since 2026-03-01 (3 searches), and 2 cited pages read again" in body
    assert "Nothing was found that the version before did not hold." in body
    assert rest.endswith("[1] A survey - https://a.example\n")  # the Sources list as it was
    # Refreshed again: the last section is replaced, not stacked.
    state.report = report
    assert unchanged_report(state, revision) == report


def test_an_earlier_versions_section_is_taken_out_and_a_new_one_goes_before_the_evidence() -> None:
    report = with_section(REPORT, f"{DEEPEN_HEADING}\n\nAdded x [1].\n")
    assert report.index(DEEPEN_HEADING) < report.index("## Evidence Quality")
    assert without_changes_section(report) == REPORT
    no_sources = "# Only a title\n"
    assert with_section(no_sources, "## What Changed\n\nNothing.") == (
        "# Only a title\n\n## What Changed\n\nNothing.\n"
    )
