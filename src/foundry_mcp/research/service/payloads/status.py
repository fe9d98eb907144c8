"""The payloads the service returns about a research: status, decision log, sources."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from foundry_mcp.context.budget import TokenBudget
from foundry_mcp.context.fidelity.bookkeeping import low_fidelity_warning
from foundry_mcp.context.levels import LOW_FIDELITY, ContentLevel, fidelity_band
from foundry_mcp.context.tokens import estimate_tokens
from foundry_mcp.research.models import (
    PHASE_ORDER,
    BranchStatus,
    ResearchState,
    Status,
    UsageTotals,
    utcnow,
)
from foundry_mcp.research.service.asking.conversation import (
    assumptions_hint,
    conversation_status,
    waiting_hint,
)

RECENT_DECISIONS = 5
STATUS_DROPPED_IDS = 10
REPORT_ITEMS = 100  # fidelity records in the report response; status and events hold the rest
STALE_AFTER_SECONDS = 180.0
KEY_DECISIONS = {
    "choose_mode",
    "decompose",
    "research_sub_questions",
    "allocate_sources",
    "evaluate_sufficiency",
    "generate_hypotheses",
    "explore_hypotheses",
    "assess_coverage",
    "decide_iteration",
    "plan_next_iteration",
    "assess_gaps",
    "hook_failed",
    "retry_phase",
    "fallback",
    "provider_fallback",
    "resume",
}


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_payload(
    state: ResearchState,
    *,
    cancel_requested: bool = False,
    last_event_at: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Everything ``deep-research-status`` says about a research."""
    now = now or utcnow()
    status = state.status
    if cancel_requested and status is Status.RUNNING:
        status = Status.CANCELLING  # asked to stop; the owning process has not yet
    last_activity = max(state.updated_at.isoformat(), last_event_at or "")
    idle = (now - datetime.fromisoformat(last_activity)).total_seconds()
    stale = status.is_active and idle > STALE_AFTER_SECONDS
    completed = len(state.completed_sub_queries())
    sources, findings = _totals(state)
    return {
        "research_id": state.id,
        "query": shorten(state.query, 200),
        "status": status.value,
        "phase": state.phase.value,
        "mode": state.mode.value,
        "iteration": state.iteration,
        "max_iterations": state.limits.max_iterations,
        "progress": {
            "phase_index": PHASE_ORDER.index(state.phase) + 1,
            "phases": len(PHASE_ORDER),
            "sub_queries_done": completed,
            "sub_queries_total": len(state.sub_queries),
            "sources": sources,
            "findings": findings,
            "gaps": len(state.gaps),
            "gaps_unaddressed": len(state.unaddressed_gaps()),
        },
        "elapsed_s": round(state.elapsed_seconds(now), 2),
        "last_activity_at": last_activity,
        "stale": stale,
        "next_action": next_action(state, status, stale),
        "usage": usage_payload(state),
        "token_budget": token_budget_payload(state),
        "search_calls": state.search_calls,
        "provider": f"{state.llm_provider}:{state.llm_model}",
        "language": state.options.language,
        # Set when no configuration named the LLM and one was found on this machine.
        "provider_choice": state.metadata.get("provider_choice"),
        "report_available": state.report is not None,
        "error": state.error,
        "error_code": state.error_code,
        "warnings": state.warnings,
        "recent_decisions": [
            {
                "agent": d.agent.value,
                "action": d.action,
                "rationale": shorten(d.rationale, 300),
                "timestamp": d.timestamp.isoformat(),
            }
            for d in state.decisions[-RECENT_DECISIONS:]
        ],
        "created_at": state.created_at.isoformat(),
        "updated_at": state.updated_at.isoformat(),
        "tree": research_tree(state),
        "fidelity": fidelity_block(state),
        **({"bounds": state.metadata["bounds"]} if "bounds" in state.metadata else {}),
        **conversation_status(state),
    }


def _totals(state: ResearchState) -> tuple[int, int]:
    """Sources and findings so far, the sub-questions' researchers included while they run."""
    if state.sub_questions and not state.findings:
        return (
            sum(sq.source_count for sq in state.sub_questions),
            sum(len(sq.finding_ids) for sq in state.sub_questions),
        )
    return len(state.sources), len(state.findings)


def research_tree(state: ResearchState) -> dict[str, Any] | None:
    """The research's parts in brief: its sub-questions or hypotheses (None in simple mode)."""
    if not state.sub_questions and not state.hypotheses:
        return None
    tree: dict[str, Any] = {"mode": state.mode.value}
    if state.sub_questions:
        tree["strategy"] = state.decomposition_strategy
        tree["sub_questions"] = [
            {
                "id": sq.id,
                "question": shorten(sq.question, 120),
                "priority": sq.priority,
                "status": sq.status.value,
                "phase": sq.phase,
                "iteration": sq.iterations_used,
                "max_iterations": sq.iteration_budget,
                "sources": sq.source_count,
                "findings": len(sq.finding_ids),
                "confidence": sq.synthesis.confidence.value if sq.synthesis else None,
                "quality": sq.quality_score,
                **({"error": shorten(sq.error, 300)} if sq.error else {}),
            }
            for sq in state.sub_questions
        ]
    if state.hypotheses:
        tree["hypotheses"] = [
            {
                "id": h.id,
                "statement": shorten(h.statement, 120),
                "priority": h.exploration_priority,
                "status": h.status.value,
                "confidence": h.confidence,
                "final_confidence": h.final_confidence,
                "verdict": h.verdict.value if h.verdict else None,
                "evidence_for": len(h.evidence_for),
                "evidence_against": len(h.evidence_against),
                "skip_reason": shorten(h.skip_reason, 200) if h.skip_reason else None,
            }
            for h in state.hypotheses
        ]
    return tree


def next_action(state: ResearchState, status: Status, stale: bool) -> str:
    """A one-line hint for the caller: what to do now."""
    rid = state.id
    if status is Status.COMPLETED:
        stopped = sum(1 for sq in state.sub_questions if sq.status is BranchStatus.FAILED)
        again = (
            f" {stopped} sub-question(s) were stopped before they were answered (see tree): "
            f"action='deep-research-resume', research_id='{rid}' researches them again."
            if stopped
            else ""
        )
        return (
            f"Read the report: action='deep-research-report', research_id='{rid}'."
            + again
            + assumptions_hint(state)
        )
    if status in (Status.QUEUED, Status.RUNNING):
        if stale:
            return (
                "Nothing has moved for a while; keep waiting, or cancel and resume it with "
                "action='deep-research-resume'."
            )
        return (
            f"Wait: action='deep-research-status', research_id='{rid}', wait=true "
            "(returns when the phase changes)." + assumptions_hint(state)
        )
    if status is Status.CANCELLING:
        return "Stopping; call status again in a moment."
    if status is Status.WAITING:
        return waiting_hint(state)
    hint = f"Resume it: action='deep-research-resume', research_id='{rid}'"
    if state.report is not None:
        hint += ", or read the partial report with action='deep-research-report'"
    return hint + "."


def decision_log(state: ResearchState) -> dict[str, Any]:
    """The supervisor's decisions in brief: counts per action and the ones that changed course."""
    counts: dict[str, int] = {}
    for decision in state.decisions:
        counts[decision.action] = counts.get(decision.action, 0) + 1
    key = [
        {
            "agent": d.agent.value,
            "action": d.action,
            "rationale": shorten(d.rationale, 240),
            "iteration": d.inputs.get("iteration"),
        }
        for d in state.decisions
        if d.action in KEY_DECISIONS
    ]
    return {"total": len(state.decisions), "by_action": counts, "key_decisions": key[-20:]}


def cited_sources(state: ResearchState) -> list[dict[str, Any]]:
    """The report's numbered sources, in order."""
    by_id = state.source_by_id()
    return [
        {"number": n, "source_id": sid, "title": by_id[sid].title, "url": by_id[sid].url}
        for sid, n in state.citation_numbers().items()
        if sid in by_id
    ]


def all_sources(state: ResearchState) -> dict[str, Any]:
    """Every source the research gathered: the cited ones by number, then the rest as found."""
    numbers = state.citation_numbers()
    ordered = sorted(state.sources, key=lambda s: (s.id not in numbers, numbers.get(s.id, 0)))
    return {
        "research_id": state.id,
        "status": state.status.value,
        "total": len(ordered),
        "cited": sum(1 for s in ordered if s.id in numbers),
        "sources": [
            {
                "number": numbers.get(s.id),
                "source_id": s.id,
                "title": s.title,
                "url": s.url,
                "provider": s.provider,
                "quality": s.quality.value,
                "cited": s.id in numbers,
            }
            for s in ordered
        ],
    }


def token_budget_payload(state: ResearchState) -> dict[str, Any]:
    """The token figures in effect for the research's own model (see context/budget.py)."""
    options = state.options.token_budget
    budget = TokenBudget.from_options(options, state.llm_model, state.llm_provider)
    return {
        "enabled": options.enabled,
        "model": f"{state.llm_provider}:{state.llm_model}",
        "limits_source": options.limits_source,
        **budget.describe(),
    }


def usage_totals(item: UsageTotals) -> dict[str, Any]:
    """One total of LLM usage: tokens in and out, calls, estimated cost, calls not priced."""
    return {
        "input_tokens": item.input_tokens,
        "output_tokens": item.output_tokens,
        "calls": item.calls,
        "cost_usd": round(item.cost_usd, 6),
        "unpriced_calls": item.unpriced_calls,
    }


def usage_payload(state: ResearchState) -> dict[str, Any]:
    """Tokens and estimated cost of the research's LLM calls, in total, by phase and provider.

    Costs are estimates from list prices; calls to models without a known price are counted in
    ``unpriced_calls`` and add nothing to ``cost_usd``.
    """
    usage = state.llm_usage
    return {
        "cost_is_estimate": True,
        "max_cost_usd": usage.max_cost_usd,
        "cost_ceiling_reached": usage.cost_ceiling_reached,
        "total": usage_totals(usage.total),
        "by_phase": {phase: usage_totals(item) for phase, item in usage.by_phase.items()},
        "by_provider": {name: usage_totals(item) for name, item in usage.by_provider.items()},
        "by_model": {name: usage_totals(item) for name, item in usage.by_model.items()},
        "models_by_phase": {phase: list(models) for phase, models in usage.models_by_phase.items()},
    }


def fidelity_block(state: ResearchState, *, include_items: bool = False) -> dict[str, Any]:
    """The ``fidelity`` block of ``deep-research-status`` (and, with items, of the report)."""
    options = state.options.token_budget
    metadata = state.content_allocation_metadata
    block: dict[str, Any] = {"enabled": options.enabled}
    if metadata is None or not metadata.items_total:
        block.update({"score": None, "band": None, "warning": None, "items_total": 0})
        return block
    block.update(
        {
            "score": metadata.fidelity,
            "band": fidelity_band(metadata.fidelity),
            "warning": (
                low_fidelity_warning(metadata.fidelity, state.content_fidelity.values())
                if metadata.fidelity < LOW_FIDELITY
                else None
            ),
            "tokens_used": metadata.tokens_used,
            "tokens_available": metadata.tokens_available,
            "utilization": metadata.utilization,
            "items_total": metadata.items_total,
            "items_degraded": metadata.items_degraded,
            "items_summarized": metadata.items_summarized,
            "items_dropped": metadata.items_dropped,
            "dropped_ids": state.dropped_content_ids[:STATUS_DROPPED_IDS],
            "archived": len(state.content_archive_hashes),
            "phases": {name: p.model_dump() for name, p in metadata.phases.items()},
        }
    )
    if include_items:
        degraded = {
            item_id: record.model_dump(mode="json", exclude={"content_hash"})
            for item_id, record in state.content_fidelity.items()
            if record.current_level is not ContentLevel.FULL
        }
        block["content_fidelity"] = dict(list(degraded.items())[:REPORT_ITEMS])
        block["content_fidelity_not_shown"] = max(0, len(degraded) - REPORT_ITEMS)
        block["content_archive_hashes"] = dict(
            list(state.content_archive_hashes.items())[:REPORT_ITEMS]
        )
    return block


def report_fidelity_block(state: ResearchState) -> dict[str, Any]:
    """The ``fidelity`` block of ``deep-research-report``: the status block plus the degraded
    items, the archive hashes and how the report compares with the client's budget."""
    block = fidelity_block(state, include_items=True)
    budget = TokenBudget.from_options(
        state.options.token_budget, state.llm_model, state.llm_provider
    )
    client_budget = budget.client_budget
    report_tokens = estimate_tokens(state.report or "")
    block["report_tokens"] = report_tokens
    block["client_budget_tokens"] = client_budget
    if report_tokens > client_budget:
        block["report_warning"] = (
            f"The report (~{report_tokens:,} tokens) is larger than the {client_budget:,} tokens "
            "left in your context after assistant_overhead; read it in pages with offset."
        )
    return block
