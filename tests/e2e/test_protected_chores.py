"""A cloned repository's foundry-mcp.toml cannot delete, purge or resume the user's research.

Over a real server start (stdio, as an editor starts it in the repository): the file asks for
retention after nine seconds, an archive kept for a third of a second and auto-resume. Until the
user trusts it nothing is deleted, purged or resumed, and each key is named; once trusted they
apply; once the file changes they are ignored again.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import NamedTuple

import pytest
from mcp import Client, StdioServerParameters

from foundry_mcp.context.archive import ContentArchive, archive_dir
from foundry_mcp.research.models import Status, utcnow
from foundry_mcp.research.store.sqlite.store import DB_NAME, ResearchStore
from tests.e2e.conftest import call
from tests.fakes import FakeHTTPServer
from tests.support import stored_state

pytestmark = [pytest.mark.anyio, pytest.mark.stdio]

CHORES = """\
[research]
retention_days = 0.0001
content_archive_ttl_hours = 0.0001
auto_resume = true
"""
CHORE_KEYS = (
    "[research] retention_days",
    "[research] content_archive_ttl_hours",
    "[research] auto_resume",
)


class Place(NamedTuple):
    home: Path
    repo: Path
    research: Path


class Seeded(NamedTuple):
    finished: str  # a completed research last touched an hour ago
    stopped: str  # an interrupted research, which auto_resume would resume
    archived: Path  # an archived original written an hour ago


@pytest.fixture
def place(tmp_path: Path, openai_server: FakeHTTPServer, tavily_server: FakeHTTPServer) -> Place:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".foundry-mcp.toml").write_text(
        f'[providers.openai]\napi_key = "sk-users-own-key"\nbase_url = "{openai_server.base_url}/v1"\n'
        "max_retries = 0\n\n"
        f'[providers.tavily]\napi_key = "tvly-users-own"\nbase_url = "{tavily_server.base_url}"\n'
        "max_retries = 0\n"
    )
    repo = tmp_path / "cloned-repo"
    repo.mkdir()
    (repo / "foundry-mcp.toml").write_text(CHORES)
    return Place(home, repo, tmp_path / "research")


def seed(research: Path) -> Seeded:
    """The user's own research and archive, as an earlier session left them."""
    store = ResearchStore(research)
    finished = stored_state(0, status=Status.COMPLETED)
    stopped = stored_state(1, status=Status.INTERRUPTED, search_providers=["tavily"])
    for state in (finished, stopped):
        store.save(state)
    store.close()
    an_hour_ago = utcnow() - timedelta(hours=1)
    with sqlite3.connect(research / DB_NAME) as db:
        db.execute(
            "UPDATE research SET updated_at = ? WHERE id = ?",
            (an_hour_ago.isoformat(), finished.id),
        )
        # Never old enough to be deleted by retention: only auto_resume could touch it.
        db.execute(
            "UPDATE research SET updated_at = ? WHERE id = ?",
            ((utcnow() + timedelta(days=1)).isoformat(), stopped.id),
        )
    archive = ContentArchive(archive_dir(research, None), ttl_hours=168)
    digest = archive.write(
        content=f"An original page kept for a restore ({finished.id}).",
        item_id="src-1",
        item_type="source",
        reason="dropped",
        original_tokens=12,
    )
    archived = archive.path_of(digest)
    os.utime(archived, (time.time() - 3600, time.time() - 3600))
    return Seeded(finished.id, stopped.id, archived)


def _env(place: Place) -> dict[str, str]:
    base = {key: os.environ[key] for key in ("PATH", "LANG") if key in os.environ}
    return {
        **base,
        "HOME": str(place.home),
        "FOUNDRY_MCP_RESEARCH_DIR": str(place.research),
        "FOUNDRY_MCP_NO_DOWNLOADS": "1",
    }


def _cli(place: Place, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "foundry_mcp", *args],
        cwd=place.repo,
        env=_env(place),
        capture_output=True,
        text=True,
        timeout=60,
    )


async def _start_server(place: Place) -> dict[str, str]:
    """Start the server in the repository; the status of every research it then lists."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "foundry_mcp"],
        env=_env(place),
        cwd=str(place.repo),
    )
    async with Client(params, mode="legacy") as client:
        listed = await call(client, action="deep-research-list")
    assert listed["success"], listed
    return {item["research_id"]: item["status"] for item in listed["data"]["items"]}


def _assert_untouched(listed: dict[str, str], seeded: Seeded) -> None:
    assert listed.get(seeded.finished) == "completed", listed  # not deleted
    assert listed.get(seeded.stopped) == "interrupted", listed  # not resumed
    assert seeded.archived.exists()  # not purged


def _assert_named(place: Place, reason: str) -> None:
    doctor = json.loads(_cli(place, "doctor").stdout)
    untrusted = doctor["untrusted_config"]
    assert untrusted["reason"] == reason
    assert set(CHORE_KEYS) <= set(untrusted["ignored_keys"]), untrusted
    warning = " ".join(doctor["warnings"])
    assert all(key in warning for key in CHORE_KEYS) and "foundry-mcp trust" in warning


async def test_chores_wait_for_trust_and_stop_again_when_the_file_changes(place: Place) -> None:
    seeded = seed(place.research)
    _assert_untouched(await _start_server(place), seeded)
    _assert_named(place, "never trusted")

    trusted = _cli(place, "trust", "--json")
    assert trusted.returncode == 0, trusted.stderr
    assert set(CHORE_KEYS) <= set(json.loads(trusted.stdout)["protected_keys"])

    listed = await _start_server(place)
    assert seeded.finished not in listed  # deleted by retention
    assert listed[seeded.stopped] != "interrupted"  # resumed at start-up
    assert not seeded.archived.exists()  # purged by the archive's time to live

    config = place.repo / "foundry-mcp.toml"
    config.write_text(CHORES + "# edited after it was trusted\n")
    again = seed(place.research)
    _assert_untouched(await _start_server(place), again)
    _assert_named(place, "changed since it was trusted")
