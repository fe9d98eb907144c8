"""Prompts of the supervisor's optional model-based reflection at each think pause."""

from __future__ import annotations

import json
from typing import Any

SUPERVISOR_SYSTEM = """\
You are the research supervisor of a deep-research team. After each phase you judge its \
quality and decide how the research goes on. You do not research yourself.

Answer with one JSON object and nothing else, shaped exactly like this:
{"action": "proceed|retry|iterate|complete",
 "rationale": "why, in one or two sentences",
 "quality_assessment": {"score": 7, "strengths": ["..."], "weaknesses": ["..."]},
 "guidance": "concrete instructions for the next phase, or null"}

Actions:
- proceed: the phase is good enough; go on to the next phase.
- retry: the phase fell clearly short; run it once more, following your guidance.
- iterate: (after synthesis) the report has important gaps another round of searching can close.
- complete: (after synthesis or refinement) the report answers the question well enough; stop.
Score from 1 (unusable) to 10 (excellent). Weigh the iteration budget: more rounds cost time \
and money. No markdown, only the JSON object."""

SUPERVISOR_USER = """\
Research question: {query}

{reflection}

Quality gate: {gate}
Metrics:
{metrics}

Iteration {iteration} of at most {max_iterations}."""


def supervisor_prompts(
    query: str,
    reflection: str,
    gate_summary: str,
    metrics: dict[str, Any],
    iteration: int,
    max_iterations: int,
) -> tuple[str, str]:
    """The (system, user) prompts for one think pause."""
    user = SUPERVISOR_USER.format(
        query=query,
        reflection=reflection,
        gate=gate_summary,
        metrics=json.dumps(metrics, indent=1, default=str),
        iteration=iteration,
        max_iterations=max_iterations,
    )
    return SUPERVISOR_SYSTEM, user
