"""The words only the user's own sources hold, and how a public query goes without them."""

from __future__ import annotations

from foundry_mcp.research.models import Source
from foundry_mcp.research.workflow.agents.privacy import PrivateWords

QUESTION = "How many sqlite3 inserts per second does WAL mode sustain?"


def words() -> PrivateWords:
    private = PrivateWords(QUESTION, frozenset({"local", "mcp.notes"}))
    private.learn(
        [
            Source(
                title="Load test notes",
                provider="local",
                content="Project Quillmoor ran on db-prod-7 for AcmeCorp. Inserts were fast. "
                "Heat pumps and SQLite were mentioned.",
            ),
            Source(title="SQLite WAL", provider="tavily", content="SQLite in WAL mode is fast."),
        ]
    )
    return private


def test_names_and_identifiers_only_the_users_sources_hold_are_private() -> None:
    private = words()
    query = "Project Quillmoor AcmeCorp db-prod-7 SQLite inserts Heat pumps"
    assert private.private_in(query) == ["Quillmoor", "AcmeCorp", "db-prod-7"]


def test_a_public_query_goes_without_them_and_keeps_the_rest() -> None:
    private = words()
    query, left_out = private.redact("Project Quillmoor throughput sqlite3 inserts wal mode")
    assert query == "Project throughput sqlite3 inserts wal mode"
    assert left_out == 1 and private.redacted == 1
    assert private.redact("sqlite3 inserts wal mode") == ("sqlite3 inserts wal mode", 0)


def test_a_query_of_private_words_only_is_not_sent() -> None:
    assert words().redact("Quillmoor db-prod-7") == ("", 2)


def test_a_word_a_public_source_also_holds_is_nobodys_secret() -> None:
    private = words()
    private.learn([Source(title="Quillmoor, a village in Yorkshire", provider="google")])
    assert private.private_in("Quillmoor AcmeCorp") == ["AcmeCorp"]


def test_the_names_the_planner_was_shown_are_private_too() -> None:
    private = PrivateWords(QUESTION, frozenset({"local"}))
    private.learn_private(["mcp.notes — Design notes of Project Bramblewick"])
    assert private.redact("Bramblewick write throughput") == ("write throughput", 1)
