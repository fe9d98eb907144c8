"""A completed research whose report has three versions, built from the models (no run): its
own report (version 1), a rewrite as a brief for a CFO (version 2) and a refresh that found a
new source and a new finding (version 3). Shared by the tests of a report that lives."""

from __future__ import annotations

from datetime import timedelta

from foundry_mcp.config import Settings
from foundry_mcp.research.models import (
    Finding,
    ReportForm,
    ReportMetadata,
    ReportVersion,
    ResearchState,
    RevisionKind,
    Source,
    Status,
    UsageTotals,
    VersionChanges,
    VersionCost,
    WritingInstructions,
)
from foundry_mcp.research.store.opening import open_store
from foundry_mcp.research.store.protocol import Store
from tests.support import STATE_BASE, stored_state

QUESTION = "How do heat pumps perform in cold climates?"


def _usage(tokens: int, calls: int, cost: float) -> UsageTotals:
    return UsageTotals(input_tokens=tokens, output_tokens=tokens // 5, calls=calls, cost_usd=cost)


def _metadata(report: str, cited: list[str]) -> ReportMetadata:
    sections = [line.lstrip("# ") for line in report.splitlines() if line.startswith("## ")]
    return ReportMetadata(
        sections=sections,
        word_count=len(report.split()),
        sources_cited=len(cited),
        cited_source_ids=cited,
    )


def versioned_research(research_id: str = "deepres-0000000000a1") -> ResearchState:
    """The research (see the module); its report is version 3's."""
    alpha = Source(id="src-alpha001", title="Alpha study", url="https://alpha.example/cold")
    beta = Source(id="src-beta0002", title="Beta field test", url="https://beta.example/test")
    gamma = Source(id="src-gamma003", title="Gamma 2026 update", url="https://gamma.example/new")
    cop = Finding(
        id="fnd-cop00001", content="Heat pumps keep a COP above 2 at -15 C.", source_ids=[alpha.id]
    )
    field = Finding(
        id="fnd-field002",
        content="Field tests show 30% lower bills in Norway.",
        source_ids=[beta.id],
    )
    new = Finding(
        id="fnd-new00003", content="2026 models reach COP 1.8 at -30 C.", source_ids=[gamma.id]
    )
    first = (
        "# Heat pumps in cold climates\n\n## Summary\n\nThey work well in the cold [1].\n\n"
        "## Efficiency\n\nThe COP stays above 2 at -15 C [1].\n\n## Costs\n\nBills fall by "
        "30% [2].\n\n## Sources\n\n[1] Alpha study - https://alpha.example/cold\n"
        "[2] Beta field test - https://beta.example/test\n"
    )
    brief = (
        "# Heat pumps: a brief for the CFO\n\n## Recommendation\n\nBuy them: bills fall by 30% "
        "[1].\n\n## Efficiency\n\nThe COP stays above 2 at -15 C [2].\n\n## Sources\n\n"
        "[1] Beta field test - https://beta.example/test\n"
        "[2] Alpha study - https://alpha.example/cold\n"
    )
    refreshed = (
        "# Heat pumps: a brief for the CFO\n\n## Recommendation\n\nBuy them: bills fall by 30% "
        "[1].\n\n## Efficiency\n\nThe COP stays above 2 at -15 C [2], and 2026 models reach "
        "1.8 at -30 C [3].\n\n## What changed\n\nNew 2026 models work colder [3].\n\n"
        "## Sources\n\n[1] Beta field test - https://beta.example/test\n"
        "[2] Alpha study - https://alpha.example/cold\n[3] Gamma 2026 update - "
        "https://gamma.example/new\n"
    )
    done = STATE_BASE + timedelta(hours=1)
    versions = [
        ReportVersion(
            number=1,
            report=first,
            report_metadata=_metadata(first, [alpha.id, beta.id]),
            finding_ids=[cop.id, field.id],
            cost=VersionCost(
                total=_usage(9_000, 12, 0.03),
                by_phase={
                    "planning": _usage(1_000, 2, 0.004),
                    "analysis": _usage(8_000, 10, 0.026),
                },
                search_calls=6,
            ),
            created_at=done,
        ),
        ReportVersion(
            number=2,
            kind=RevisionKind.REWRITE,
            instructions=WritingInstructions(form=ReportForm.BRIEF, audience="the CFO"),
            report=brief,
            report_metadata=_metadata(brief, [beta.id, alpha.id]),
            finding_ids=[cop.id, field.id],
            cost=VersionCost(
                total=_usage(2_000, 2, 0.005), by_phase={"synthesis": _usage(2_000, 2, 0.005)}
            ),
            created_at=done + timedelta(hours=1),
        ),
        ReportVersion(
            number=3,
            kind=RevisionKind.REFRESH,
            report=refreshed,
            report_metadata=_metadata(refreshed, [beta.id, alpha.id, gamma.id]),
            finding_ids=[cop.id, field.id, new.id],
            changes=VersionChanges(new_source_ids=[gamma.id], new_finding_ids=[new.id]),
            cost=VersionCost(
                total=_usage(3_000, 3, 0.008),
                by_phase={
                    "analysis": _usage(1_000, 1, 0.003),
                    "synthesis": _usage(2_000, 2, 0.005),
                },
                search_calls=3,
            ),
            created_at=done + timedelta(days=30),
        ),
    ]
    return stored_state(
        id=research_id,
        query=QUESTION,
        status=Status.COMPLETED,
        completed_at=done + timedelta(days=30),
        sources=[alpha, beta, gamma],
        findings=[cop, field, new],
        report=refreshed,
        report_metadata=versions[-1].report_metadata,
        versions=versions,
        search_calls=9,
    )


def save(store: Store, *states: ResearchState) -> None:
    for state in states:
        store.save(state)


def store_versioned_and_stopped(settings: Settings, research_id: str, stopped_id: str) -> None:
    """In the store of ``settings``: a research with three versions, and a failed one (which no
    revision may take)."""
    store = open_store(settings.research)
    try:
        save(
            store,
            versioned_research(research_id),
            stored_state(id=stopped_id, status=Status.FAILED, error="provider down"),
        )
    finally:
        store.close()
