"""A store that blocks stalls no one: status answers while another process holds the lock.

Another process takes the SQLite database's write lock (``BEGIN IMMEDIATE``) in the middle of a
research and keeps it for 8 seconds, as a long transaction of a second server on the same
``research_dir`` would. The research's saves wait for the lock on the store's writer thread;
every status meanwhile answers within a second, read on the store's own reading connection, and
the research completes once the lock is released.
"""

from __future__ import annotations

import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import anyio
import pytest

from foundry_mcp.config import load_settings
from foundry_mcp.research.store.sqlite.database import DB_NAME
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

HOLD_SECONDS = 8.0
STATUS_WITHIN = 1.0
QUESTION = "How does SQLite's write-ahead log let readers and a writer work at once?"
HOLD_THE_LOCK = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


async def test_status_answers_while_another_process_holds_the_write_lock(
    research_env: dict[str, str], tmp_path: Path, tavily_server: FakeHTTPServer
) -> None:
    tavily_server.latency = 0.3  # searches take a while: the lock comes mid-research
    settings = load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))
    database = settings.research.research_dir / DB_NAME
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, max_iterations=1)
        research_id = started["research_id"]
        with anyio.fail_after(20):
            while (await service.status(research_id))["phase"] == "planning":
                await anyio.sleep(0.05)
        command = [sys.executable, "-c", HOLD_THE_LOCK, str(database), str(HOLD_SECONDS)]
        holder = await anyio.to_thread.run_sync(
            partial(subprocess.Popen, command, stdout=subprocess.PIPE, text=True)
        )
        try:
            assert holder.stdout is not None
            assert (await anyio.to_thread.run_sync(holder.stdout.readline)).strip() == "locked"
            locked_at = time.monotonic()
            answered = 0
            while time.monotonic() - locked_at < HOLD_SECONDS - 0.5:
                asked = time.monotonic()
                status = await service.status(research_id)
                took = time.monotonic() - asked
                assert took < STATUS_WITHIN, (
                    f"a status took {took:.2f} s while the store was locked"
                )
                assert status["research_id"] == research_id
                answered += 1
                await anyio.sleep(0.2)
            assert holder.poll() is None, "the lock was let go too early for the test to count"
        finally:
            await anyio.to_thread.run_sync(holder.wait, 30)
        final = await wait_until(service, research_id, TERMINAL, timeout=60)

    assert answered >= 20
    assert final["status"] == "completed", final["error"]
