"""Seed 003's allocation: the planner aims each sub-query at the user's documents, the web or both.

When the research searches the user's documents and the web, the planner sees a sample of the
documents (:func:`sample_local_documents`) and aims each sub-query at them, the web or both; the
split is recorded as the planner's ``allocate_sources`` decision (:func:`adopt_plan`) and the
gatherer searches each side only with its providers. Simple and hierarchical mode plan this way.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from foundry_mcp.errors import ProviderError
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    PlannerOutput,
    ResearchState,
    SearchTarget,
    SubQuery,
)
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.prompts.planner import named_source_line

log = logging.getLogger(__name__)

LOCAL_SAMPLE_SIZE = 12  # documents named to the planner

Sampler = Callable[[str, int], Awaitable[list[str]]]


def with_named_sources(documents: Sampler | None, described: dict[str, str]) -> Sampler | None:
    """A sampler naming the user's MCP sources (``described``: name to what it holds) before a
    sample of their documents, so the planner can aim sub-queries at each by name."""
    if not described:
        return documents
    named = [named_source_line(name, text) for name, text in sorted(described.items())]

    async def sample(question: str, limit: int) -> list[str]:
        if documents is None:
            return list(named)
        try:
            return named + await documents(question, limit)
        except ProviderError as exc:
            log.warning("the user's documents could not be sampled: %s", exc.message)
            return list(named)

    return sample


async def sample_local_documents(kit: ResearchKit, question: str) -> list[str]:
    """Names of the user's documents for the planner to allocate sub-queries with.

    Empty (no allocation, every sub-query searches everything) unless the research searches
    both the user's documents and the web, or when the documents cannot be sampled: the
    gatherer's searches then report why.
    """
    sampler = kit.local_sample
    if sampler is None or all(p.name in kit.local_providers for p in kit.search):
        return []
    try:
        sample = await sampler(question, LOCAL_SAMPLE_SIZE)
    except ProviderError as exc:
        log.warning("the user's documents could not be sampled for the planner: %s", exc.message)
        return []
    if kit.private is not None:  # the planner sees these names: they are the user's own
        kit.private.learn_private(sample)
    return sample


def adopt_plan(
    state: ResearchState, output: PlannerOutput, local_sample: Sequence[str] = ()
) -> None:
    """Make the planner's brief and sub-queries the research's (for its current iteration).

    Planned with a ``local_sample``, the split between the user's documents and the web is
    recorded as the planner's decision.
    """
    state.research_brief = output.research_brief or state.research_brief
    planned = [
        SubQuery(
            query=p.query,
            rationale=p.rationale,
            priority=p.priority,
            iteration=state.iteration,
            target=p.target,
            source_types=p.source_types,
            sources=p.sources,
        )
        for p in output.sub_queries
    ]
    state.sub_queries.extend(planned)
    if not local_sample:
        return
    counts = Counter(sq.target for sq in planned)
    split = {target.value: counts[target] for target in SearchTarget}
    strategy = output.allocation_strategy or "The planner gave no allocation strategy."
    state.record(
        AgentDecision(
            agent=AgentRole.PLANNER,
            action="allocate_sources",
            rationale=f"{split['local']} sub-queries to the user's documents, {split['web']} to "
            f"the web, {split['both']} to both. {strategy}",
            inputs={"iteration": state.iteration, "documents_sampled": len(local_sample)},
            outputs={
                **split,
                "allocation_strategy": output.allocation_strategy,
                "targets": {sq.id: sq.target.value for sq in planned},
            },
        )
    )
