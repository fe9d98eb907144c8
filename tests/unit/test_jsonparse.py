"""Recovering a JSON object from model output."""

from __future__ import annotations

import pytest

from foundry_mcp.research.llm.jsonparse import parse_json_object

OBJECT = {"research_brief": "Compare X and Y", "sub_queries": [{"query": "x vs y", "priority": 1}]}


def test_strict_json_object() -> None:
    text = (
        '{"research_brief": "Compare X and Y", "sub_queries": [{"query": "x vs y", "priority": 1}]}'
    )
    assert parse_json_object(text) == OBJECT


def test_strict_json_with_surrounding_whitespace() -> None:
    assert parse_json_object('\n\n  {"a": 1, "b": [true, null]}  \n') == {"a": 1, "b": [True, None]}


@pytest.mark.parametrize(
    "text",
    [
        'Here is the plan:\n```json\n{"a": {"b": [1, 2]}, "c": "d"}\n```\nLet me know!',
        'Sure.\n```JSON\n{"a": {"b": [1, 2]}, "c": "d"}\n```',
        '```\n{"a": {"b": [1, 2]}, "c": "d"}\n```\n',
        'The answer is {"a": {"b": [1, 2]}, "c": "d"} as requested.',
    ],
)
def test_object_inside_prose_or_a_fence(text: str) -> None:
    assert parse_json_object(text) == {"a": {"b": [1, 2]}, "c": "d"}


def test_fenced_block_wins_over_braces_in_the_prose() -> None:
    text = 'Use {placeholders} like this:\n```json\n{"ok": true}\n```\nnot {that}.'
    assert parse_json_object(text) == {"ok": True}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ("{'a': 'x', 'b': 2}", {"a": "x", "b": 2}),
        (
            "```json\n{'findings': [{'content': 'c', 'source_ids': ['src-1',],}],}\n```",
            {"findings": [{"content": "c", "source_ids": ["src-1"]}]},
        ),
        ('{"a": {"b": 1}', {"a": {"b": 1}}),
    ],
)
def test_repairable_json_is_repaired(text: str, expected: dict) -> None:
    assert parse_json_object(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "   ", "garbage", "I could not find anything useful.", "null", "42", '"a string"'],
)
def test_garbage_returns_none(text: str) -> None:
    assert parse_json_object(text) is None


@pytest.mark.parametrize("text", ["[1, 2, 3]", '["a", "b"]', '```json\n["a", "b"]\n```'])
def test_json_list_returns_none(text: str) -> None:
    assert parse_json_object(text) is None


def test_json_list_of_one_object_returns_none() -> None:
    assert parse_json_object('[{"query": "x vs y"}]') is None


def test_empty_object_is_an_object() -> None:
    assert parse_json_object("{}") == {}
