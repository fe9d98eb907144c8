"""How a research ends unfinished, as every part that stops one records it: a run (timed out,
failed, cancelled, its server stopping), a dead owner's research interrupted, a waiting plan
cancelled."""

from __future__ import annotations

from foundry_mcp.research.models import ResearchState, Status, utcnow

# Why a research is interrupted when its server stops cleanly (SIGTERM, the editor closing it).
SERVER_STOPPED = "The server stopped while the research was running."


def abort(state: ResearchState, status: Status, reason: str) -> None:
    """End ``state`` unfinished, recording where it stopped (partial results stay)."""
    state.status = status
    state.completed_at = utcnow()
    state.metadata[reason] = True
    state.metadata["abort_phase"] = state.phase.value
    state.metadata["abort_iteration"] = state.iteration
