"""Reading a report in pages and taking its summary."""

from __future__ import annotations

import random

import pytest

from foundry_mcp.research.service.payloads.report_pages import (
    SUMMARY_MAX_CHARS,
    report_page,
    report_summary,
)


def _report(seed: int, lines: int) -> str:
    rng = random.Random(seed)
    out = ["# Report", "", "## Executive Summary", ""]
    for i in range(lines):
        if rng.random() < 0.1:
            out += ["", f"## Section {i}", ""]
        out.append(
            " ".join(
                rng.choice(["alpha", "beta", "gamma", "δέλτα", "[1]"])
                for _ in range(rng.randint(0, 40))
            )
        )
    return "\n".join(out)


REPORTS = [
    _report(1, 200),
    _report(2, 30),
    "x" * 5000,  # no line breaks at all
    "short\nreport",
    "line\n" * 400,
    "",
]


def _pages(report: str, max_chars: int) -> list[dict]:
    pages, offset = [], 0
    while True:
        page = report_page(report, offset, max_chars)
        pages.append(page)
        assert len(pages) < 10_000, "paging does not advance"
        if page["next_offset"] is None:
            return pages
        assert page["next_offset"] > offset
        offset = page["next_offset"]


@pytest.mark.parametrize("max_chars", [7, 100, 999, 1000, 4096, 20000])
@pytest.mark.parametrize("report", REPORTS, ids=range(len(REPORTS)))
def test_pages_cover_the_report_exactly_once(report: str, max_chars: int) -> None:
    pages = _pages(report, max_chars)
    assert "".join(p["report"] for p in pages) == report
    position = 0
    for page in pages:
        assert page["offset"] == position
        assert len(page["report"]) <= max_chars
        assert page["total_chars"] == len(report)
        assert page["truncated"] == (page["next_offset"] is not None)
        position += len(page["report"])
    assert not pages[-1]["truncated"]


@pytest.mark.parametrize("max_chars", [50, 100, 999, 4096])
@pytest.mark.parametrize("report", REPORTS[:2] + REPORTS[4:5], ids=range(3))
def test_pages_end_at_line_breaks_when_one_is_near(report: str, max_chars: int) -> None:
    for page in _pages(report, max_chars)[:-1]:
        start = page["offset"]
        window = report[start + max_chars // 2 : start + max_chars]
        if "\n" in window:
            assert page["report"].endswith("\n")
            # It ends at the last line break of the window, not an earlier one.
            assert len(page["report"]) == start + max_chars // 2 + window.rfind("\n") + 1 - start


def test_page_without_line_breaks_is_cut_at_max_chars() -> None:
    page = report_page("y" * 300, 0, 120)
    assert page["report"] == "y" * 120
    assert page["next_offset"] == 120


def test_page_starts_at_the_offset() -> None:
    report = "0123456789\n" * 20
    page = report_page(report, 33, 1000)
    assert page["report"] == report[33:]
    assert page["offset"] == 33
    assert page["next_offset"] is None


@pytest.mark.parametrize("extra", [0, 1, 10_000])
def test_offset_at_or_past_the_end_gives_an_empty_last_page(extra: int) -> None:
    report = _report(3, 20)
    page = report_page(report, len(report) + extra, 1000)
    assert page["report"] == ""
    assert page["next_offset"] is None
    assert page["truncated"] is False
    assert page["total_chars"] == len(report)


# --------------------------------------------------------------------------- summary


def test_summary_is_the_executive_summary_section() -> None:
    report = (
        "# Title\n\nIntro paragraph that is not the summary.\n\n## Executive Summary\n\n"
        "The answer is 42.\n\nIt has two paragraphs.\n\n## Details\n\nMore.\n"
    )
    assert report_summary(report) == "The answer is 42.\n\nIt has two paragraphs."


@pytest.mark.parametrize(
    "heading", ["## executive summary", "# Summary", "### TL;DR", "## Overview"]
)
def test_summary_heading_variants(heading: str) -> None:
    report = f"# Title\n\nPreface.\n\n{heading}\n\nCore point.\n\n## Next\n\nOther.\n"
    assert report_summary(report) == "Core point."


def test_summary_section_at_the_end_runs_to_the_end() -> None:
    assert report_summary("# T\n\nPreface.\n\n## Executive Summary\nLast words.\n") == "Last words."


def test_without_summary_heading_the_first_paragraph_is_used() -> None:
    report = (
        "# Title\n\n## Background\n\nFirst real paragraph\nspanning two lines.\n\nSecond one.\n"
    )
    assert report_summary(report) == "First real paragraph\nspanning two lines."


def test_summary_of_headings_only_or_empty_report_is_empty() -> None:
    assert report_summary("") == ""
    assert report_summary("# Title\n\n## Section\n") == ""


@pytest.mark.parametrize(
    "report",
    [
        "## Executive Summary\n\n" + "word " * 1000 + "\n\n## Next\n",
        "No heading at all " * 500,
    ],
)
def test_summary_is_capped(report: str) -> None:
    summary = report_summary(report)
    assert len(report) > SUMMARY_MAX_CHARS
    assert 0 < len(summary) <= SUMMARY_MAX_CHARS
    assert SUMMARY_MAX_CHARS - len(summary) < 10  # cut near the cap, not far before it
    body = summary.rstrip("…").rstrip()
    assert body in report


def test_summary_at_the_cap_is_not_cut() -> None:
    text = "z" * SUMMARY_MAX_CHARS
    assert report_summary(f"## Summary\n\n{text}\n\n## Next\n") == text
