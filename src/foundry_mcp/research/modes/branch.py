"""One sub-question's researcher in hierarchical mode (seeds 000/001).

Each sub-question is researched by the simple loop on a state of its own (plan, gather,
analyse, answer, refine), with:

* an **iteration budget**: its priority-weighted share of the research's budget
  (``max_iterations`` per sub-question on average), clamped to
  ``[sub_question_min_iterations, sub_question_max_iterations]``;
* the seeds' **stopping rule**: never before its minimum; stop at its budget; keep going while
  critical gaps remain; otherwise stop once it has 3 findings, or 2 with an average confidence
  of 0.7 or more;
* its own **answer** (direct answer, evidence, citations, caveats, confidence) instead of a
  report.

It shares the research's LLMs and token and cost budget (``ResearchLLM.for_branch``), its source
pool (one id and one read per page), and its audit trail (events tagged with the branch id). Its
state is saved after every unit of work beside the research's, and the research's summary of the
sub-question is updated with it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from statistics import mean
from typing import Any

from foundry_mcp.research.llm.calls import ResearchLLM
from foundry_mcp.research.models import (
    BranchStatus,
    Confidence,
    ModeOptions,
    Phase,
    ResearchMode,
    ResearchState,
    Severity,
    SourceQuality,
    SubQuestion,
)
from foundry_mcp.research.modes.kit import Checkpoint, ResearchKit
from foundry_mcp.research.modes.rounds import IterationCall, StoppingRule
from foundry_mcp.research.modes.simple import SimplePlaybook, Writer
from foundry_mcp.research.workflow.agents.answerer import answer_sub_question
from foundry_mcp.research.workflow.reading.budget import branch_budget
from foundry_mcp.research.workflow.reading.readings import Readings
from foundry_mcp.research.workflow.supervisor import Supervisor

log = logging.getLogger(__name__)

SUFFICIENT_FINDINGS = 3
CONFIDENT_FINDINGS = 2
CONFIDENT_AVERAGE = 0.7
CONFIDENCE_VALUES: dict[Confidence, float] = {
    Confidence.CONFIRMED: 1.0,
    Confidence.HIGH: 0.9,
    Confidence.MEDIUM: 0.7,
    Confidence.LOW: 0.4,
    Confidence.SPECULATION: 0.2,
}


def allocate_budgets(
    sub_questions: list[SubQuestion], max_iterations: int, modes: ModeOptions
) -> None:
    """Give each sub-question its share of the research's iteration budget (see the module)."""
    if not sub_questions:
        return
    total = max_iterations * len(sub_questions)
    weights = sum(sq.priority for sq in sub_questions)
    for sq in sub_questions:
        share = total * sq.priority / weights if weights > 0 else total / len(sub_questions)
        sq.iteration_budget = min(
            modes.sub_question_max_iterations,
            max(modes.sub_question_min_iterations, round(share)),
        )


def sub_question_rule(minimum: int) -> StoppingRule:
    """Seed 000's stopping rule for a researcher whose budget is its ``max_iterations``."""

    def decide(state: ResearchState) -> IterationCall:
        used, budget = state.iteration, state.limits.max_iterations
        findings = state.findings
        average = (
            mean(CONFIDENCE_VALUES.get(f.confidence, 0.5) for f in findings) if findings else 0.0
        )
        # Severity is the refiner's judgement of a gap (from an earlier round's refinement).
        critical = [g for g in state.unaddressed_gaps() if g.severity is Severity.CRITICAL]
        reasons: list[str] = []
        if len(findings) >= SUFFICIENT_FINDINGS:
            reasons.append("sufficient_findings")
        if len(findings) >= CONFIDENT_FINDINGS and average >= CONFIDENT_AVERAGE:
            reasons.append("high_quality_findings")
        if used >= budget:
            iterate, why = False, f"its iteration budget of {budget} is used"
            reasons.append("iteration_budget_used")
        elif used < minimum:
            iterate, why = True, f"its minimum of {minimum} iteration(s) is not reached"
            reasons = ["min_iterations_not_met"]
        elif critical:
            iterate, why = True, f"{len(critical)} critical gap(s) remain"
            reasons.append("critical_gaps_remain")
        elif reasons:
            iterate, why = False, "its findings suffice"
        elif state.unaddressed_gaps():
            iterate, why = True, "its findings are still thin and gaps remain"
        else:
            iterate, why = False, "no gap remains"
        return IterationCall(
            iterate,
            f"Sub-question {'continues' if iterate else 'is answered'}: {why} "
            f"({len(findings)} findings, average confidence {average:.2f}, iteration "
            f"{used}/{budget}).",
            {"findings": len(findings), "average_confidence": round(average, 2), "iteration": used},
            {"stop_reasons": reasons},
        )

    return decide


def branch_state(research: ResearchState, sub_question: SubQuestion) -> ResearchState:
    """A fresh state for the researcher of ``sub_question``."""
    options = research.options.model_copy(deep=True)
    options.verify_citations = False  # the final report is verified as a whole
    # The research's supervisor judges the research; a sub-question's researcher is steered by
    # its own sufficiency rule instead (a judgement per branch phase would add a call each).
    options.enable_reflection = False
    limits = research.limits.model_copy(
        update={
            "max_iterations": sub_question.iteration_budget,
            "max_sub_queries": min(
                research.limits.max_sub_queries, research.options.mode.sub_question_max_queries
            ),
            "reading_budget": branch_budget(research),
        }
    )
    context = f"This sub-question is part of a larger research question: {research.query}"
    return ResearchState(
        id=research.id,
        branch=sub_question.id,
        parent_query=research.query,
        query=sub_question.question,
        system_prompt="\n\n".join(p for p in (research.system_prompt, context) if p),
        mode=ResearchMode.SIMPLE,
        limits=limits,
        options=options,
        llm_provider=research.llm_provider,
        llm_model=research.llm_model,
        search_providers=research.search_providers,
        status=research.status,
        started_at=research.started_at,
    )


async def research_branch(
    research: ResearchState, sub_question: SubQuestion, branch: ResearchState, kit: ResearchKit
) -> None:
    """Research one sub-question to its answer; saves as it goes (resumes where it stopped)."""
    assert kit.branches is not None
    branches = kit.branches
    llm = kit.llm.for_branch(branch)

    async def checkpoint() -> None:
        summarize_branch(sub_question, branch)
        branches.save_soon(branch)
        await kit.checkpoint()
        kit.calls.moved()

    with _reporting(research, sub_question, branch):
        sub_question.status = BranchStatus.RESEARCHING
        sub_question.error = None
        await checkpoint()
        playbook = _playbook(research, branch, _own_kit(kit, llm, checkpoint))
        await Supervisor(branch, llm, playbook, checkpoint, kit.hooks).run()
    sub_question.status = BranchStatus.COMPLETED
    await checkpoint()


async def plan_ahead(
    research: ResearchState, sub_question: SubQuestion, kit: ResearchKit
) -> ResearchState | None:
    """A fresh researcher's state for ``sub_question`` with its first plan made, while the
    decomposition is still judged: nothing is saved, so a decomposition done again drops it.
    None when the planning failed (the researcher plans again, and reports what fails)."""
    branch = branch_state(research, sub_question)
    llm = kit.llm.for_branch(branch)

    async def nothing_saved() -> None:
        return None

    playbook = _playbook(research, branch, _own_kit(kit, llm, nothing_saved))
    with _reporting(research, sub_question, branch):
        try:
            await playbook.execute(Phase.PLANNING, None)
        except Exception:
            log.warning("planning sub-question %s ahead failed", sub_question.id, exc_info=True)
            return None
    return branch


@contextmanager
def _reporting(
    research: ResearchState, sub_question: SubQuestion, branch: ResearchState
) -> Iterator[None]:
    """The researcher's events reach the research's, tagged with its sub-question."""
    branch.attach(lambda kind, data: research.emit(kind, {**data, "branch": sub_question.id}))
    try:
        yield
    finally:
        branch.attach(None)


def _own_kit(kit: ResearchKit, llm: ResearchLLM, checkpoint: Checkpoint) -> ResearchKit:
    """The research's kit for one researcher: its LLMs and saving, the research's pages, pool
    and readings (a researcher keeps no researchers of its own)."""
    return replace(kit, llm=llm, checkpoint=checkpoint, branches=None)


def _playbook(research: ResearchState, branch: ResearchState, kit: ResearchKit) -> SimplePlaybook:
    return SimplePlaybook(
        branch,
        kit,
        writer=_answer_with_filed(kit.readings),
        stopping=sub_question_rule(research.options.mode.sub_question_min_iterations),
    )


def _answer_with_filed(readings: Readings | None) -> Writer:
    """The sub-question's writer, handed first what other parts' readings filed for it."""

    async def write(llm: ResearchLLM, state: ResearchState, guidance: str | None) -> Any:
        if readings is not None:
            readings.receive(state)
        return await answer_sub_question(llm, state, guidance)

    return write


def summarize_branch(sub_question: SubQuestion, branch: ResearchState) -> None:
    """Copy what status shows of a researcher into the research's record of its sub-question."""
    sub_question.phase = branch.phase.value
    sub_question.iterations_used = branch.iteration
    sub_question.source_count = len(branch.sources)
    sub_question.finding_ids = [f.id for f in branch.findings]
    sub_question.synthesis = branch.answer
    decided = [d for d in branch.decisions if d.action == "decide_iteration" and d.outputs]
    if decided and decided[-1].outputs is not None:
        sub_question.stop_reasons = list(decided[-1].outputs.get("stop_reasons", []))
    sub_question.quality_score = _quality(branch)


def _quality(branch: ResearchState) -> float:
    """0-1: how well the answer rests on evidence (findings, their confidence, good sources)."""
    if not branch.findings:
        return 0.0
    confidence = mean(CONFIDENCE_VALUES.get(f.confidence, 0.5) for f in branch.findings)
    volume = min(1.0, len(branch.findings) / SUFFICIENT_FINDINGS)
    good = sum(1 for s in branch.sources if s.quality is SourceQuality.HIGH)
    sources = min(1.0, good / 2)
    return round(0.5 * confidence + 0.3 * volume + 0.2 * sources, 2)
