"""How long ago, as a person says it in the research table and the status block."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

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
