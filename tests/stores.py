"""Stores on one backend's storage for the store tests: several instances stand for several
servers, and the tables can be read behind their back."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.research.store.opening import open_store
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.sqlite.database import DB_NAME


@dataclass
class Stores:
    """Opens stores on one backend's storage: several instances stand for several servers."""

    backend: str
    settings: ResearchSettings
    opened: list[Store] = field(default_factory=list)

    def open(self) -> Store:
        store = open_store(self.settings)
        self.opened.append(store)
        return store

    def sql(self, statement: str, *params: object) -> list[tuple[Any, ...]]:
        """Run ``statement`` on the tables behind the stores' back (``?`` marks a parameter)."""
        if self.backend == "sqlite":
            with closing(sqlite3.connect(self.settings.research_dir / DB_NAME)) as db, db:
                return db.execute(statement, params).fetchall()
        assert self.settings.store_url is not None
        url = self.settings.store_url.get_secret_value()
        with psycopg.connect(url, autocommit=True) as conn:
            cursor = conn.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def count(self, table: str, research_id: str) -> int:
        """The rows of ``table`` that belong to ``research_id``."""
        return int(
            self.sql(f"SELECT count(*) FROM {table} WHERE research_id = ?", research_id)[0][0]
        )


def stores_on(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    """The body of a ``stores`` fixture parametrized with ``sqlite`` and ``postgresql``."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    opener = Stores(
        request.param, ResearchSettings(research_dir=tmp_path / "research", store_url=url)
    )
    yield opener
    for store in opener.opened:
        store.close()
