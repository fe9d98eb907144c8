"""Hypotheses mode's rules: which hypotheses are explored, with which searches, and the
report's "Hypothesis exploration" section (no model is asked; see :mod:`.hypotheses`), and the
small lookups and the decision record its playbook and :mod:`.investigation` share."""

from __future__ import annotations

import re
from typing import Any

from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    BranchStatus,
    Hypothesis,
    HypothesisMode,
    HypothesisVerdict,
    ModeOptions,
    ResearchState,
    SearchTarget,
    SubQuery,
    SubQueryStatus,
)
from foundry_mcp.research.workflow.agents.hypothesizer import Numbered, queries_per_hypothesis

SECTION_HEADING = "## Hypothesis exploration"
MIN_QUERY_CHARS = 3
MAX_QUERY_CHARS = 400
# A source naming the user's own material ("local documents", "internal wiki", "my files").
_LOCAL_SOURCE = re.compile(
    r"\b(local|internal|intranet|private|own|user'?s?|my|our)\b|^(documents?|files?)$"
)
_VERDICT_LABELS = {
    HypothesisVerdict.SUPPORTED: "Supported",
    HypothesisVerdict.PARTIALLY_SUPPORTED: "Partially supported",
    HypothesisVerdict.REFUTED: "Refuted",
    HypothesisVerdict.INCONCLUSIVE: "Inconclusive",
}


def select_for_exploration(hypotheses: list[Hypothesis], modes: ModeOptions) -> None:
    """Skip, with a reason, what the threshold and ``best_first`` leave out (in place).

    ``hypotheses`` are in exploration order. If the threshold would leave nothing, the first is
    explored anyway: a research must look at something.
    """
    threshold = modes.min_confidence_threshold
    below = [h for h in hypotheses if h.confidence < threshold]
    kept = hypotheses[0] if hypotheses and len(below) == len(hypotheses) else None
    for hypothesis in below:
        if hypothesis is kept:
            hypothesis.priority_reasoning = (
                f"{hypothesis.priority_reasoning} Explored although its confidence is below the "
                f"minimum of {threshold}: every hypothesis's is."
            ).strip()
        else:
            skip(
                hypothesis,
                f"Its confidence ({hypothesis.confidence}) is below the minimum of {threshold}.",
            )
    if modes.hypothesis_mode is HypothesisMode.BEST_FIRST:
        pending = [h for h in hypotheses if h.status is BranchStatus.PENDING]
        for hypothesis in pending[1:]:
            skip(hypothesis, "Best-first mode explores only the highest-priority hypothesis.")


def skip(hypothesis: Hypothesis, reason: str) -> None:
    hypothesis.status, hypothesis.skip_reason = BranchStatus.SKIPPED, reason


def proposal_decision(state: ResearchState) -> AgentDecision:
    """The planner's decision to record: the hypotheses proposed, and which are explored."""
    modes, hypotheses = state.options.mode, state.hypotheses
    skipped = sum(1 for h in hypotheses if h.status is BranchStatus.SKIPPED)
    return AgentDecision(
        agent=AgentRole.PLANNER,
        action="generate_hypotheses",
        rationale=f"{len(hypotheses)} hypothes{'is' if len(hypotheses) == 1 else 'es'} proposed; "
        f"{len(hypotheses) - skipped} to explore ({modes.hypothesis_mode.value}, "
        f"{modes.exploration_mode.value})" + (f", {skipped} skipped." if skipped else "."),
        inputs={
            "question": state.query[:300],
            "max_hypotheses": modes.max_hypotheses_per_task,
            "min_confidence_threshold": modes.min_confidence_threshold,
        },
        outputs={
            "hypotheses": [
                h.model_dump(
                    mode="json",
                    include={
                        "id",
                        "statement",
                        "confidence",
                        "exploration_priority",
                        "priority_reasoning",
                        "status",
                        "skip_reason",
                    },
                )
                for h in hypotheses
            ]
        },
    )


def search_target(sources: list[str]) -> SearchTarget:
    """Where a hypothesis's searches go: its sources name the user's documents, the web, both."""
    kinds = {
        SearchTarget.LOCAL if _LOCAL_SOURCE.search(s.strip().lower()) else SearchTarget.WEB
        for s in sources
        if s.strip()
    }
    return kinds.pop() if len(kinds) == 1 else SearchTarget.BOTH


def sub_queries_for(hypothesis: Hypothesis, state: ResearchState) -> list[SubQuery]:
    """The searches that explore ``hypothesis``: its strategy's queries, else its statement
    (and the statement with its signals); none the research has already searched."""
    strategy = hypothesis.search_strategy
    wanted = strategy.queries or [hypothesis.statement]
    if not strategy.queries and strategy.signals:
        wanted.append(f"{hypothesis.statement} {' '.join(strategy.signals[:3])}")
    known = {_query_key(sq.query) for sq in state.sub_queries}
    target = search_target(strategy.sources)
    planned: list[SubQuery] = []
    for query in wanted:
        text = " ".join(query.split())[:MAX_QUERY_CHARS]
        key = _query_key(text)
        if len(key) < MIN_QUERY_CHARS or key in known:
            continue
        known.add(key)
        planned.append(
            SubQuery(
                query=text,
                rationale=f"Explores the hypothesis: {hypothesis.statement[:200]}",
                priority=hypothesis.exploration_priority,
                iteration=state.iteration,
                hypothesis_id=hypothesis.id,
                target=target,
            )
        )
    return planned[: queries_per_hypothesis(state)]


def _query_key(query: str) -> str:
    return " ".join(query.lower().split())


def exploration_section(state: ResearchState) -> str:
    """The report's "Hypothesis exploration" section, with ``[src-...]`` citations."""
    modes = state.options.mode
    findings = {f.id: f for f in state.findings}
    explored = [h for h in state.hypotheses if h.status is BranchStatus.COMPLETED]
    lines = [
        SECTION_HEADING,
        "",
        f"{len(state.hypotheses)} hypothes{'is was' if len(state.hypotheses) == 1 else 'es were'}"
        f" proposed and {len(explored)} explored ({modes.hypothesis_mode.value} mode, "
        f"{modes.exploration_mode.value} exploration).",
    ]
    stop = next((c for c in state.coverage if c.sufficient), None)
    if stop is not None:
        after = number_of(state, stop.after)
        lines.append(f"Exploration stopped after H{after}: {_flat(stop.reasoning)}")

    def evidence(title: str, ids: list[str]) -> list[str]:
        items = [
            f"- {_flat(f.content).rstrip('.')} {''.join(f'[{sid}]' for sid in f.source_ids)}."
            for fid in ids
            if (f := findings.get(fid)) is not None
        ]
        return ["", f"{title}:", *(items or ["- None found."])]

    for number, hypothesis in enumerate(state.hypotheses, start=1):
        lines += ["", f"### H{number}: {_flat(hypothesis.statement)}", ""]
        if hypothesis.status is not BranchStatus.COMPLETED or hypothesis.verdict is None:
            reason = hypothesis.skip_reason or "Its exploration did not finish."
            lines.append(
                f"Not explored (initial confidence {hypothesis.confidence}): {_flat(reason)}"
            )
            continue
        lines.append(
            f"**Verdict:** {_VERDICT_LABELS[hypothesis.verdict]}. **Confidence:** "
            f"{hypothesis.confidence} → {hypothesis.final_confidence}."
        )
        if hypothesis.assessment:
            lines.append(_flat(hypothesis.assessment))
        lines += evidence("Evidence for", hypothesis.evidence_for)
        lines += evidence("Evidence against", hypothesis.evidence_against)
    return "\n".join(lines) + "\n"


def _flat(text: str) -> str:
    return " ".join(text.split())


def number_of(state: ResearchState, hypothesis_id: str) -> int:
    ids = [h.id for h in state.hypotheses]
    return ids.index(hypothesis_id) + 1 if hypothesis_id in ids else 0


def with_status(state: ResearchState, *statuses: BranchStatus) -> list[Hypothesis]:
    """The hypotheses in one of ``statuses``, in exploration order."""
    return [h for h in state.hypotheses if h.status in statuses]


def numbered(state: ResearchState, *statuses: BranchStatus) -> Numbered:
    """Those hypotheses with their numbers (H1, H2, ...: their place in the list)."""
    return [(n, h) for n, h in enumerate(state.hypotheses, start=1) if h.status in statuses]


def searches_of(state: ResearchState, hypothesis: Hypothesis) -> list[SubQuery]:
    """The searches planned to explore ``hypothesis``."""
    return [sq for sq in state.sub_queries if sq.hypothesis_id == hypothesis.id]


def all_failed(state: ResearchState, hypothesis: Hypothesis) -> bool:
    """Whether ``hypothesis`` had searches and every one of them failed."""
    searches = searches_of(state, hypothesis)
    return bool(searches) and all(sq.status is SubQueryStatus.FAILED for sq in searches)


def decide(
    state: ResearchState,
    agent: AgentRole,
    action: str,
    rationale: str,
    inputs: dict[str, Any],
    outputs: dict[str, Any],
) -> None:
    """Record a decision of hypotheses mode in the research's audit trail."""
    state.record(
        AgentDecision(
            agent=agent, action=action, rationale=rationale, inputs=inputs, outputs=outputs
        )
    )
