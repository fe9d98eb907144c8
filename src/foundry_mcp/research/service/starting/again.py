"""A research that ran before, run again: a resume (``service/writes.py``) and a revision of
its report (``service/completed/revising.py``) check its providers the same way, and, once
they hold its lease, queue it, save it and schedule its run the same way."""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.models import ResearchState, Status
from foundry_mcp.research.service.parts import ServiceParts
from foundry_mcp.research.service.starting.starter import fit_token_options


def check_providers(parts: ServiceParts, state: ResearchState, *, searches: bool = True) -> None:
    """The research's LLM and routes, and (``searches``) its search providers, still usable:
    a run that cannot go on fails now, naming the fix, not in the background."""
    parts.providers.resolve_llm(f"{state.llm_provider}:{state.llm_model}", None)
    if not state.options.pinned_provider:
        parts.providers.resolve_routes()
    if searches:
        parts.providers.usable_search_providers(state.search_providers)


async def run_again(
    parts: ServiceParts, state: ResearchState, event: str, data: dict[str, Any]
) -> None:
    """Queue ``state`` (claimed under this process's lease) for another run: its last run's
    end and error cleared, the token options of this moment, saved, ``event`` recorded and
    the run scheduled."""
    state.status = Status.QUEUED
    state.completed_at = None
    state.error = None
    fit_token_options(parts.context, state)  # current token settings (see restore_content)
    await parts.io.write(lambda store: store.save(state, parts.owner))
    parts.runner.event(state.id, event, {**data, "pid": parts.owner.pid})
    parts.jobs.start(state.id, parts.runner.run)
