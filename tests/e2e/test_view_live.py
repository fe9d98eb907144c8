"""The live page in a real browser (the distribution's Chromium, driven by Playwright): served by
``foundry-mcp view ID --serve`` while another process runs the research with a slow fake LLM,
the page updates as the research moves and ends showing its report, then asks nothing more;
when its server goes away, it says so in an announced status line and keeps retrying."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from foundry_mcp.view.data import ViewData
from foundry_mcp.view.serving import Listening, serve_view
from tests.browser import async_chromium
from tests.e2e.test_view_cli import Served
from tests.fakes import FakeHTTPServer

pytestmark = pytest.mark.anyio

QUESTION = "How do B-trees split their nodes?"
REPORT_WITHIN_SECONDS = 90


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """Headless Chromium, driven by Playwright (skipped where neither is installed)."""
    async with async_chromium() as launched:
        yield launched


def _research_elsewhere(env: dict[str, str]) -> subprocess.Popen[str]:
    """``foundry-mcp research`` in another process, its progress on a pipe."""
    return subprocess.Popen(
        [sys.executable, "-m", "foundry_mcp", "research", QUESTION, "--max-iterations", "1"],
        env={"PATH": os.environ.get("PATH", ""), **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _state(page: Any) -> dict[str, Any]:
    """What the page shows now: its header's text, whether it says the research still runs,
    whether the report is shown, and its connection line."""
    state: dict[str, Any] = await page.evaluate(
        """() => {
            const report = document.getElementById('report');
            const top = document.getElementById('top');
            const line = document.getElementById('connection');
            return {top: top ? top.textContent : '',
                    live: !!top && top.textContent.includes('Updating as the research runs.'),
                    report: !!report && !report.hidden && report.textContent.length > 200,
                    connection: line && !line.hidden ? line.textContent : '',
                    role: line ? line.getAttribute('role') : null};
        }"""
    )
    return state


def _stalled(
    seen: list[dict[str, Any]],
    polls: list[str],
    served: Served,
    runner: subprocess.Popen[str],
    llm: FakeHTTPServer,
) -> str:
    """What the test saw when the page showed no report in time: enough to tell whether the
    research, the page's server or the page stalled."""
    research_running = runner.poll() is None
    if research_running:
        runner.kill()
    stderr = runner.communicate(timeout=10)[1] or ""
    view_running = served.process.poll() is None
    return (
        f"no report on the page within {REPORT_WITHIN_SECONDS} s. "
        f"The page last showed {seen[-1] if seen else 'nothing'}, after "
        f"{len([url for url in polls if url == served.url + 'data'])} polls of its data. "
        f"The research process was {'still running' if research_running else 'ended'} "
        f"(exit {runner.returncode}); the fake model had answered {len(llm.exchanges)} "
        f"request(s); the view server was "
        f"{'serving' if view_running else f'ended (exit {served.process.returncode})'}. "
        f"The research's stderr ended with: {stderr[-3000:]!r}"
    )


async def test_the_served_page_follows_a_running_research_to_its_report(
    research_env: dict[str, str], openai_server: FakeHTTPServer, browser: Any
) -> None:
    # A model slow enough that the research runs while the page polls twice, whatever the
    # machine's load; then quick, so that it ends (the test lets it go, not a clock).
    openai_server.latency = 2.0
    runner = _research_elsewhere(research_env)
    served: Served | None = None
    try:
        assert runner.stderr is not None
        started = re.search(r"research (deepres-[0-9a-f]{12}) started", runner.stderr.readline())
        assert started is not None
        # It stops serving by itself three seconds after the research ends (--linger): the
        # page's next poll (each 1.5 s) finds the end before that.
        served = Served(research_env, started.group(1), "--linger", "3")
        page = await browser.new_page()
        polls: list[str] = []
        violations: list[str] = []
        page.on("request", lambda request: polls.append(request.url))
        page.on(
            "console",
            lambda message: (
                violations.append(message.text)
                if "Content Security Policy" in message.text
                else None
            ),
        )
        await page.goto(served.url)
        seen: list[dict[str, Any]] = []
        try:
            with anyio.fail_after(REPORT_WITHIN_SECONDS):
                while True:
                    seen.append(await _state(page))
                    if seen[-1]["report"] and not seen[-1]["live"]:
                        break
                    if len([url for url in polls if url == served.url + "data"]) >= 2:
                        openai_server.latency = 0.05  # polled twice while it ran: let it end
                    await anyio.sleep(0.2)
        except TimeoutError:
            pytest.fail(_stalled(seen, polls, served, runner, openai_server))
        running = [s for s in seen if not s["report"]]
        assert running, "the page never showed the research before its report"
        assert len({s["top"] for s in seen}) >= 2, "the page never changed while it ran"
        data_polls = [url for url in polls if url == served.url + "data"]
        assert len(data_polls) >= 2, polls
        assert not any(s["connection"] for s in seen), seen
        # Ended: no more requests of its own (two poll intervals and more pass).
        await anyio.sleep(3.2)
        assert len([url for url in polls if url == served.url + "data"]) == len(data_polls)
        assert {url for url in polls} <= {served.url, served.url + "data"}, polls
        assert violations == []
        assert runner.wait(60) == 0
        # No signal was sent: it stopped by itself, the research ended, and said nothing on
        # stderr (--json).
        assert served.process.wait(timeout=15) == 0
    finally:
        if served is not None:
            served.stop()
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def _running() -> ViewData:
    return ViewData(
        research_id="deepres-0123456789ab",
        question=QUESTION,
        status="running",
        live=True,
        phase="gathering",
        phase_index=2,
        created_at="2026-11-29T08:00:00+00:00",
        updated_at="2026-11-29T08:01:00+00:00",
    )


async def test_the_page_says_when_its_server_is_gone_and_keeps_retrying(browser: Any) -> None:
    heard: list[Listening] = []
    stop = anyio.Event()

    async def load() -> ViewData:
        return _running()

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: serve_view(load, on_ready=heard.append, stop=stop))
        while not heard:
            await anyio.sleep(0.01)
        page = await browser.new_page()
        await page.goto(heard[0].url)
        with anyio.fail_after(10):
            while not (await page.evaluate("() => !!window.FoundryView")):
                await anyio.sleep(0.05)
        assert (await _state(page))["connection"] == ""
        stop.set()  # the server goes away while the research "runs"
    with anyio.fail_after(20):
        while not (state := await _state(page))["connection"]:
            await anyio.sleep(0.1)
    assert state["connection"].startswith("Connection lost, retrying in ")
    assert state["role"] == "status"
