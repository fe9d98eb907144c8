"""A report that lives, read: the versions list with what made each and its cost, one version
picked for the report and the export, the delta between two, and the revise request's checks."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from foundry_mcp.errors import InputError
from foundry_mcp.research.export.document import ResearchExport
from foundry_mcp.research.export.files import export_research
from foundry_mcp.research.models import Status, UsageTotals
from foundry_mcp.research.service.completed.delta import sections
from foundry_mcp.research.service.completed.request import ReviseRequest
from foundry_mcp.research.service.completed.versions import (
    at_version,
    versions_of,
    versions_payload,
)
from foundry_mcp.server.results.data import conform
from tests.report_versions import versioned_research
from tests.support import stored_state

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def test_the_list_says_what_made_each_version_and_what_it_cost() -> None:
    listed = versions_payload(versioned_research())
    assert listed["latest"] == 3 and listed["revision"] is None
    first, brief, refresh = listed["versions"]
    assert [v["kind"] for v in listed["versions"]] == ["research", "rewrite", "refresh"]
    assert brief["instructions"] == {"form": "brief", "audience": "the CFO"}
    assert first["cost"]["by_phase"]["planning"]["calls"] == 2
    assert refresh["cost"]["total"] == {
        "input_tokens": 3000,
        "output_tokens": 600,
        "calls": 3,
        "cost_usd": 0.008,
        "unpriced_calls": 0,
    }
    assert refresh["cost"]["search_calls"] == 3 and brief["cost"]["search_calls"] == 0
    assert refresh["changes_summary"] == "1 new source; 1 new finding"
    assert (refresh["cited_sources"], refresh["findings"], refresh["latest"]) == (3, 3, True)
    assert brief["changes"] is None and brief["changes_summary"] is None
    assert conform("deep-research-versions", listed) == json.loads(json.dumps(listed))


def test_a_research_never_revised_has_one_version_its_report() -> None:
    usage = UsageTotals(input_tokens=500, output_tokens=50, calls=2, cost_usd=0.01)
    state = stored_state(status=Status.COMPLETED, report="# R\n\n## A\n\nText.\n", search_calls=4)
    state.llm_usage.total = usage
    (only,) = versions_of(state)
    assert (only.number, only.kind.value, only.report) == (1, "research", state.report)
    assert only.cost.total == usage and only.cost.search_calls == 4
    assert at_version(state, None) == (state, 1) and at_version(state, 1) == (state, 1)
    assert versions_of(stored_state()) == []  # no report, no version


def test_the_delta_shows_what_each_version_has_that_the_other_has_not() -> None:
    delta = versions_payload(versioned_research(), 3, 1)["delta"]
    added, removed = delta["added"], delta["removed"]
    assert added["sections"] == [
        "Heat pumps: a brief for the CFO",
        "Recommendation",
        "What changed",
    ]
    assert removed["sections"] == ["Heat pumps in cold climates", "Summary", "Costs"]
    assert [c["heading"] for c in delta["changed_sections"]] == ["Efficiency", "Sources"]
    assert [(s["number"], s["source_id"]) for s in added["sources"]] == [(3, "src-gamma003")]
    assert removed["sources"] == [] and removed["findings"] == []
    assert [f["content"] for f in added["findings"]] == ["2026 models reach COP 1.8 at -30 C."]
    assert delta["changes"] == [
        {
            "version": 3,
            "kind": "refresh",
            "new_source_ids": ["src-gamma003"],
            "changed_source_ids": [],
            "moved_source_ids": [],
            "new_finding_ids": ["fnd-new00003"],
            "dropped_finding_ids": [],
        }
    ]
    assert delta["summary"] == (
        "Version 3 has 3 sections, 1 cited source, 1 finding that version 1 has not; version 1 "
        "has 3 sections that version 3 has not; 2 sections in both changed."
    )
    # The other way round, each side swaps; by default a version is compared with the one before.
    back = versions_payload(versioned_research(), 1, 3)["delta"]
    assert back["added"] == removed and back["removed"] == added and back["changes"]
    assert versions_payload(versioned_research(), 3)["delta"]["compare_to"] == 2


@pytest.mark.parametrize(
    ("version", "compare_to", "field"),
    [(4, None, "version"), (3, 9, "compare_to"), (1, None, "compare_to"), (None, 2, "version")],
)
def test_a_version_that_is_not_there_is_refused_with_those_there_are(
    version: int | None, compare_to: int | None, field: str
) -> None:
    with pytest.raises(InputError) as refused:
        versions_payload(versioned_research(), version, compare_to)
    assert refused.value.details["field"] == field
    if field == "version" and version == 4:
        assert "its versions: 1, 2, 3" in refused.value.message
        assert refused.value.details["versions"] == [1, 2, 3]


def test_an_earlier_version_is_read_and_exported_with_its_number(tmp_path: Path) -> None:
    state = versioned_research()
    shown, number = at_version(state, 2)
    assert number == 2 and shown.report == state.versions[1].report
    assert shown.report_metadata == state.versions[1].report_metadata and shown.claim_checks == []
    assert state.report == state.versions[2].report  # the research itself is unchanged

    def export(fmt: str, version: int) -> dict[str, object]:
        picked, n = at_version(state, version)
        return export_research(
            picked, fmt, path=None, overwrite=False, workspace=tmp_path, now=NOW, version=n
        )

    markdown = export("markdown", 2)
    assert markdown["version"] == 2
    text = str(markdown["content"])
    assert text.startswith("# Heat pumps: a brief for the CFO") and "What changed" not in text
    assert text.rstrip().endswith("*Version 2 of 3: a rewrite (brief, for the CFO), 2024-05-01.*")
    exported = ResearchExport.model_validate_json(str(export("json", 1)["content"]))
    assert exported.version == 1 and exported.report is not None
    assert exported.report.startswith("# Heat pumps in cold climates")
    assert [(v.number, v.kind) for v in exported.versions] == [
        (1, "research"),
        (2, "rewrite"),
        (3, "refresh"),
    ]
    assert exported.versions[2].changes == {
        "new_source_ids": ["src-gamma003"],
        "changed_source_ids": [],
        "moved_source_ids": [],
        "new_finding_ids": ["fnd-new00003"],
        "dropped_finding_ids": [],
        "dropped_findings": [],
        "moved_to": {},
    }
    assert export("bibtex", 1)["content"] != export("bibtex", 3)["content"]  # its cited sources


def test_headings_in_a_code_fence_are_not_sections() -> None:
    report = "intro\n# Title\n\n```sh\n# a comment\n```\n## Part\ntext\n## Part\nmore\n"
    assert list(sections(report)) == ["title", "part", "part#2"]
    assert sections(report)["title"][1].count("# a comment") == 1


def test_a_revise_request_is_read_from_an_object_or_its_text() -> None:
    asked = ReviseRequest.read('{"kind": "deepen", "part": " Costs ", "max_searches": 4}')
    assert (asked.kind, asked.part, asked.max_searches) == ("deepen", "Costs", 4)
    brief = ReviseRequest.read({"kind": "rewrite", "form": "brief", "language": "German"})
    assert brief.instructions().form.value == "brief" and brief.instructions().language == "German"


@pytest.mark.parametrize(
    ("given", "key", "said"),
    [
        (None, None, "revise is required"),
        ("rewrite", None, "revise is required"),
        ({"form": "brief"}, "kind", "revise.kind: Field required"),
        ({"kind": "shorten"}, "kind", "revise.kind: Input should be 'rewrite'"),
        ({"kind": "rewrite", "tone": "dry"}, "tone", "revise.tone: is not a key of revise"),
        ({"kind": "rewrite", "length_words": 5}, "length_words", "greater than or equal to 100"),
        ({"kind": "rewrite", "length_words": "300"}, "length_words", "valid integer"),
        ({"kind": "deepen"}, "part", "revise.part is required for a deepen"),
        ({"kind": "refresh", "part": "Costs"}, "part", "applies to a deepen only"),
        ({"kind": "rewrite", "max_searches": 3}, "max_searches", "a rewrite makes no search"),
        ({"kind": "refresh", "max_searches": 0}, "max_searches", "greater than or equal to 1"),
    ],
)
def test_a_bad_revise_object_is_refused_naming_its_key(
    given: object, key: str | None, said: str
) -> None:
    with pytest.raises(InputError) as refused:
        ReviseRequest.read(given)
    assert said in refused.value.message
    assert refused.value.details.get("key") == key and refused.value.details["field"] == "revise"
    assert "kind (rewrite, deepen or refresh)" in refused.value.remediation or key in (
        "part",
        "max_searches",
    )
