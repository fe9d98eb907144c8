"""Follow-up questions on a completed research (``deep-research-ask``), answered from its saved
sources.

The research's page text and findings answer the question, citing its sources by their numbers
in the report, with the quotes behind each cited sentence; nothing is searched (the answerer:
:mod:`foundry_mcp.research.workflow.agents.follow_up`). The answer's sentences are checked on a
scratch copy of the research, so its own claim checks stay as they are.

The follow-up is kept with the research (``ResearchState.follow_ups``, in its exports) and the
research keeps its status: it is saved without taking the research's lease, fenced as a restore
is, so a research resumed meanwhile is never overwritten. Its LLM calls are added to the
research's usage under the phase ``follow_up``. A question the sources cannot answer is said to
be so; in a simple research it becomes an open gap, which a resume with a larger
``max_iterations`` researches (``next_action`` says exactly what to call).
"""

from __future__ import annotations

from typing import Any

from foundry_mcp.errors import InputError, InvalidStateError
from foundry_mcp.research.llm.calls import CallLog
from foundry_mcp.research.models import (
    FollowUp,
    Gap,
    LLMCallRecord,
    ResearchMode,
    ResearchState,
    Status,
    UsageTotals,
)
from foundry_mcp.research.runs.runner import ResearchRunner
from foundry_mcp.research.service.ownership import FencedEdit, OwnershipWatch
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.records import validate_research_id

FOLLOW_UP_PHASE = "follow_up"  # the phase its calls are counted under in the research's usage
MAX_QUESTION_CHARS = 4_000


class FollowUps:
    """Answers follow-up questions; see the module."""

    def __init__(self, io: AsyncStore, runner: ResearchRunner, watch: OwnershipWatch) -> None:
        self.io = io
        self.runner = runner
        self.watch = watch

    async def answer(self, research_id: Any, query: Any) -> dict[str, Any]:
        """Answer ``query`` about the completed research ``research_id`` and keep the answer."""
        research_id = validate_research_id(research_id)
        question = check_question(query)
        state = await self.watch.load_checked(research_id)
        check_completed(state)
        await self.io.read(lambda store: store.load_pages(state))
        scratch = state.model_copy(deep=True)  # checked and booked here, then thrown away
        before = scratch.llm_usage.total.calls
        llm = await self.runner.research_llm(scratch, CallLog(), journaled=False)
        # Here, not at the top: the agent brings in the research engine, which a process that
        # only reads research (a CLI command) never needs.
        from foundry_mcp.research.workflow.agents.follow_up import answer_follow_up

        follow_up = await answer_follow_up(llm, scratch, question)
        spent = new_calls(scratch, before)
        saved = await self.io.write(lambda store: _save(store, research_id, follow_up, spent))
        self.runner.event(
            research_id,
            "follow_up",
            {
                "follow_up_id": follow_up.id,
                "answerable": follow_up.answerable,
                "sources": len(follow_up.source_ids),
                "verdicts": follow_up.verdicts,
                "gap_id": follow_up.gap_id,
            },
            owned=False,
        )
        return ask_payload(saved, follow_up, spent)


def check_question(query: Any) -> str:
    """The follow-up question, stripped; ``InputError`` on ``query`` if missing, empty or long."""
    if not isinstance(query, str) or not query.strip():
        raise InputError(
            "query is required: the follow-up question to answer from the research's sources.",
            remediation="Pass the question as query='...', with the research_id it is about.",
            details={"field": "query"},
        )
    if len(query) > MAX_QUESTION_CHARS:
        raise InputError(
            f"query is {len(query):,} characters; a follow-up question is at most "
            f"{MAX_QUESTION_CHARS:,}.",
            remediation="Ask a shorter question, or start a new research for a long brief.",
            details={"field": "query"},
        )
    return query.strip()


def check_completed(state: ResearchState) -> None:
    """``InvalidStateError`` saying what to do, unless ``state`` is completed with a report."""
    status = state.status
    if status is Status.COMPLETED and state.report is not None:
        return
    if status.is_active:
        remediation = (
            "Wait for it to complete (action='deep-research-status' with wait=true), then ask "
            "again."
        )
    elif status is Status.WAITING:
        remediation = (
            "Its plan waits for approval: approve it with action='deep-research-resume' (or "
            "end it with action='deep-research-cancel'), and ask once it completes."
        )
    elif status is Status.COMPLETED:
        remediation = "It has no report to ask about: start a new research with the question."
    else:
        remediation = (
            "Resume it with action='deep-research-resume' and ask once it completes; what it "
            "found so far is at action='deep-research-report'."
        )
    raise InvalidStateError(
        f"Research {state.id} is {status.value}; follow-up questions are answered from the "
        "sources of a completed research.",
        remediation=remediation,
    )


def new_calls(scratch: ResearchState, before: int) -> list[LLMCallRecord]:
    """The calls booked on ``scratch`` since it had ``before`` calls, counted as the follow-up's."""
    made = scratch.llm_usage.total.calls - before
    recent = scratch.llm_usage.calls[-made:] if made > 0 else []
    return [r.model_copy(update={"phase": FOLLOW_UP_PHASE, "key": None}) for r in recent]


def _save(
    store: Store, research_id: str, follow_up: FollowUp, calls: list[LLMCallRecord]
) -> ResearchState:
    """Append ``follow_up`` (and the gap of an unanswerable one) and its usage to the research as
    saved now, fenced: only while nobody has taken it up meanwhile."""
    edit = FencedEdit.read(store, research_id)
    fresh = edit.state
    if fresh.status is not Status.COMPLETED:
        raise InvalidStateError(
            f"Research {research_id} was resumed while the question was answered; the answer "
            "was not kept.",
            remediation="Ask again once it completes (action='deep-research-status' with "
            "wait=true says when).",
        )
    if not follow_up.answerable and fresh.mode is ResearchMode.SIMPLE:
        follow_up.gap_id = open_gap(fresh, follow_up.question)
    fresh.follow_ups.append(follow_up)
    for record in calls:
        fresh.llm_usage.add(record)
    if not edit.save():
        raise InvalidStateError(
            f"Research {research_id} was resumed by another server meanwhile; the answer was "
            "not kept.",
            remediation="Ask again once it completes (action='deep-research-status' says when).",
        )
    return fresh


def open_gap(state: ResearchState, question: str) -> str:
    """The id of the open gap that carries ``question`` into a further round, added unless an
    earlier follow-up left it open."""
    for gap in state.unaddressed_gaps():
        if gap.description == question:
            return gap.id
    gap = Gap(
        description=question,
        suggested_queries=[question[:300]],
        priority=1,
        iteration=state.iteration,
    )
    state.gaps.append(gap)
    return gap.id


def next_action(state: ResearchState, follow_up: FollowUp) -> str:
    """What to call to research a question the saved sources do not answer."""
    if follow_up.gap_id is not None:
        return (
            "The saved sources do not answer it; it is now an open gap of the research. To "
            "research it, continue the research: action='deep-research-resume', "
            f"research_id='{state.id}', with max_iterations={state.iteration + 1}; then read "
            "the new report with action='deep-research-report', or ask again."
        )
    return (
        f"The saved sources do not answer it, and a {state.mode.value} research cannot be "
        "continued with more iterations: start a new research with the question as its query "
        "(action='deep-research')."
    )


def ask_payload(
    state: ResearchState, follow_up: FollowUp, calls: list[LLMCallRecord]
) -> dict[str, Any]:
    """What ``deep-research-ask`` returns (``AskResult``)."""
    from foundry_mcp.research.export.document import source_numbers  # its models: for asks only

    numbers = source_numbers(state)
    in_report = state.citation_numbers()
    by_id = state.source_by_id()
    usage = UsageTotals()
    for record in calls:
        usage.add(record)
    payload: dict[str, Any] = {
        "research_id": state.id,
        "status": state.status.value,
        "follow_up_id": follow_up.id,
        "question": follow_up.question,
        "answer": follow_up.answer,
        "answerable": follow_up.answerable,
        "reason": follow_up.reason,
        "sources": [
            {
                "number": numbers[sid],
                "source_id": sid,
                "title": by_id[sid].title,
                "url": by_id[sid].url,
                "in_report": sid in in_report,
            }
            for sid in follow_up.source_ids
            if sid in by_id
        ],
        "quotes": [quote.model_dump() for quote in follow_up.quotes],
        "verdicts": follow_up.verdicts,
        "follow_ups": len(state.follow_ups),
        "usage": {**usage.model_dump(), "cost_usd": round(usage.cost_usd, 6)},
    }
    if not follow_up.answerable:
        payload["next_action"] = next_action(state, follow_up)
        if follow_up.gap_id is not None:
            payload["gap_id"] = follow_up.gap_id
    return payload
