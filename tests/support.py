"""Assertions and waits shared by the integration and end-to-end tests."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio

from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.service.research_service import ResearchService
from tests.fakes import FakeHTTPServer
from tests.fakes.providers import default_results

TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted"}
STATE_BASE = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def stored_state(index: int = 0, **fields: Any) -> ResearchState:
    """A research state for store tests: question ``index``, created ``index`` minutes after
    ``STATE_BASE``; ``fields`` override any of its values."""
    base: dict[str, Any] = {
        "query": f"question {index}",
        "llm_provider": "openai",
        "llm_model": "gpt-test",
        "created_at": STATE_BASE + timedelta(minutes=index),
    }
    return ResearchState(**{**base, **fields})


def searched_queries(tavily: FakeHTTPServer) -> list[str]:
    """The queries the fake search engine was asked, in order."""
    return [r.json["query"] for r in tavily.requests_to("/search") if r.json]


def served_urls(tavily: FakeHTTPServer) -> set[str]:
    """Every URL the fake search engine returned (its answers are deterministic per query)."""
    urls: set[str] = set()
    for request in tavily.requests_to("/search"):
        body = request.json or {}
        for result in default_results(body["query"], body.get("max_results", 5)):
            urls.add(result["url"])
    return urls


def assert_citations_resolve(report: str, allowed_urls: set[str]) -> list[int]:
    """Every [n] in the body has a Sources entry whose URL search returned; none uncited."""
    assert "\n## Sources\n" in report, "report has no Sources section"
    body, sources = report.split("\n## Sources\n", 1)
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", body)}
    entries = dict(re.findall(r"^\[(\d+)\] .* - (\S+)$", sources, re.MULTILINE))
    listed = {int(n) for n in entries}
    assert cited, "report cites nothing"
    assert cited == listed, f"cited {sorted(cited)} but listed {sorted(listed)}"
    for url in entries.values():
        assert url in allowed_urls, f"{url} was never returned by search"
    assert "src-" not in body, "an unresolved source id is left in the report"
    return sorted(cited)


async def wait_until(
    service: ResearchService, research_id: str, statuses: set[str], timeout: float = 30
) -> dict[str, Any]:
    """Poll status (long-poll) until it is one of ``statuses``."""
    with anyio.fail_after(timeout):
        while True:
            status = await service.status(research_id, wait=True, wait_timeout=1)
            if status["status"] in statuses:
                return status
            # A research that ended elsewhere answers at once: yield, so the timeout can fire.
            await anyio.sleep(0.02)


def exited_pid() -> int:
    """The pid of a process that has already exited."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def read_terminal(leader: int, process: subprocess.Popen[bytes], seconds: float = 60) -> bytes:
    """What ``process`` wrote to the pseudo-terminal whose leader side is ``leader``, until it
    closed it or ended (at most ``seconds``), as written; ``leader`` is closed after."""
    chunks = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the other side is closed: everything is read
                break
            if not chunk:
                break
            chunks.append(chunk)
        elif process.poll() is not None:
            break
    os.close(leader)
    return b"".join(chunks)


def later_pool_clock(monkeypatch: Any) -> list[float]:
    """Move the clock ``httpcore2`` keeps its connections by: the seconds put in the list
    returned are added to it, so a test sees the keep-alive without waiting for it."""
    from types import SimpleNamespace

    from httpcore2._async import http11

    later = [0.0]
    monkeypatch.setattr(
        http11, "time", SimpleNamespace(monotonic=lambda: time.monotonic() + later[0])
    )
    return later
