"""The caller's ``output_schema``: checked when a research starts, and the answer checked by it.

A structured answer is written by a model from the research's findings, so the schema is kept
to what a model fills reliably and what a reader can check value by value: objects, arrays and
leaves (strings, numbers, booleans, enums) with plain constraints. Combinators, references and
conditional schemas are refused with what to write instead. A value no source establishes is
null, so the answer is validated twice (:mod:`.answer_check`): against :func:`nullable` (nulls
allowed at its leaves) and against the schema as given. Values are addressed by JSON pointers
(RFC 6901).

The schema is a caller's JSON: its nesting, number of values and size are bounded first,
without recursion (:func:`.json_pointers.overrun`), so no schema reaches a recursive check
(jsonschema's, the JSON encoder's) deep enough to overflow Python's stack; its patterns must
run in RE2 (:mod:`.re2_patterns`); and the whole check runs in a worker thread
(:func:`check_output_schema_off_loop`).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import TYPE_CHECKING, Any

import anyio

from foundry_mcp.errors import InputError
from foundry_mcp.research.workflow.report.json_pointers import escape, overrun, to_pointer
from foundry_mcp.research.workflow.report.re2_patterns import PatternError, check_pattern, is_regex

if TYPE_CHECKING:
    from jsonschema import FormatChecker

MAX_SCHEMA_CHARS = 20_000
MAX_PROPERTIES = 200
MAX_DEPTH = 6  # schemas nested within one another, the root's included
# Of the schema as JSON, its enums, consts, defaults and examples included: room for 6
# schemas (2 levels each: "properties", then the name) and the values they hold.
MAX_JSON_DEPTH = 32
MAX_JSON_VALUES = 5_000
START_CHECK_SECONDS = 10.0  # the check is bounded work; this only guards the start's caller
MAX_ERROR_CHARS = 300
ROOT_TYPES = ("object", "array")
SUPPORTED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "format",
        "description",
        "title",
        "additionalProperties",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "$schema",
        "default",
        "examples",
    }
)
_ONE_TYPE = "Give the value one schema; a value the sources do not establish is null anyway."
INSTEAD: dict[str, str] = {
    "$ref": "Write the referenced schema out in place of the reference.",
    "$defs": "Write each definition out where it is used.",
    "definitions": "Write each definition out where it is used.",
    "anyOf": _ONE_TYPE,
    "oneOf": _ONE_TYPE,
    "allOf": "Merge the schemas into one (their properties under one 'properties').",
    "not": "Describe what is excluded in the value's 'description'.",
    "if": "Use one schema and describe the condition in its 'description'.",
    "then": "Use one schema and describe the condition in its 'description'.",
    "else": "Use one schema and describe the condition in its 'description'.",
    "patternProperties": "Name the properties under 'properties', or give "
    "'additionalProperties' one schema.",
    "dependentSchemas": "List the properties under 'required', or describe the dependency in "
    "a 'description'.",
    "dependentRequired": "List the properties under 'required'.",
    "prefixItems": "Give 'items' one schema for every element (an array of objects for rows).",
}
_SUBSCHEMA_KEYWORDS = ("items", "additionalProperties")


def _refuse(message: str, remediation: str, **details: Any) -> InputError:
    return InputError(
        message, remediation=remediation, details={"field": "output_schema", **details}
    )


def _where(pointer: str) -> str:
    return f"at {pointer}" if pointer else "at the schema's root"


def check_output_schema(value: Any) -> dict[str, Any]:
    """``value`` as a usable output schema; ``InputError`` saying what to change otherwise.
    Bounded work however large ``value`` is; see the module."""
    if not isinstance(value, dict):
        raise _refuse(
            "output_schema must be a JSON object (a JSON Schema).",
            'Pass a JSON Schema object such as {"type": "object", "properties": {...}}.',
        )
    _check_bounds(value)
    size = len(json.dumps(value, ensure_ascii=False))  # safe now: bounded depth and values
    if size > MAX_SCHEMA_CHARS:
        raise _too_large(f"{size:,} characters of JSON")
    counted = _walk(value, "", 1)
    if counted > MAX_PROPERTIES:
        raise _refuse(
            f"output_schema has {counted} properties in all; at most {MAX_PROPERTIES} are "
            "accepted.",
            "Ask for fewer fields, or split the question into several researches.",
            reason="too_many_properties",
        )
    # Imported here: only a research given a schema needs jsonschema (about 30 ms to import).
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(value, format_checker=_schema_formats())
    except SchemaError as exc:
        where = to_pointer([str(part) for part in exc.path])
        raise _refuse(
            f"output_schema is not a valid JSON Schema {_where(where)}: {cut(exc.message)}",
            "Correct the schema so that it validates as JSON Schema (Draft 2020-12).",
            pointer=where,
        ) from None
    if value.get("type") not in ROOT_TYPES:
        raise _refuse(
            'output_schema\'s root must be {"type": "object"} or {"type": "array"}.',
            "Wrap the value in an object, e.g. "
            '{"type": "object", "properties": {"answer": <your schema>}}.',
            pointer="",
        )
    return value


async def check_output_schema_off_loop(value: Any) -> dict[str, Any]:
    """:func:`check_output_schema` in a worker thread: a large schema's checks (jsonschema's,
    RE2's compiling) never hold the event loop. Bounded work; :data:`START_CHECK_SECONDS`
    only keeps a caller from waiting on a thread that is slow for another reason."""
    try:
        with anyio.fail_after(START_CHECK_SECONDS):
            return await anyio.to_thread.run_sync(
                check_output_schema, value, abandon_on_cancel=True
            )
    except TimeoutError:
        raise _refuse(
            f"output_schema could not be checked within {START_CHECK_SECONDS:g} s.",
            "Try again; if it happens again, shorten the schema.",
            reason="too_slow",
        ) from None


def _too_large(measured: str) -> InputError:
    return _refuse(
        f"output_schema is {measured}; at most {MAX_SCHEMA_CHARS:,} characters of JSON are "
        "accepted.",
        "Shorten descriptions and drop fields the answer does not need.",
        reason="too_large",
    )


def _check_bounds(value: dict[str, Any]) -> None:
    """Refuse a schema past a bound of its JSON (nesting, values, size), naming where."""
    found = overrun(value, depth=MAX_JSON_DEPTH, values=MAX_JSON_VALUES, chars=MAX_SCHEMA_CHARS)
    if found is None:
        return
    where, pointer = _where(found.pointer), found.pointer
    if found.bound == "depth":
        raise _refuse(
            f"output_schema nests JSON more than {MAX_JSON_DEPTH} levels deep ({where}).",
            f"Flatten the shape: a structured answer's schema nests at most {MAX_DEPTH} "
            "schemas (objects within objects, arrays within arrays).",
            pointer=pointer,
            reason="too_deep",
        )
    if found.bound == "values":
        raise _refuse(
            f"output_schema holds more than {MAX_JSON_VALUES:,} JSON values (passed {where}).",
            "Ask for fewer fields and shorter enums, or split the question into several "
            "researches.",
            pointer=pointer,
            reason="too_many_values",
        )
    if found.bound == "size":
        raise _too_large(f"more than {MAX_SCHEMA_CHARS:,} characters (passed {where})")
    raise _refuse(
        f"output_schema holds a value JSON cannot hold ({where}).",
        "Give the schema as JSON: objects, arrays, strings, numbers, booleans and null.",
        pointer=pointer,
        reason="not_json",
    )


def _walk(schema: dict[str, Any], pointer: str, depth: int) -> int:
    """Refuse unsupported keywords and deep nesting under ``schema``; its properties counted."""
    if depth > MAX_DEPTH:
        raise _refuse(
            f"output_schema nests schemas more than {MAX_DEPTH} deep ({_where(pointer)}).",
            "Flatten the shape: fewer objects within objects.",
            pointer=pointer,
            reason="too_deep",
        )
    for keyword in schema:
        if keyword not in SUPPORTED_KEYWORDS:
            instead = INSTEAD.get(keyword, "Remove it.")
            raise _refuse(
                f"output_schema uses '{keyword}' {_where(pointer)}; structured answers do not "
                "support it.",
                f"{instead} Supported keywords: {', '.join(sorted(SUPPORTED_KEYWORDS))}.",
                keyword=keyword,
                pointer=pointer,
            )
    pattern = schema.get("pattern")
    if isinstance(pattern, str):  # one of another type is the metaschema's to refuse
        _check_pattern(pattern, f"{pointer}/pattern")
    counted = 0
    properties = schema.get("properties")
    for name, sub in properties.items() if isinstance(properties, dict) else ():
        counted += 1
        if isinstance(sub, dict):
            counted += _walk(sub, f"{pointer}/properties/{escape(name)}", depth + 1)
    for keyword in _SUBSCHEMA_KEYWORDS:
        sub = schema.get(keyword)
        if isinstance(sub, dict):
            counted += _walk(sub, f"{pointer}/{keyword}", depth + 1)
    return counted


def _check_pattern(pattern: str, pointer: str) -> None:
    try:
        check_pattern(pattern)
    except PatternError as exc:
        raise _refuse(
            f"output_schema's pattern {_where(pointer)} cannot be used: {exc.reason}.",
            exc.remediation,
            keyword="pattern",
            pointer=pointer,
            reason="pattern",
        ) from None


@cache
def _schema_formats() -> FormatChecker:
    """The formats the metaschema check checks: "regex" (a pattern), by RE2, not ``re``."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    checker.checks("regex", raises=PatternError)(is_regex)
    return checker


# --------------------------------------------------------------------------- nulls at leaves

_CONTAINER_TYPES = frozenset({"object", "array"})


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` in which every leaf value may also be null: "null" added to a
    leaf's type, None to its enum (a const becomes an enum of it and None)."""
    copied = copy.deepcopy(schema)
    _allow_null(copied)
    return copied


def _allow_null(schema: dict[str, Any]) -> None:
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or [])
    if not _CONTAINER_TYPES & set(kinds):
        if kinds and "null" not in kinds:
            schema["type"] = [*kinds, "null"]
        if "const" in schema:
            schema["enum"] = [schema.pop("const")]
        if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
    for sub in (schema.get("properties") or {}).values():
        if isinstance(sub, dict):
            _allow_null(sub)
    for keyword in _SUBSCHEMA_KEYWORDS:
        sub = schema.get(keyword)
        if isinstance(sub, dict):
            _allow_null(sub)


def cut(message: str) -> str:
    """``message`` within :data:`MAX_ERROR_CHARS`."""
    return message if len(message) <= MAX_ERROR_CHARS else message[: MAX_ERROR_CHARS - 1] + "…"
