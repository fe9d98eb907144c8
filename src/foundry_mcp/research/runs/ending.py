"""How a research ends unfinished, as every part that stops one records it: a run (timed out,
failed, cancelled, its server stopping), a dead owner's research interrupted, a waiting plan
cancelled; and what a run builds in a worker thread, which never holds its end up."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio

from foundry_mcp.research.models import ResearchState, Status, utcnow

T = TypeVar("T")

# Why a research is interrupted when its server stops cleanly (SIGTERM, the editor closing it).
SERVER_STOPPED = "The server stopped while the research was running."


def abort(state: ResearchState, status: Status, reason: str) -> None:
    """End ``state`` unfinished, recording where it stopped (partial results stay)."""
    state.status = status
    state.completed_at = utcnow()
    state.metadata[reason] = True
    state.metadata["abort_phase"] = state.phase.value
    state.metadata["abort_iteration"] = state.iteration


async def built(make: Callable[..., T], *args: object) -> T:
    """``make(*args)`` in a worker thread: a provider's adapter or fetcher, whose SDK may be
    imported on the way (seconds on a busy machine). A run cancelled meanwhile does not wait
    for it, so that a stopping server saves the run within its grace: the thread finishes on
    its own, and the provider registry keeps what it built for the next run."""
    return await anyio.to_thread.run_sync(make, *args, abandon_on_cancel=True)
