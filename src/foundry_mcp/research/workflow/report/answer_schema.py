"""The caller's ``output_schema``: checked when a research starts, and the answer checked by it.

A structured answer is written by a model from the research's findings, so the schema is kept
to what a model fills reliably and what a reader can check value by value: objects, arrays and
leaves (strings, numbers, booleans, enums) with plain constraints. Combinators, references and
conditional schemas are refused with what to write instead. A value no source establishes is
null, so the answer is validated twice: against :func:`nullable` (nulls allowed at its leaves)
and against the schema as given. Values are addressed by JSON pointers (RFC 6901).
"""

from __future__ import annotations

import copy
import json
import re
from datetime import date, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from foundry_mcp.errors import InputError

if TYPE_CHECKING:
    from jsonschema import FormatChecker

MAX_SCHEMA_CHARS = 20_000
MAX_PROPERTIES = 200
MAX_DEPTH = 6  # schemas nested within one another, the root's included
MAX_ERRORS = 20
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
    """``value`` as a usable output schema; ``InputError`` saying what to change otherwise."""
    if not isinstance(value, dict):
        raise _refuse(
            "output_schema must be a JSON object (a JSON Schema).",
            'Pass a JSON Schema object such as {"type": "object", "properties": {...}}.',
        )
    size = len(json.dumps(value, ensure_ascii=False))
    if size > MAX_SCHEMA_CHARS:
        raise _refuse(
            f"output_schema is {size:,} characters of JSON; at most {MAX_SCHEMA_CHARS:,} are "
            "accepted.",
            "Shorten descriptions and drop fields the answer does not need.",
            reason="too_large",
        )
    # Imported here: only a research given a schema needs jsonschema (about 30 ms to import).
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as exc:
        where = to_pointer([str(part) for part in exc.path])
        raise _refuse(
            f"output_schema is not a valid JSON Schema {_where(where)}: {_cut(exc.message)}",
            "Correct the schema so that it validates as JSON Schema (Draft 2020-12).",
            pointer=where,
        ) from None
    counted = _walk(value, "", 1)
    if counted > MAX_PROPERTIES:
        raise _refuse(
            f"output_schema has {counted} properties in all; at most {MAX_PROPERTIES} are "
            "accepted.",
            "Ask for fewer fields, or split the question into several researches.",
            reason="too_many_properties",
        )
    if value.get("type") not in ROOT_TYPES:
        raise _refuse(
            'output_schema\'s root must be {"type": "object"} or {"type": "array"}.',
            "Wrap the value in an object, e.g. "
            '{"type": "object", "properties": {"answer": <your schema>}}.',
            pointer="",
        )
    return value


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
    counted = 0
    for name, sub in (schema.get("properties") or {}).items():
        counted += 1
        if isinstance(sub, dict):
            counted += _walk(sub, f"{pointer}/properties/{escape(name)}", depth + 1)
    for keyword in _SUBSCHEMA_KEYWORDS:
        sub = schema.get(keyword)
        if isinstance(sub, dict):
            counted += _walk(sub, f"{pointer}/{keyword}", depth + 1)
    return counted


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


# --------------------------------------------------------------------------- validation

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})"
)


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


@cache
def _formats() -> FormatChecker:
    """The formats checked: "date" and "date-time", by the rules above."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    checker.checks("date", raises=ValueError)(_is_date)
    checker.checks("date-time", raises=ValueError)(_is_date_time)
    return checker


def validation_errors(data: Any, schema: dict[str, Any]) -> list[str]:
    """Why ``data`` does not validate against ``schema`` ("date" and "date-time" formats
    checked), each message led by the value's JSON pointer; empty when it validates."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema, format_checker=_formats())
    found = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    return [
        f"{to_pointer([str(p) for p in error.absolute_path]) or '/'}: {_cut(error.message)}"
        for error in found[:MAX_ERRORS]
    ]


def _cut(message: str) -> str:
    return message if len(message) <= MAX_ERROR_CHARS else message[: MAX_ERROR_CHARS - 1] + "…"


# --------------------------------------------------------------------------- JSON pointers


def escape(token: str) -> str:
    """One reference token of a JSON pointer: "~" as "~0", "/" as "~1"."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def to_pointer(tokens: list[str]) -> str:
    """The JSON pointer of a path of keys and indexes ("" for the whole document)."""
    return "".join(f"/{escape(token)}" for token in tokens)


def tokens_of(pointer: str) -> list[str]:
    """The keys and indexes of a JSON pointer, unescaped."""
    if not pointer:
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"not a JSON pointer: {pointer!r}")
    return [unescape(token) for token in pointer[1:].split("/")]


def leaves(data: Any) -> list[tuple[str, Any]]:
    """Every value of ``data`` that is not an object or an array, with its JSON pointer, in
    document order."""
    found: list[tuple[str, Any]] = []

    def visit(value: Any, pointer: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                visit(item, f"{pointer}/{escape(str(key))}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                visit(item, f"{pointer}/{index}")
        else:
            found.append((pointer, value))

    visit(data, "")
    return found


def get_at(data: Any, pointer: str) -> Any:
    """The value at ``pointer``; ``KeyError`` when there is none."""
    value = data
    for token in tokens_of(pointer):
        value = _step(value, token)
    return value


def set_at(data: Any, pointer: str, value: Any) -> None:
    """Replace the value at ``pointer`` (an existing key or index of its container) in place."""
    parts = tokens_of(pointer)
    if not parts:
        raise ValueError("the whole document cannot be replaced in place")
    container = get_at(data, to_pointer(parts[:-1]))
    last = parts[-1]
    if isinstance(container, dict):
        container[last] = value
    elif isinstance(container, list) and last.isdigit() and int(last) < len(container):
        container[int(last)] = value
    else:
        raise KeyError(pointer)


def _step(value: Any, token: str) -> Any:
    if isinstance(value, dict) and token in value:
        return value[token]
    if isinstance(value, list) and token.isdigit() and int(token) < len(value):
        return value[int(token)]
    raise KeyError(token)
