"""Every refusal of a malformed call is the tool's own envelope, over a real MCP session."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from foundry_mcp.config import Settings
from foundry_mcp.server import create_server
from tests.e2e.conftest import call, run_to_end

pytestmark = pytest.mark.anyio

# (arguments, error_code, field) for calls the SDK alone would refuse with its own text.
WRONG_CALLS: list[tuple[dict[str, Any], str, str]] = [
    (
        {"action": "deep-research", "query": "x", "max_iterations": "three"},
        "VALIDATION_ERROR",
        "max_iterations",
    ),
    ({"action": "deep-research", "query": 42}, "VALIDATION_ERROR", "query"),
    (
        {"action": "deep-research-status", "research_id": ["deepres-0123456789ab"]},
        "VALIDATION_ERROR",
        "research_id",
    ),
    (
        {"action": "deep-research", "query": "x", "max_iterations": True},
        "VALIDATION_ERROR",
        "max_iterations",
    ),
    (
        {"action": "deep-research", "query": "x", "max_iterations": 2.5},
        "VALIDATION_ERROR",
        "max_iterations",
    ),
    (
        {"action": "deep-research", "query": "x", "task_timeout": "soon"},
        "VALIDATION_ERROR",
        "task_timeout",
    ),
    (
        {"action": "deep-research-status", "research_id": "deepres-0123456789ab", "wait": "maybe"},
        "VALIDATION_ERROR",
        "wait",
    ),
    ({"action": "deep-research-list", "limit": {"n": 3}}, "VALIDATION_ERROR", "limit"),
    ({"action": "deep-research-list", "colour": "blue"}, "VALIDATION_ERROR", "colour"),
    ({"query": "no action"}, "VALIDATION_ERROR", "action"),
    ({"action": 7}, "UNKNOWN_ACTION", "action"),
    ({"action": "deep-research-purge"}, "UNKNOWN_ACTION", "action"),
    (
        {"action": "deep-research-report", "evidence": True},
        "VALIDATION_ERROR",
        "evidence",
    ),
]


def _client(settings: Settings) -> Client:
    return Client(create_server(lambda: settings), mode="legacy")


def _assert_refused(envelope: dict[str, Any], code: str, field: str) -> None:
    assert envelope["success"] is False, envelope
    assert envelope["data"]["error_code"] == code, envelope
    assert envelope["data"]["field"] == field, envelope
    assert envelope["data"]["remediation"], envelope
    assert field in envelope["error"], envelope
    assert "validation error" not in envelope["error"].lower()  # not pydantic's text


@pytest.mark.parametrize(("arguments", "code", "field"), WRONG_CALLS)
async def test_wrongly_typed_or_unknown_arguments_get_the_envelope(
    settings: Settings, arguments: dict[str, Any], code: str, field: str
) -> None:
    async with _client(settings) as client:
        _assert_refused(await call(client, **arguments), code, field)
        listed = await call(client, action="deep-research-list")
        assert listed["success"] and listed["data"]["items"] == []  # nothing was started


async def test_the_refusal_says_what_the_field_must_be(settings: Settings) -> None:
    async with _client(settings) as client:
        envelope = await call(client, action="deep-research", query="x", max_iterations="three")
    assert "integer between 1 and 10" in envelope["error"]
    assert "'three'" in envelope["error"]
    assert "max_iterations" in envelope["data"]["remediation"]


async def test_an_unknown_action_deletes_nothing(settings: Settings) -> None:
    async with _client(settings) as client:
        started = await call(client, action="deep-research", query="What is a skip list?")
        research_id = started["data"]["research_id"]
        await run_to_end(client, research_id)
        for action in ("deep-research-remove", "delete", "deep-research-delete ", ""):
            refused = await call(client, action=action, research_id=research_id)
            assert refused["data"]["error_code"] == "UNKNOWN_ACTION", refused
        status = await call(client, action="deep-research-status", research_id=research_id)
        assert status["success"] and status["data"]["status"] == "completed"


async def test_string_values_are_taken_verbatim(settings: Settings) -> None:
    # The SDK would JSON-decode "null" into None; the question is the four letters.
    async with _client(settings) as client:
        started = await call(client, action="deep-research", query="null", max_iterations=1)
        assert started["success"], started
        research_id = started["data"]["research_id"]
        final = await run_to_end(client, research_id)
        assert final["query"] == "null"


async def test_numbers_sent_as_strings_are_accepted(settings: Settings) -> None:
    async with _client(settings) as client:
        envelope = await call(
            client, action="deep-research", query="What is a trie?", max_iterations="2"
        )
        assert envelope["success"], envelope
        assert envelope["data"]["limits"]["max_iterations"] == 2


async def test_preferred_sources_are_taken_and_bad_ones_refused(settings: Settings) -> None:
    async with _client(settings) as client:
        started = await call(
            client,
            action="deep-research",
            query="How does asyncio schedule tasks?",
            preferred_sources="Docs.Python.org, https://peps.python.org/",
            max_iterations=1,
        )
        assert started["success"], started
        assert started["data"]["search"]["preferred_sources"] == [
            "docs.python.org",
            "https://peps.python.org/",
        ]
        final = await run_to_end(client, started["data"]["research_id"])
        assert final["status"] == "completed"
        refused = await call(
            client, action="deep-research", query="x", preferred_sources=["not a site"]
        )
    assert refused["success"] is False
    assert refused["data"]["error_code"] == "VALIDATION_ERROR"
    assert refused["data"]["field"] == "preferred_sources"
    assert "domain" in refused["data"]["remediation"]


@pytest.mark.stdio
async def test_refusals_over_stdio(editor: Client) -> None:
    for arguments, code, field in WRONG_CALLS[:3] + WRONG_CALLS[-3:]:
        _assert_refused(await call(editor, **arguments), code, field)
