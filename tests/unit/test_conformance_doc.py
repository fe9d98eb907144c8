"""docs/conformance.md names only tests and files that exist.

The conformance table says, for each requirement of the deep-research workflow seed, where it is
built and which test shows it. A renamed test or a moved module would silently make a row lie;
these tests make it fail instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "conformance.md"

STATUSES = {"as specified", "different (deliberate)", "not built", "in progress"}
COLUMNS = ("id", "requirement", "status", "implementation", "test", "why / notes")
ROW_ID = re.compile(r"[A-Z]-\d{2}")
# `tests/unit/test_x.py::test_name`, optionally with a parametrized id, which is ignored.
TEST_REF = re.compile(r"(tests/[\w/]+\.py)::([A-Za-z_]\w*)(?:\[[^\]`]*\])?")
CODE_SPAN = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Row:
    line: int
    id: str
    requirement: str
    status: str
    implementation: str
    test: str
    notes: str


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _rows() -> list[Row]:
    rows = []
    for number, line in enumerate(DOC.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.startswith("|"):
            continue
        cells = _cells(line)
        if not ROW_ID.fullmatch(cells[0]):
            continue  # a header or separator line
        assert len(cells) == len(COLUMNS), f"line {number}: {len(cells)} cells, not 6: {line}"
        rows.append(Row(number, *cells))
    return rows


@cache
def _defined_tests(path: str) -> frozenset[str]:
    text = (ROOT / path).read_text(encoding="utf-8")
    return frozenset(re.findall(r"^\s*(?:async\s+)?def\s+(test_\w+)\s*\(", text, re.MULTILINE))


def _missing_tests(text: str) -> list[str]:
    missing = []
    for path, name in TEST_REF.findall(text):
        if not (ROOT / path).is_file():
            missing.append(f"{path} (no such file)")
        elif name not in _defined_tests(path):
            missing.append(f"{path}::{name} (no such test)")
    return missing


def test_every_table_header_has_the_six_columns() -> None:
    headers = [
        _cells(line)
        for line in DOC.read_text(encoding="utf-8").splitlines()
        if line.startswith("| id |")
    ]
    assert headers
    assert all(tuple(header) == COLUMNS for header in headers)


def test_rows_have_unique_ids_and_a_known_status() -> None:
    rows = _rows()
    assert len(rows) >= 50
    ids = [row.id for row in rows]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    unknown = [f"{row.id}: {row.status!r}" for row in rows if row.status not in STATUSES]
    assert not unknown, unknown
    assert all(row.requirement for row in rows)


def test_every_named_test_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert TEST_REF.search(text)
    missing = _missing_tests(text)
    assert not missing, missing


def test_every_implementation_path_exists() -> None:
    problems = []
    for row in _rows():
        paths = CODE_SPAN.findall(row.implementation)
        if not paths:
            problems.append(f"{row.id}: no implementation path")
        problems += [f"{row.id}: {path}" for path in paths if not (ROOT / path).is_file()]
    assert not problems, problems


def test_every_row_names_a_test() -> None:
    """Every requirement has a test that shows it (its existence is checked above); a row
    being changed may say `TBD` only while its status is `in progress`."""
    problems = []
    for row in _rows():
        if row.test == "TBD":
            if row.status != "in progress":
                problems.append(f"{row.id}: TBD but {row.status!r}")
        elif not TEST_REF.search(row.test):
            problems.append(f"{row.id}: test cell {row.test!r}")
    assert not problems, problems


def test_each_deliberate_difference_says_why() -> None:
    silent = [row.id for row in _rows() if row.status == "different (deliberate)" and not row.notes]
    assert not silent, silent


def test_the_checker_ignores_parametrized_ids_and_reports_missing_tests() -> None:
    here = "tests/unit/test_conformance_doc.py"
    assert _missing_tests(f"`{here}::test_every_named_test_exists[case-1]`") == []
    assert _missing_tests(f"`{here}::test_nobody_wrote`") == [
        f"{here}::test_nobody_wrote (no such test)"
    ]
    assert _missing_tests("`tests/unit/test_nowhere.py::test_x`") == [
        "tests/unit/test_nowhere.py (no such file)"
    ]
