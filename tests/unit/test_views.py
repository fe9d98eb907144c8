"""What the terminal views draw: how long ago, as a person says it; a research table that never
cuts an id; a trusted file whole; documents shown as plain text."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from foundry_mcp.cli.display import output, views
from foundry_mcp.cli.display.views import age

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ago", "said"),
    [
        (timedelta(seconds=59), "just now"),
        (timedelta(minutes=5, seconds=59), "5 min ago"),
        (timedelta(hours=2, minutes=59), "2 h ago"),
        (timedelta(days=1, hours=3), "1 day ago"),
        (timedelta(days=30), "30 days ago"),
        (timedelta(days=31), "2026-10-28"),
    ],
)
def test_age(ago: timedelta, said: str) -> None:
    assert age((NOW - ago).isoformat(), NOW) == said
    assert age((NOW - ago).isoformat().replace("+00:00", "Z"), NOW) == said


def test_an_age_without_a_time_says_so() -> None:
    assert age(None) == "?"
    assert age("not a time") == "not a time"


QUESTION = (
    "How do garbage collectors pause application threads in the JVM, Go and .NET, and what do "
    "the low-latency collectors change about those pauses?"
)


def _listing(*statuses: str) -> dict[str, Any]:
    created = (datetime.now(UTC) - timedelta(days=12)).isoformat()
    return {
        "items": [
            {
                "research_id": f"deepres-{n:012x}",
                "status": status,
                "created_at": created,
                "query": QUESTION,
            }
            for n, status in enumerate(statuses)
        ]
    }


def _drawn(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    views.show_list(_listing("completed", "interrupted"), filtered=False, limit=20)
    return capsys.readouterr().out


@pytest.mark.parametrize("width", [80, 120, 160])
def test_the_research_table_shows_whole_ids_status_and_age_and_cuts_the_question(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    lines = _drawn(capsys, monkeypatch, width).splitlines()
    assert lines[0].split() == ["id", "status", "age", "question"]
    for n, (line, status) in enumerate(zip(lines[1:], ["completed", "interrupted"], strict=True)):
        assert line.split()[:5] == [f"deepres-{n:012x}", status, "12", "days", "ago"]
        assert len(line.rstrip()) <= width
        assert line.rstrip().endswith("…") and QUESTION[:20] in line


@pytest.mark.parametrize("width", [20, 50, 60])
def test_below_80_columns_the_question_then_the_age_then_the_status_give_way(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    lines = _drawn(capsys, monkeypatch, width).splitlines()
    header = lines[0].split()
    assert header[0] == "id" and header[-1] == "question"
    assert ("age" in header) == (width >= 60) and ("status" in header) == (width >= 50)
    assert [line.split()[0] for line in lines[1:]] == [f"deepres-{n:012x}" for n in range(2)]


@pytest.mark.parametrize("width", [40, 80])
def test_a_trusted_file_is_shown_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    path = "/home/someone/projects/a-rather-long-project-name/foundry-mcp.toml"
    views.show_trusted({path: {"sha256": "sha256:" + "0" * 64, "trusted_at": "2026-01-01"}})
    row = capsys.readouterr().out.splitlines()[1]
    assert row.split()[:2] == [path, "2026-01-01"]


def test_a_document_from_pages_is_drawn_as_plain_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = "\x1b[2J\x1b]8;;http://evil\x1b\\quote\x1b]8;;\x1b\\ \x9b2J\u202e"
    claims = {
        "claims": [
            {
                "verdict": "supported",
                "sentence": f"A sentence {hostile}.",
                "quotes": [{"number": 1, "text": f"A quote {hostile}"}],
                "reason": hostile,
            }
        ]
    }
    monkeypatch.setattr(output, "for_people", lambda args: True)
    output.show(argparse.Namespace(json=False), claims, views.show_evidence)
    drawn = capsys.readouterr().out
    assert "A sentence quote ." in drawn and '"A quote quote"' in drawn
    assert not any(c in drawn for c in "\x1b\x9b\u202e") and "evil" not in drawn
    output.show(argparse.Namespace(json=True), claims, views.show_evidence)
    printed = capsys.readouterr().out  # JSON would escape ESC, but a reader prints the string
    assert "\\u001b" not in printed and "\x9b" not in printed and "evil" not in printed
