"""The planner: a research brief and sub-queries; when asked, a judgement and a decomposition.

Shown a sample of the user's documents, it also aims each sub-query at them, the web or both;
in a research that asks for several kinds of outside sources, it names those that suit each
sub-query (see :func:`offered_source_types`).
"""

from __future__ import annotations

from collections.abc import Sequence

from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    AgentRole,
    Clarification,
    Clarify,
    PlannedSubQuery,
    PlannerOutput,
    ResearchState,
    SearchTarget,
)
from foundry_mcp.research.prompts.planner import (
    named_sources,
    planner_prompts,
    strategist_prompts,
)
from foundry_mcp.research.workflow.fitting.fitter import Fitting

MIN_QUERY_CHARS = 3
LEGACY_MAX_TOKENS = 2048


async def plan(
    llm: ResearchLLM,
    state: ResearchState,
    guidance: str | None,
    *,
    judge: bool = False,
    require_decomposition: bool = False,
    local_sample: Sequence[str] = (),
) -> PlannerOutput:
    """Ask the model for a plan; fall back to the question itself as the only sub-query.

    With ``judge`` the planner also assesses the question's complexity and may decompose it;
    with ``require_decomposition`` it must decompose it, and writes no sub-queries (its parts
    are planned by their own researchers). Both come back unvalidated (the modes validate
    them): ``assessment`` and ``decomposition`` are None when absent or unreadable.
    With a ``local_sample`` (names of the user's documents) it gives each sub-query a target
    and an allocation strategy; without one, every target is ``both``.
    """
    limit = state.limits.max_sub_queries
    modes = state.options.mode
    offered = offered_source_types(state)
    fitting = await Fitting.open(llm, state, "planning")
    clarified = state.clarification.as_brief() if state.clarification else ""
    # Nobody could be asked: the planner names the reading it chose of an ambiguous question.
    assume = wants_assumptions(state)

    def build(scale: float) -> tuple[str, str]:
        """The prompts; the requester's fitting kept within ``scale`` of the planning budget."""
        background = state.system_prompt
        if background and fitting.enabled:
            budget = max(1, int(fitting.phase_budget("planning") * scale))
            background = fitting.fit_text(background, budget, state.query)
        if judge or require_decomposition:
            return strategist_prompts(
                state.query,
                limit,
                (modes.min_sub_questions, modes.max_sub_questions),
                background,
                guidance,
                require_decomposition=require_decomposition,
                local_sample=local_sample,
                source_types=offered,
                clarified=clarified,
                assumptions=assume,
            )
        return planner_prompts(
            state.query,
            limit,
            background,
            guidance,
            local_sample,
            offered,
            clarified=clarified,
            assumptions=assume,
        )

    system, user = build(1.0)
    output = await ask_json(
        fitting.json_ask("planning", LEGACY_MAX_TOKENS, build),
        system,
        user,
        PlannerOutput,
        state=state,
        agent=AgentRole.PLANNER,
    )
    if output is not None:
        note_clarification(state, output, assume)
    if require_decomposition and output is not None and output.decomposition is not None:
        output.sub_queries = []  # none asked for: each sub-question's researcher plans its own
        return output
    if output is None or not output.sub_queries:
        state.record_fallback(
            AgentRole.PLANNER,
            "The planner's answer could not be read; the question was searched as is.",
        )
        return PlannerOutput(
            research_brief=output.research_brief if output else "",
            sub_queries=[PlannedSubQuery(query=_as_search_query(state.query), priority=1)],
            assessment=output.assessment if output else None,
            decomposition=output.decomposition if output else None,
        )
    if not local_sample:  # a target the planner was not asked for is not followed
        output.allocation_strategy = ""
        for sub_query in output.sub_queries:
            sub_query.target = SearchTarget.BOTH
    named = named_sources(local_sample) | {"local"}
    for sub_query in output.sub_queries:  # nor a kind of sources the research does not search
        sub_query.source_types = [kind for kind in sub_query.source_types if kind in offered]
        # nor a source of the user's it does not have, nor a source for the web
        aimed = sub_query.target is not SearchTarget.WEB and len(named) > 1
        sub_query.sources = [name for name in sub_query.sources if aimed and name in named]
    seen: set[str] = set()
    unique = []
    for sub_query in sorted(output.sub_queries, key=lambda sq: sq.priority):
        key = " ".join(sub_query.query.lower().split())
        if len(key) >= MIN_QUERY_CHARS and key not in seen:
            seen.add(key)
            unique.append(sub_query)
    output.sub_queries = unique[:limit] or [PlannedSubQuery(query=_as_search_query(state.query))]
    return output


def wants_assumptions(state: ResearchState) -> bool:
    """Whether the planner is to name its reading of an ambiguous question: the research's
    own planning (not a sub-question's), clarification on, and nobody asked before."""
    return (
        state.branch is None
        and state.clarification is None
        and state.options.clarify != Clarify.OFF
    )


def note_clarification(state: ResearchState, output: PlannerOutput, assumed: bool) -> None:
    """The brief says what was asked and answered; the assumptions the planner made, when
    nobody could be asked, are kept for the status and the report."""
    if assumed and output.assumptions:
        state.clarification = Clarification(outcome="not_asked", assumptions=output.assumptions)
    output.research_brief = with_clarification(state, output.research_brief)


def with_clarification(state: ResearchState, brief: str) -> str:
    """``brief`` followed by what was asked before researching and answered, or assumed."""
    told = state.clarification.as_brief() if state.clarification else ""
    if not told or told in brief:
        return brief
    return f"{brief}\n\nBefore researching:\n{told}".strip()


def offered_source_types(state: ResearchState) -> list[str]:
    """The kinds of outside sources the planner chooses among for each sub-query: those the
    research asked for, when it asked for two or more (the user's documents are aimed at with
    ``target``)."""
    outside = [kind for kind in state.options.search.source_types if kind != "local"]
    return outside if len(outside) >= 2 else []


def _as_search_query(question: str) -> str:
    """The question shortened to a length search engines accept."""
    return " ".join(question.split())[:400]
