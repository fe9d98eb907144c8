"""A research's progress on stderr while the terminal waits for it.

On a terminal a live line drawn with ``rich``; elsewhere (pipes, tests, CI logs) one plain line
each time something changes. Both read the same long-polled status the MCP tools return.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from rich.console import Console
from rich.live import Live
from rich.text import Text

from foundry_mcp.plain import plain
from foundry_mcp.research.service.asking.asker import Asker
from foundry_mcp.research.service.research_service import ResearchService

# Where following stops: the research ended, or waits for its plan's approval.
TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted", "waiting"}
_BAR = 20
_SHORT = {
    "iteration": "iter",
    "sub-queries": "sub-q",
    "sources": "src",
    "findings": "find",
    "tokens": "tok",
}


async def follow_progress(
    service: ResearchService,
    research_id: str,
    interrupted: anyio.Event,
    asker: Asker | None = None,
) -> dict[str, Any]:
    """Show progress until the research ends or waits (or ``interrupted`` is set); the last
    status. A plan waiting for approval is put to ``asker``, when there is one."""
    console = Console(stderr=True)
    if not console.is_terminal:
        return await _follow_plain(service, research_id, interrupted, asker)
    with Live(console=console, auto_refresh=False, transient=False) as live:
        while True:
            status = await service.status(research_id, wait=True, wait_timeout=0.5)
            if status["status"] == "waiting" and asker is not None:
                live.stop()  # the form is asked on the same terminal
                status = await service.status(research_id, asker=asker)
                say_unapplied(status)
                live.start()
            live.update(_live_line(status), refresh=True)
            if status["status"] in TERMINAL or interrupted.is_set():
                return status


async def _follow_plain(
    service: ResearchService,
    research_id: str,
    interrupted: anyio.Event,
    asker: Asker | None,
) -> dict[str, Any]:
    last = ""
    while True:
        status = await service.status(research_id, wait=True, wait_timeout=0.5, asker=asker)
        say_unapplied(status)
        line = progress_line(status)
        changed = line.split("]", 1)[1]  # the elapsed time alone is not a change
        if changed != last:
            print(line, file=sys.stderr, flush=True)
            last = changed
        if status["status"] in TERMINAL or interrupted.is_set():
            return status


def say_unapplied(status: dict[str, Any]) -> None:
    """An answer to the plan's form that came too late to apply: why, on stderr."""
    answer = status.get("plan_answer") or {}
    if answer and not answer["applied"]:
        print(plain(answer["reason"]), file=sys.stderr, flush=True)


def _done_fraction(status: dict[str, Any]) -> float:
    if status["status"] == "completed":
        return 1.0
    progress = status["progress"]
    iterations = max(1, status["max_iterations"])
    done: float = (
        status["iteration"] - 1 + (progress["phase_index"] - 1) / progress["phases"]
    ) / iterations
    return min(1.0, max(0.0, done))


def _figures(status: dict[str, Any]) -> list[tuple[str, str]]:
    """The numbers shown on either display, as (label, value); the live line abbreviates."""
    progress = status["progress"]
    spent = status["usage"]["total"]
    cost = spent.get("cost_usd")
    return [
        ("iteration", f"{status['iteration']}/{status['max_iterations']}"),
        ("sub-queries", f"{progress['sub_queries_done']}/{progress['sub_queries_total']}"),
        ("sources", str(progress["sources"])),
        ("findings", str(progress["findings"])),
        ("tokens", str(spent["input_tokens"] + spent["output_tokens"])),
        ("cost", "?" if cost is None else f"~${cost:.4f}"),
    ]


def progress_line(status: dict[str, Any]) -> str:
    """``[  12.3s] [#####.........] running    analysis    iteration 1/3 ...`` for one status."""
    filled = round(_done_fraction(status) * _BAR)
    figures = "  ".join(f"{label} {value}" for label, value in _figures(status))
    return plain(
        f"[{status['elapsed_s']:6.1f}s] [{'#' * filled}{'.' * (_BAR - filled)}] "
        f"{status['status']:<10} {status['phase']:<11} {figures}"
    )


def _live_line(status: dict[str, Any]) -> Text:
    filled = round(_done_fraction(status) * _BAR / 2)  # half as wide: 80 columns hold it all
    colour = {"completed": "green", "running": "cyan"}.get(status["status"], "yellow")
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{status['elapsed_s']:6.1f}s ", style="dim")
    line.append("━" * filled, style=colour)
    line.append("━" * (_BAR // 2 - filled), style="dim")
    line.append(plain(f" {status['phase']}"), style=f"bold {colour}")
    for label, value in _figures(status):
        line.append(f" {_SHORT.get(label, label)} ", style="dim")
        line.append(plain(value))
    return line
