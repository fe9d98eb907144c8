"""The structured answer checked against the caller's schema: dates, pointers, patterns run by
RE2 in linear time, an answer past its bounds or its time not checked but said to be, and the
check in a worker thread while the loop runs on."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from foundry_mcp.research.workflow.report import answer_check
from foundry_mcp.research.workflow.report.answer_check import (
    MAX_ANSWER_CHARS,
    answer_errors,
    check_answer,
    validation_errors,
)
from foundry_mcp.research.workflow.report.answer_schema import check_output_schema
from tests.unit.test_answer_schema import CATASTROPHIC, TABLE

pytestmark = pytest.mark.anyio


def test_validation_checks_dates_and_leads_each_error_with_its_pointer() -> None:
    row = {
        "name": "requests",
        "licence": "GPL",
        "released": "2023-02-30",
        "updated": "2023-05-22 10:00",
        "extra": 1,
    }
    errors = validation_errors({"rows": [row]}, TABLE)
    assert any(e.startswith("/rows/0/released:") and "'date'" in e for e in errors), errors
    assert any(e.startswith("/rows/0/updated:") and "'date-time'" in e for e in errors), errors
    assert any(e.startswith("/rows/0/licence:") for e in errors), errors
    assert any(e.startswith("/rows/0:") and "extra" in e for e in errors), errors
    good = {**row, "licence": "MIT", "released": "2023-05-22", "updated": "2023-05-22T10:00:00Z"}
    del good["extra"]
    assert validation_errors({"rows": [good]}, TABLE) == []
    assert validation_errors({"rows": []}, TABLE) == ["/rows: [] should be non-empty"]
    assert validation_errors([], TABLE)[0].startswith("/: ")


def test_a_catastrophic_pattern_is_accepted_and_matched_by_re2_in_linear_time() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": CATASTROPHIC}}}
    assert check_output_schema(schema) is schema
    began = time.monotonic()
    errors = validation_errors({"code": "a" * 40_000 + "!"}, schema)
    assert time.monotonic() - began < 1, "matched by a backtracking engine"
    assert (
        len(errors) == 1 and errors[0].startswith("/code: 'aaaa") and "does not match" in errors[0]
    )
    assert validation_errors({"code": "ab1"}, schema) == []
    # RE2's syntax, which Python's re does not read, is taken as RE2 reads it.
    letters = {"type": "object", "properties": {"w": {"type": "string", "pattern": r"^\pL+\z"}}}
    assert check_output_schema(letters) is letters
    assert validation_errors({"w": "Straße"}, letters) == []
    assert validation_errors({"w": "a1"}, letters)
    # A lone surrogate is valid JSON; it is matched, not an error of the check.
    assert validation_errors({"code": "\ud800"}, schema)[0].startswith("/code:")


def test_an_answer_past_its_bounds_is_not_checked_but_said_to_be() -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    assert validation_errors({"text": "x" * (MAX_ANSWER_CHARS + 1)}, schema) == [
        f"/text: not checked: the answer is more than {MAX_ANSWER_CHARS:,} characters"
    ]
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert "nested more than" in validation_errors({"text": deep}, schema)[0]


async def test_an_answer_check_that_overruns_its_time_keeps_the_answer_saying_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def slow(data: Any, schema: dict[str, Any]) -> list[str]:
        time.sleep(1)
        return []

    monkeypatch.setattr(answer_check, "CHECK_SECONDS", 0.1)
    monkeypatch.setattr(answer_check, "validation_errors", slow)
    ticks = 0

    async def tick() -> None:  # the loop stays free while the check runs in its thread
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        began = time.monotonic()
        fit = await check_answer({"a": 1}, TABLE)
        errors = await answer_errors({"a": 1}, TABLE)
        took = time.monotonic() - began
        group.cancel_scope.cancel()
    assert took < 0.9 and ticks >= 5, (took, ticks)
    assert fit.note and "not checked" in fit.note and fit.errors == [fit.note]
    assert not fit.valid and not fit.strict_valid
    assert errors == []  # no repair is asked for what could not be checked


async def test_an_answer_is_checked_as_given_and_with_nulls_allowed() -> None:
    fit = await check_answer({"rows": []}, TABLE)
    assert fit.errors == ["/rows: [] should be non-empty"] and fit.valid is False
    fit = await check_answer({"rows": [{"name": "httpx", "licence": None}]}, TABLE)
    assert not fit.strict_valid and fit.valid and fit.note is None
    fit = await check_answer({"rows": [{"name": "httpx", "licence": "MIT"}]}, TABLE)
    assert fit.strict_valid and fit.valid and fit.errors == []
