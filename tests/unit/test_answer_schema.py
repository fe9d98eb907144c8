"""The caller's output_schema: what is refused and why (any nesting, past any bound, patterns
RE2 cannot run, named by pointer), the check in a worker thread, nulls at leaves, pointers."""

from __future__ import annotations

import time
from typing import Any

import pytest

from foundry_mcp.errors import InputError
from foundry_mcp.research.workflow.report import answer_schema, re2_patterns
from foundry_mcp.research.workflow.report.answer_check import validation_errors
from foundry_mcp.research.workflow.report.answer_schema import (
    MAX_DEPTH,
    MAX_JSON_DEPTH,
    MAX_JSON_VALUES,
    MAX_PROPERTIES,
    MAX_SCHEMA_CHARS,
    check_output_schema,
    check_output_schema_off_loop,
    nullable,
)
from foundry_mcp.research.workflow.report.json_pointers import get_at, leaves, set_at, tokens_of

TABLE: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "HTTP libraries",
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "stars": {"type": "integer", "minimum": 0},
                    "licence": {"enum": ["MIT", "Apache-2.0"]},
                    "kind": {"const": "library"},
                    "released": {"type": "string", "format": "date"},
                    "updated": {"type": "string", "format": "date-time"},
                },
                "required": ["name", "licence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["rows"],
}


def refusal(schema: Any) -> InputError:
    with pytest.raises(InputError) as caught:
        check_output_schema(schema)
    assert caught.value.details["field"] == "output_schema"
    return caught.value


def test_a_table_schema_is_accepted_as_given() -> None:
    assert check_output_schema(TABLE) is TABLE


@pytest.mark.parametrize(
    ("keyword", "value", "instead"),
    [
        ("$ref", "#/$defs/row", "in place of the reference"),
        ("anyOf", [{"type": "string"}, {"type": "integer"}], "one schema"),
        ("oneOf", [{"type": "string"}], "one schema"),
        ("allOf", [{"type": "string"}], "Merge"),
        ("not", {"type": "string"}, "description"),
        ("if", {"type": "string"}, "condition"),
        ("patternProperties", {"^x": {"type": "string"}}, "properties"),
        ("dependentSchemas", {"a": {"type": "object"}}, "required"),
    ],
)
def test_an_unsupported_keyword_is_refused_naming_it_where_it_is_and_what_to_write(
    keyword: str, value: Any, instead: str
) -> None:
    schema = {
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {keyword: value}}},
    }
    error = refusal(schema)
    assert f"'{keyword}'" in error.message
    assert "/properties/rows/items" in error.message
    assert error.details["keyword"] == keyword
    assert error.details["pointer"] == "/properties/rows/items"
    assert instead in error.remediation and "Supported keywords" in error.remediation


def test_a_keyword_in_a_property_name_or_an_example_is_no_keyword() -> None:
    schema = {
        "type": "object",
        "properties": {"anyOf": {"type": "string", "examples": [{"$ref": "x"}]}},
    }
    assert check_output_schema(schema) is schema


def test_a_property_name_with_a_slash_is_escaped_in_the_pointer() -> None:
    error = refusal({"type": "object", "properties": {"a/b~c": {"oneOf": [{}]}}})
    assert error.details["pointer"] == "/properties/a~1b~0c"


@pytest.mark.parametrize("value", [None, [], "schema", 3])
def test_a_schema_that_is_no_object_is_refused(value: Any) -> None:
    assert "JSON object" in refusal(value).message


@pytest.mark.parametrize("root", [{"type": "string"}, {"properties": {}}, {"type": ["object"]}])
def test_a_root_that_is_not_an_object_or_an_array_is_refused(root: dict[str, Any]) -> None:
    error = refusal(root)
    assert "root" in error.message and "Wrap the value" in error.remediation


def test_an_invalid_json_schema_is_refused_with_where() -> None:
    error = refusal({"type": "object", "properties": {"a": {"type": "strng"}}})
    assert "not a valid JSON Schema" in error.message
    assert error.details["pointer"] == "/properties/a/type"


def test_the_size_the_property_count_and_the_depth_are_bounded() -> None:
    big = {"type": "object", "description": "x" * MAX_SCHEMA_CHARS}
    assert refusal(big).details["reason"] == "too_large"
    many = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(MAX_PROPERTIES + 1)},
    }
    assert refusal(many).details["reason"] == "too_many_properties"
    under = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(MAX_PROPERTIES)},
    }
    assert check_output_schema(under) is under

    def nested(levels: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(levels - 1):
            schema = {"type": "object", "properties": {"x": schema}}
        return schema

    assert check_output_schema(nested(MAX_DEPTH))
    assert refusal(nested(MAX_DEPTH + 1)).details["reason"] == "too_deep"


def test_nullable_lets_every_leaf_be_null_and_leaves_the_schema_as_it_was() -> None:
    lenient = nullable(TABLE)
    row = lenient["properties"]["rows"]["items"]["properties"]
    assert row["name"]["type"] == ["string", "null"]
    assert row["stars"]["type"] == ["integer", "null"]
    assert row["licence"]["enum"] == ["MIT", "Apache-2.0", None]
    assert row["kind"] == {"enum": ["library", None]}
    assert lenient["properties"]["rows"]["type"] == "array"  # containers stay as they are
    assert TABLE["properties"]["rows"]["items"]["properties"]["name"]["type"] == "string"
    answer = {
        "rows": [
            {
                "name": None,
                "stars": None,
                "licence": None,
                "kind": None,
                "released": None,
                "updated": None,
            }
        ]
    }
    assert validation_errors(answer, lenient) == []
    assert len(validation_errors(answer, TABLE)) == 6


def test_leaves_give_every_scalar_its_escaped_pointer_and_set_at_replaces_it() -> None:
    data = {"a/b": {"c~d": [1, None, {"e": "x"}], "f": []}, "g": True}
    found = leaves(data)
    assert found == [
        ("/a~1b/c~0d/0", 1),
        ("/a~1b/c~0d/1", None),
        ("/a~1b/c~0d/2/e", "x"),
        ("/g", True),
    ]
    assert tokens_of("/a~1b/c~0d/2/e") == ["a/b", "c~d", "2", "e"]
    set_at(data, "/a~1b/c~0d/0", None)
    set_at(data, "/a~1b/c~0d/2/e", "y")
    assert get_at(data, "/a~1b/c~0d") == [None, None, {"e": "y"}]
    assert get_at(data, "") is data
    with pytest.raises(KeyError):
        set_at(data, "/a~1b/c~0d/7", 1)
    with pytest.raises(ValueError):
        set_at(data, "", 1)
    assert leaves("scalar") == [("", "scalar")]


# --------------------------------------------------------------------------- a caller's JSON bounded

CATASTROPHIC = r"^((((\w+)+)+)+)+\d$"  # Python's re: minutes on a dozen letters


def items_deep(levels: int) -> dict[str, Any]:
    """A schema of arrays within arrays, ``levels`` deep (one JSON level each)."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


@pytest.mark.parametrize("levels", [33, 150, 100_000])
def test_any_nesting_is_refused_naming_the_limit_and_where_never_a_recursion_error(
    levels: int,
) -> None:
    error = refusal(items_deep(levels))
    assert error.details["reason"] == "too_deep"
    assert f"more than {MAX_JSON_DEPTH} levels deep" in error.message
    assert error.details["pointer"].startswith("/items/items/")
    assert error.details["pointer"] in error.message
    assert f"at most {MAX_DEPTH} schemas" in error.remediation


def test_nesting_in_a_value_the_schema_holds_is_bounded_too() -> None:
    deep: Any = "leaf"
    for _ in range(50_000):
        deep = {"a": deep}
    error = refusal({"type": "object", "default": deep})
    assert error.details["reason"] == "too_deep"
    assert error.details["pointer"].startswith("/default/a/a")


def test_the_number_of_values_is_bounded_before_anything_walks_them() -> None:
    huge = {"type": "object", "enum": list(range(1_000_000))}
    began = time.monotonic()
    error = refusal(huge)
    assert time.monotonic() - began < 1  # stops at the bound, not at the end of the enum
    assert error.details == {
        "field": "output_schema",
        "pointer": "/enum",
        "reason": "too_many_values",
    }
    assert f"{MAX_JSON_VALUES:,} JSON values" in error.message


def test_a_value_json_cannot_hold_is_refused() -> None:
    error = refusal({"type": "object", "properties": {"a": {"type": "string", "default": {1, 2}}}})
    assert error.details["reason"] == "not_json"
    assert error.details["pointer"] == "/properties/a/default"


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        (r"(a)\1", "invalid escape sequence"),  # a backreference
        (r"(?=a)b", "invalid perl operator"),  # lookahead
        (r"(?<!a)b", "invalid perl operator"),  # lookbehind
        (r"end\Z", "invalid escape sequence"),
        (r".{0,1000}x", "too complex"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_at_start_naming_its_pointer(
    pattern: str, said: str
) -> None:
    schema = {
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {"type": "string", "pattern": pattern}}},
    }
    error = refusal(schema)
    assert error.details["pointer"] == "/properties/rows/items/pattern"
    assert error.details["keyword"] == "pattern" and error.details["reason"] == "pattern"
    assert "/properties/rows/items/pattern" in error.message and said in error.message
    if said != "too complex":
        assert "no backreferences" in error.remediation and "lookaround" in error.remediation
    else:
        assert "maxLength" in error.remediation


def test_without_re2_a_pattern_is_refused_never_run_by_re(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^a"}}}
    check_output_schema(saved)  # accepted while RE2 is there
    monkeypatch.setattr(re2_patterns, "_engine", lambda: None)
    error = refusal(saved)
    assert error.details["pointer"] == "/properties/code/pattern"
    assert "google-re2" in error.remediation
    # A research saved with the schema says its pattern was not checked, rather than use re.
    assert validation_errors({"code": "b"}, saved) == [
        "/code: '^a' was not checked: RE2 (the google-re2 package) is not installed"
    ]
    plain = {"type": "object", "properties": {"code": {"type": "string"}}}
    assert check_output_schema(plain) is plain


@pytest.mark.anyio
async def test_the_start_checks_the_schema_in_a_worker_thread() -> None:
    assert await check_output_schema_off_loop(TABLE) is TABLE
    with pytest.raises(InputError) as caught:
        await check_output_schema_off_loop(items_deep(150))
    assert caught.value.details["reason"] == "too_deep"


@pytest.mark.anyio
async def test_a_start_check_that_overruns_its_time_is_refused_saying_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def slow(value: Any) -> dict[str, Any]:
        time.sleep(1)
        return dict(value)

    monkeypatch.setattr(answer_schema, "START_CHECK_SECONDS", 0.1)
    monkeypatch.setattr(answer_schema, "check_output_schema", slow)
    began = time.monotonic()
    with pytest.raises(InputError) as caught:
        await check_output_schema_off_loop(TABLE)
    assert time.monotonic() - began < 0.9
    assert caught.value.details["reason"] == "too_slow" and "0.1 s" in caught.value.message
