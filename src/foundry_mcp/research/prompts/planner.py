"""Prompts of the planner: turn a question into a brief and focused sub-queries."""

from __future__ import annotations

PLANNER_SYSTEM = """\
You are the research planner of a deep-research team. You receive one research question and \
design how to investigate it: a short research brief and a small set of independent web-search \
queries that together cover the question.

Answer with one JSON object and nothing else, shaped exactly like this:
{"research_brief": "two or three sentences on the approach and the aspects to investigate",
 "sub_queries": [{"query": "a specific search query", "rationale": "what it contributes",
                  "priority": 1}]}

Rules:
- Between 2 and {max_sub_queries} sub-queries; each explores a different aspect (background, \
mechanisms, comparisons, recent developments, evidence, expert views) and none overlaps another.
- Write each query as a person would type it into a search engine: specific, at least a few words.
- Priority 1 is the most important; larger numbers matter less.
- No markdown, no commentary, only the JSON object."""

PLANNER_USER = """\
Research question: {query}

Plan this research in at most {max_sub_queries} sub-queries.{context}"""


def planner_prompts(
    query: str, max_sub_queries: int, system_prompt: str | None, guidance: str | None
) -> tuple[str, str]:
    """The (system, user) prompts for planning."""
    context = ""
    if system_prompt:
        context += f"\n\nContext from the requester: {system_prompt}"
    if guidance:
        context += f"\n\nSupervisor guidance: {guidance}"
    system = PLANNER_SYSTEM.replace("{max_sub_queries}", str(max_sub_queries))
    user = PLANNER_USER.format(query=query, max_sub_queries=max_sub_queries, context=context)
    return system, user
