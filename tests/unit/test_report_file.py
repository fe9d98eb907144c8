"""Where ``foundry-mcp research`` leaves its report, and that it never replaces a file unasked."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.cli.report_file import ReportTarget, report_target, slug, write_report
from foundry_mcp.config import Settings
from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.errors import InputError

ID = "deepres-0123456789ab"


def _write(target: ReportTarget, report: str, question: str = "How do GCs pause?") -> Path:
    written = write_report(
        target,
        research_id=ID,
        question=question,
        started="2026-11-28T12:00:00+00:00",
        report=report,
    )
    return written.path


def test_slug_keeps_the_first_words_of_the_question() -> None:
    assert slug("How do garbage collectors pause?") == "how-do-garbage-collectors-pause"
    assert slug("Was kostet ein Übergang zu Rust?") == "was-kostet-ein-übergang-zu-rust"
    assert slug("../../etc/passwd") == "etc-passwd"  # no path survives
    assert slug("?!") == "research"
    long = slug("word " * 40)
    assert len(long) <= 48 and not long.endswith("-")


def test_the_default_file_is_in_the_reports_folder_and_a_resume_replaces_it(tmp_path: Path) -> None:
    settings = Settings(research=ResearchSettings(research_dir=tmp_path / "research"))
    target = report_target(settings, None, False)
    first = _write(target, "# one\n")
    assert first == tmp_path / "research" / "reports" / f"2026-11-28-how-do-gcs-pause-{ID}.md"
    second = write_report(
        target, research_id=ID, question="another", started="2026-12-01T00:00:00", report="# two\n"
    )
    assert second.path == first and second.note == "replaced this research's earlier report"
    assert first.read_text() == "# two\n"
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no partial file left


def test_a_file_that_appeared_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    settings = Settings(research=ResearchSettings(research_dir=tmp_path / "research"))
    chosen = tmp_path / "gc.md"
    target = report_target(settings, str(chosen), False)
    chosen.write_text("someone else's\n")  # written while the research ran
    written = write_report(target, research_id=ID, question="q", started="2026", report="# r\n")
    assert written.path == tmp_path / "gc-2.md"
    assert written.note == "gc.md appeared meanwhile, so not replaced"
    assert chosen.read_text() == "someone else's\n"


@pytest.mark.parametrize(
    ("make", "output", "overwrite", "said"),
    [
        ("file", "exists.md", False, "exists"),
        ("dir", "folder", False, "is a folder"),
        (None, "missing/r.md", False, "does not exist"),
    ],
)
def test_output_is_checked_before_the_research_starts(
    tmp_path: Path, make: str | None, output: str, overwrite: bool, said: str
) -> None:
    settings = Settings(research=ResearchSettings(research_dir=tmp_path / "research"))
    place = tmp_path / output
    if make == "file":
        place.write_text("x")
    elif make == "dir":
        place.mkdir()
    with pytest.raises(InputError) as caught:
        report_target(settings, str(place), overwrite)
    assert said in caught.value.message and caught.value.remediation
    if make == "file":
        assert report_target(settings, str(place), True).overwrite


def test_the_report_file_holds_no_control_sequence(tmp_path: Path) -> None:
    settings = Settings(research=ResearchSettings(research_dir=tmp_path / "research"))
    report = "# GC \x1b[2J\x1b]8;;http://evil\x1b\\pauses\x1b]8;;\x1b\\\n\n*5 ms* \x9b2J\u202e[1]\n"
    path = _write(report_target(settings, None, False), report)
    assert path.read_text(encoding="utf-8") == "# GC pauses\n\n*5 ms* [1]\n"
