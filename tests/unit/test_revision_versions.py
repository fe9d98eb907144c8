"""A report's versions: numbered in order, each costing what the research spent making it, the
costs adding up to the research's usage."""

from __future__ import annotations

from datetime import UTC, datetime

from foundry_mcp.research.models import (
    Finding,
    LLMCallRecord,
    ReportMetadata,
    ResearchState,
    Revision,
    RevisionKind,
    UsageTotals,
    VersionChanges,
    WritingInstructions,
)
from foundry_mcp.research.revision.versions import (
    TOTAL,
    cost_since,
    first_version,
    minus,
    record_research_version,
    revision_version,
    usage_snapshot,
)


def call(phase: str, tokens_in: int, tokens_out: int, cost: float | None = 0.01) -> LLMCallRecord:
    return LLMCallRecord(
        phase=phase,
        purpose=phase,
        provider="openai",
        model="gpt-test",
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_usd=cost,
    )


def researched() -> ResearchState:
    state = ResearchState(query="q", llm_provider="openai", llm_model="gpt-test")
    for record in (
        call("planning", 100, 10),
        call("analysis", 1000, 200),
        call("synthesis", 500, 300),
    ):
        state.llm_usage.add(record)
    state.search_calls = 6
    state.findings = [Finding(content="A fact.", source_ids=["src-aaaaaaaa"])]
    state.report = "# Report\n\nA fact [1].\n"
    state.report_metadata = ReportMetadata(cited_source_ids=["src-aaaaaaaa"])
    state.completed_at = datetime(2026, 3, 1, tzinfo=UTC)
    return state


def test_the_first_version_costs_the_whole_research_and_dates_from_its_completion() -> None:
    state = researched()
    version = first_version(state)
    assert (version.number, version.kind) == (1, RevisionKind.RESEARCH)
    assert version.report == state.report and version.finding_ids == [state.findings[0].id]
    assert version.cited_source_ids == ["src-aaaaaaaa"]
    assert version.cost.total == state.llm_usage.total
    assert set(version.cost.by_phase) == {"planning", "analysis", "synthesis"}
    assert version.cost.search_calls == 6
    assert version.created_at == state.completed_at
    # The version keeps its own metadata: a later report's does not change it.
    assert state.report_metadata is not None
    state.report_metadata.cited_source_ids.append("src-bbbbbbbb")
    assert version.cited_source_ids == ["src-aaaaaaaa"]


def test_a_revisions_cost_is_what_was_spent_since_it_began_by_phase() -> None:
    state = researched()
    first_version(state)
    before = usage_snapshot(state)
    assert before[TOTAL].calls == 3 and before["analysis"].input_tokens == 1000
    state.llm_usage.add(call("synthesis", 400, 100, cost=0.02))
    state.llm_usage.add(call("synthesis", 50, 5, cost=None))  # a model with no known price
    state.llm_usage.add(call("verification", 70, 7))
    state.search_calls += 2
    cost = cost_since(state, before, 6)
    assert cost.total.calls == 3
    assert cost.total.input_tokens == 520 and cost.total.output_tokens == 112
    assert round(cost.total.cost_usd, 6) == 0.03 and cost.total.unpriced_calls == 1
    # Only the phases that made a call; the snapshot itself is not moved by the new calls.
    assert set(cost.by_phase) == {"synthesis", "verification"}
    assert cost.by_phase["synthesis"].input_tokens == 450
    assert cost.by_phase["verification"].calls == 1
    assert before["synthesis"].input_tokens == 500
    assert cost.search_calls == 2


def test_usage_never_goes_below_zero() -> None:
    now = UsageTotals(input_tokens=5, calls=1)
    assert minus(now, UsageTotals(input_tokens=9, calls=3)) == UsageTotals()
    assert minus(now, None) == now


def test_versions_are_numbered_after_the_last_and_keep_what_made_them() -> None:
    state = researched()
    first_version(state)
    revision = Revision(
        kind=RevisionKind.DEEPEN,
        part="costs",
        instructions=WritingInstructions(audience="a CFO"),
        usage_before=usage_snapshot(state),
        search_calls_before=state.search_calls,
        changes=VersionChanges(new_source_ids=["src-cccccccc"]),
    )
    state.report = "# Report\n\nA fact [1]. More [2].\n"
    second = revision_version(state, revision)
    rewrite = revision.model_copy(update={"kind": RevisionKind.REWRITE, "part": None})
    third = revision_version(state, rewrite)
    assert [v.number for v in state.versions] == [1, 2, 3]
    assert (second.kind, second.part, second.report) == (RevisionKind.DEEPEN, "costs", state.report)
    assert second.instructions == WritingInstructions(audience="a CFO")
    assert second.changes is not None and second.changes.new_source_ids == ["src-cccccccc"]
    assert third.changes is None  # a rewrite changes no evidence
    assert second.cost.total.calls == 0


def test_a_further_round_of_the_research_is_a_version_costing_what_the_others_did_not() -> None:
    state = researched()
    assert record_research_version(state) is None  # no versions kept: nothing to add to
    first_version(state)
    assert record_research_version(state) is None  # the same report
    revision = Revision(
        kind=RevisionKind.REWRITE,
        usage_before=usage_snapshot(state),
        search_calls_before=state.search_calls,
    )
    state.llm_usage.add(call("synthesis", 300, 100))
    state.report = "# Kurzfassung\n"
    revision_version(state, revision)
    # A resume with another round: its calls and searches are the new version's cost.
    state.llm_usage.add(call("analysis", 800, 80))
    state.llm_usage.add(call("synthesis", 600, 90))
    state.search_calls += 3
    state.report = "# Report, second round\n"
    state.revision = None
    version = record_research_version(state)
    assert version is not None and (version.number, version.kind) == (3, RevisionKind.RESEARCH)
    assert version.cost.total.calls == 2 and version.cost.total.input_tokens == 1400
    assert set(version.cost.by_phase) == {"analysis", "synthesis"}
    assert version.cost.search_calls == 3
    # The versions' costs add up to the research's usage.
    assert sum(v.cost.total.calls for v in state.versions) == state.llm_usage.total.calls
    assert sum(v.cost.total.input_tokens for v in state.versions) == (
        state.llm_usage.total.input_tokens
    )
    assert sum(v.cost.search_calls for v in state.versions) == state.search_calls
    # While a revision is pending the research's own run adds nothing.
    state.revision = revision
    state.report = "# Another\n"
    assert record_research_version(state) is None
