"""The structured answer checked against the caller's ``output_schema``: off the event loop,
bounded in size and in time.

The schema is a caller's and the answer a model's, so the check is kept from holding the
server: it runs in a worker thread (:func:`check_answer`, :func:`answer_errors`); an answer
past :data:`MAX_ANSWER_CHARS` (or nested or numerous beyond bounds) is not checked but said to
be too large; ``pattern`` is matched by RE2, in time linear in the text
(:mod:`.re2_patterns`); and a check not done within :data:`CHECK_SECONDS` leaves the answer as
written, saying it was not checked. A thread cannot be stopped, so the bounds on the work are
what end it; the time bound only keeps the research from waiting on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import anyio

from foundry_mcp.research.workflow.report.answer_schema import cut, nullable
from foundry_mcp.research.workflow.report.json_pointers import overrun, to_pointer
from foundry_mcp.research.workflow.report.re2_patterns import PatternError, matches

if TYPE_CHECKING:
    from jsonschema import FormatChecker, ValidationError
    from jsonschema.protocols import Validator

MAX_ERRORS = 20
# A model writes at most a few thousand tokens of answer; these bound a check's work well
# above that (characters of keys and strings, values, nesting).
MAX_ANSWER_CHARS = 50_000
MAX_ANSWER_VALUES = 20_000
MAX_ANSWER_DEPTH = 64
CHECK_SECONDS = 10.0
# Our own patterns, with no nested repeats: ``re`` runs them in linear time.
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})"
)


@dataclass
class AnswerCheck:
    """How an answer fits its schema: ``errors`` against the schema as given (at most
    :data:`MAX_ERRORS`), ``valid`` with nulls allowed at its leaves, ``note`` when it could
    not be checked in time (then neither is valid)."""

    errors: list[str] = field(default_factory=list)
    strict_valid: bool = False
    valid: bool = False
    note: str | None = None


async def check_answer(data: Any, schema: dict[str, Any]) -> AnswerCheck:
    """``data`` checked against ``schema`` and against :func:`nullable` of it, in a worker
    thread, within :data:`CHECK_SECONDS`; see the module."""
    with anyio.move_on_after(CHECK_SECONDS):
        return await anyio.to_thread.run_sync(_check_both, data, schema, abandon_on_cancel=True)
    note = (
        f"The answer was not checked against the output_schema: the check took more than "
        f"{CHECK_SECONDS:g} s. It is kept as written, unchecked."
    )
    return AnswerCheck(errors=[note], note=note)


async def answer_errors(data: Any, schema: dict[str, Any]) -> list[str]:
    """:func:`validation_errors` in a worker thread; none when not done within
    :data:`CHECK_SECONDS` (the caller's final :func:`check_answer` then says so)."""
    with anyio.move_on_after(CHECK_SECONDS):
        return await anyio.to_thread.run_sync(
            validation_errors, data, schema, abandon_on_cancel=True
        )
    return []


def _check_both(data: Any, schema: dict[str, Any]) -> AnswerCheck:
    strict = validation_errors(data, schema)
    valid = not strict or not validation_errors(data, nullable(schema))
    return AnswerCheck(errors=strict, strict_valid=not strict, valid=valid)


def validation_errors(data: Any, schema: dict[str, Any]) -> list[str]:
    """Why ``data`` does not validate against ``schema`` ("date" and "date-time" formats
    checked, patterns by RE2), each message led by the value's JSON pointer; empty when it
    validates. An answer past the bounds is not checked: its one error says so."""
    found = overrun(data, depth=MAX_ANSWER_DEPTH, values=MAX_ANSWER_VALUES, chars=MAX_ANSWER_CHARS)
    if found is not None:
        limits = {
            "depth": f"nested more than {MAX_ANSWER_DEPTH} levels deep",
            "values": f"more than {MAX_ANSWER_VALUES:,} values",
            "size": f"more than {MAX_ANSWER_CHARS:,} characters",
            "type": "not JSON",
        }
        return [f"{found.pointer or '/'}: not checked: the answer is {limits[found.bound]}"]
    validator = _validator_class()(schema, format_checker=_formats())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    return [
        f"{to_pointer([str(p) for p in error.absolute_path]) or '/'}: {cut(error.message)}"
        for error in errors[:MAX_ERRORS]
    ]


@cache
def _validator_class() -> type[Validator]:
    """Draft 2020-12, its ``pattern`` matched by RE2 (jsonschema's own uses ``re``)."""
    # Imported here: only a research given a schema needs jsonschema (about 30 ms to import).
    from jsonschema import Draft202012Validator, validators

    extended: type[Validator] = validators.extend(Draft202012Validator, {"pattern": _pattern})
    return extended


def _pattern(
    validator: Validator, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "string"):
        return
    try:
        matched = matches(pattern, instance)
    except PatternError as exc:  # a research saved before its pattern was checked, or no RE2
        yield ValidationError(f"{pattern!r} was not checked: {exc.reason}")
        return
    if not matched:  # a long value shown by its start, or the message is all value
        shown = repr(instance) if len(instance) <= 80 else f"{instance[:60]!r}…"
        yield ValidationError(f"{shown} does not match {pattern!r}")


@cache
def _formats() -> FormatChecker:
    """The formats checked: "date" and "date-time", by the rules below."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    checker.checks("date", raises=ValueError)(_is_date)
    checker.checks("date-time", raises=ValueError)(_is_date_time)
    return checker


def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return _DATE.fullmatch(value) is not None and bool(date.fromisoformat(value))


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return _DATE_TIME.fullmatch(value) is not None and bool(
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    )
