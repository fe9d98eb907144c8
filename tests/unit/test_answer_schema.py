"""The caller's output_schema: what is refused and why, nulls at leaves, validation, pointers."""

from __future__ import annotations

from typing import Any

import pytest

from foundry_mcp.errors import InputError
from foundry_mcp.research.workflow.report.answer_schema import (
    MAX_DEPTH,
    MAX_PROPERTIES,
    MAX_SCHEMA_CHARS,
    check_output_schema,
    get_at,
    leaves,
    nullable,
    set_at,
    tokens_of,
    validation_errors,
)

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
