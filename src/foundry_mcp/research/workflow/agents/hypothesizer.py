"""The hypothesizer: the three agents of hypotheses mode (seed 004).

* :func:`propose_hypotheses` (the investigator, a ``planning`` call): 1 to
  ``max_hypotheses_per_task`` hypotheses, each with a confidence, a search strategy and an
  exploration priority, returned in exploration order;
* :func:`assess_hypothesis` (the evidence assessor, an ``analysis`` call): one hypothesis
  weighed against the findings so far: final confidence, verdict, evidence for and against;
* :func:`assess_coverage` (the coverage assessor, an ``analysis`` call): after a hypothesis,
  whether to stop exploring and which hypothesis to explore next.

Model output is read leniently (see :mod:`.hypothesis_answers`); what cannot be read at all,
even when asked again, falls back to a safe default, recorded as a fallback: the question
itself as the only hypothesis, an inconclusive verdict, or "continue exploring".
"""

from __future__ import annotations

import math

from foundry_mcp.research.llm.answers import ask_json
from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    AgentRole,
    CoverageAssessment,
    Finding,
    Hypothesis,
    HypothesisVerdict,
    ResearchState,
    SearchStrategy,
)
from foundry_mcp.research.prompts.hypotheses import (
    assessor_prompts,
    coverage_prompts,
    investigator_prompts,
)
from foundry_mcp.research.prompts.synthesizer import render_finding
from foundry_mcp.research.workflow.agents.hypothesis_answers import (
    AssessmentAnswer,
    CoverageAnswer,
    GenerationAnswer,
    finding_refs,
    hypotheses_from,
    hypothesis_ref,
)
from foundry_mcp.research.workflow.agents.planner import with_clarification
from foundry_mcp.research.workflow.fitting.fitter import Fitting

QUERIES_PER_HYPOTHESIS = 3
MAX_ASSESSED_FINDINGS = 60  # the most findings one assessment weighs (its own come first)
LEGACY_MAX_TOKENS = 2048

Numbered = list[tuple[int, Hypothesis]]  # hypotheses with their H-number (exploration order)


def queries_per_hypothesis(state: ResearchState) -> int:
    """How many searches one hypothesis may plan."""
    return max(1, min(QUERIES_PER_HYPOTHESIS, state.limits.max_sub_queries))


async def propose_hypotheses(
    llm: ResearchLLM, state: ResearchState, guidance: str | None, *, local_search: bool
) -> tuple[str, list[Hypothesis]]:
    """The research brief and the hypotheses to explore, in exploration order.

    ``local_search``: the user's documents can be searched, so a strategy may name them.
    """
    limit = state.options.mode.max_hypotheses_per_task
    fitting = await Fitting.open(llm, state, "planning")

    def build(scale: float) -> tuple[str, str]:
        """The prompts; the requester's context kept within ``scale`` of the planning budget."""
        background = state.system_prompt
        if background and fitting.enabled:
            budget = max(1, int(fitting.phase_budget("planning") * scale))
            background = fitting.fit_text(background, budget, state.query)
        return investigator_prompts(
            state.query,
            limit,
            queries_per_hypothesis(state),
            local_search=local_search,
            background=background,
            brief=with_clarification(state, state.research_brief or ""),
            guidance=guidance,
        )

    system, user = build(1.0)
    answer = await ask_json(
        fitting.json_ask("planning", LEGACY_MAX_TOKENS, build),
        system,
        user,
        GenerationAnswer,
        state=state,
        agent=AgentRole.PLANNER,
    )
    hypotheses = hypotheses_from(answer, limit) if answer is not None else []
    if hypotheses:
        assert answer is not None
        return with_clarification(state, answer.research_brief.strip()), hypotheses
    state.record_fallback(
        AgentRole.PLANNER,
        "The investigator's hypotheses could not be read; the question itself is explored as "
        "the only hypothesis.",
    )
    question = " ".join(state.query.split())
    only = Hypothesis(
        statement=question,
        search_strategy=SearchStrategy(queries=[question[:400]]),
        priority_reasoning="The only hypothesis: the question as asked.",
    )
    return (answer.research_brief.strip() if answer else ""), [only]


def findings_to_weigh(state: ResearchState, hypothesis: Hypothesis) -> list[Finding]:
    """The findings an assessment weighs: those from the hypothesis's own searches first."""
    own_queries = {sq.id for sq in state.sub_queries if sq.hypothesis_id == hypothesis.id}
    own_sources = {s.id for s in state.sources if s.sub_query_id in own_queries}
    own = [f for f in state.findings if own_sources.intersection(f.source_ids)]
    others = [f for f in state.findings if not own_sources.intersection(f.source_ids)]
    return (own + others)[:MAX_ASSESSED_FINDINGS]


async def assess_hypothesis(
    llm: ResearchLLM,
    state: ResearchState,
    number: int,
    hypothesis: Hypothesis,
    guidance: str | None,
) -> None:
    """Weigh hypothesis H``number`` against the findings; its verdict and evidence are set."""
    findings = findings_to_weigh(state, hypothesis)
    if not findings:
        _conclude(
            hypothesis,
            HypothesisVerdict.INCONCLUSIVE,
            hypothesis.confidence,
            "No finding was gathered to weigh it against.",
        )
        return
    fitting = await Fitting.open(llm, state, "analysis")
    offered: list[Finding] = []

    def build(scale: float) -> tuple[str, str]:
        """The prompts with the first ``scale`` of the findings (its own come first)."""
        offered[:] = findings[: max(1, math.floor(len(findings) * scale))]
        rendered = [render_finding(n, f) for n, f in enumerate(offered, start=1)]
        return assessor_prompts(state.query, number, hypothesis, rendered, guidance)

    system, user = build(1.0)
    answer = await ask_json(
        fitting.json_ask("analysis", LEGACY_MAX_TOKENS, build),
        system,
        user,
        AssessmentAnswer,
        state=state,
        agent=AgentRole.ANALYZER,
        fallback=f"The assessment of hypothesis H{number} could not be read; it is left "
        "inconclusive.",
    )
    if answer is None:
        _conclude(
            hypothesis,
            HypothesisVerdict.INCONCLUSIVE,
            hypothesis.confidence,
            "The evidence assessment could not be read.",
        )
        return
    supporting = finding_refs(answer.evidence_for, offered)
    undermining = finding_refs(answer.evidence_against, offered)
    both = set(supporting) & set(undermining)  # contradictory: counted on neither side
    _conclude(
        hypothesis,
        answer.verdict,
        hypothesis.confidence if answer.final_confidence is None else answer.final_confidence,
        answer.reasoning.strip(),
    )
    hypothesis.evidence_for = [fid for fid in supporting if fid not in both]
    hypothesis.evidence_against = [fid for fid in undermining if fid not in both]
    hypothesis.entities_found = answer.entities_found


def _conclude(
    hypothesis: Hypothesis, verdict: HypothesisVerdict, confidence: int, reasoning: str
) -> None:
    hypothesis.verdict = verdict
    hypothesis.final_confidence = confidence
    hypothesis.assessment = reasoning
    hypothesis.evidence_for, hypothesis.evidence_against = [], []
    hypothesis.entities_found = []


async def assess_coverage(
    llm: ResearchLLM,
    state: ResearchState,
    explored: Numbered,
    remaining: Numbered,
    guidance: str | None,
) -> CoverageAssessment:
    """Whether the question is covered after the last of ``explored`` (never on an unreadable
    answer: exploration then continues in priority order)."""
    after = explored[-1][1].id
    fitting = await Fitting.open(llm, state, "analysis")
    system, user = coverage_prompts(
        state.query,
        explored,
        remaining,
        finding_count=len(state.findings),
        source_count=len(state.sources),
        minutes_used=state.elapsed_seconds() / 60,
        minutes_limit=state.limits.task_timeout / 60,
        guidance=guidance,
    )
    answer = await ask_json(
        fitting.json_ask("analysis", LEGACY_MAX_TOKENS),
        system,
        user,
        CoverageAnswer,
        state=state,
        agent=AgentRole.SUPERVISOR,
        fallback="The coverage assessment could not be read; exploration continues in priority "
        "order.",
    )
    if answer is None:
        return CoverageAssessment(
            after=after, reasoning="The coverage assessment could not be read; continuing."
        )
    following = None if answer.sufficient else hypothesis_ref(answer.recommended_next, remaining)
    return CoverageAssessment(
        after=after,
        sufficient=answer.sufficient,
        reasoning=answer.reasoning.strip(),
        recommended_next=following,
    )
