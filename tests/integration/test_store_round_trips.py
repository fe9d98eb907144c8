"""A PostgreSQL store's statement is one round trip: the pool does not check a connection with
a statement when it hands it out, yet a connection the server dropped is still replaced before
anyone uses it (issue 31, item 5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.store.postgres.store import PostgresStore
from tests.postgres import PostgresServer


@pytest.fixture
def store(postgres_url: str, tmp_path: Path) -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url, tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each connection checked with a statement (``ConnectionPool.check_connection``)."""
    seen: list[int] = []
    original = ConnectionPool.check_connection

    def counted(conn: Any) -> None:
        seen.append(1)
        original(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    return seen


def test_a_healthy_pool_costs_no_check_statement(store: PostgresStore, checks: list[int]) -> None:
    state = ResearchState(query="q", llm_provider="openai", llm_model="m")
    store.save(state)
    for _ in range(20):
        store.load(state.id)
        store.fingerprint(state.id)
    assert checks == []
    assert store.unavailable() is None


def test_a_dropped_connection_is_checked_and_replaced(
    store: PostgresStore, postgres_server: PostgresServer, checks: list[int]
) -> None:
    state = ResearchState(query="q", llm_provider="openai", llm_model="m")
    store.save(state)
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = "
            "'foundry_test' AND application_name = 'foundry-mcp' AND pid <> pg_backend_pid()"
        ).fetchall()
    assert killed  # and gone (the timeout): the server's goodbye reached the idle connection
    assert store.load(state.id).id == state.id
    assert len(checks) >= 1  # only the connection the server wrote to was checked
    assert store.unavailable() is None
