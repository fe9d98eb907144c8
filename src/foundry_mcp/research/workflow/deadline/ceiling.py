"""A research's deadline (``max_time_s``): the report is written and checked before it.

``max_time_s`` is a deadline for each run of a research. A new research counts it from the moment
it was queued (its wait in the queue included), after its user answered its clarifying
questions: the time a person takes to answer is not the research's. A resumed one (by hand,
``auto_resume``, a takeover, or the approval of a plan that waited for its user) counts a fresh
``max_time_s`` from the start of the resumed run: the time its earlier runs spent, and a plan's
wait for approval, are not charged again, so a research resumed after its first deadline is not
ended at once, empty (:func:`spent_before`). The time it keeps for the report is estimated from the
research itself (:mod:`.pace`): writing and checking a report of the findings in hand at the pace
its own LLM calls have shown, plus ``MARGIN_S`` for assembling and saving. Writing must start at
the deadline less that time; the supervisor watches each phase before the report
(:meth:`TimeCeiling.race`) and stops it at that moment. An estimate can be wrong (a writer
slower than every call before it): the report's own calls are raced against the deadline less
``MARGIN_S`` (:meth:`TimeCeiling.finish_by`), the writer's and the fact-checker's alike.

Calls in flight are awaited while writing need not start: the findings of those that answer are
counted as they land (moving the moment by the time they take to write). With no finding in
hand, writing must start early enough to write the first ones (one finding, unchecked), and the
analysis calls in flight are given up at once when their kind's measured latency says none will
answer by then. Calls still in flight when writing starts are cancelled. Nor does the supervisor
start what cannot end before writing must start: a judgement (reflection) or a further round.
Each stop is a ``time_ceiling`` decision with the figures it used.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio

from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.llm.fanout import together
from foundry_mcp.research.models import BranchStatus, LLMCallRecord, Phase, ResearchState, utcnow
from foundry_mcp.research.workflow.deadline.pace import (
    PRIOR_SEARCH_S,
    Pace,
    WritingTime,
    finding_groups,
    kind_seconds,
    percentile,
    writing_time,
)
from foundry_mcp.research.workflow.deadline.texts import round_texts, stop_texts

MARGIN_S = 0.3  # assembling, numbering and saving the report
POLL_S = 0.1  # how often a running phase is judged
FINDINGS_PER_CALL = 3  # what one analysis call is assumed to find, for the time a report needs

T = TypeVar("T")
_current: ContextVar[TimeCeiling | None] = ContextVar("foundry_time_ceiling", default=None)


@dataclass(frozen=True)
class Stop:
    """A ``time_ceiling`` decision (its rationale, inputs and figures) and its warning."""

    rationale: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    warning: str


@dataclass(frozen=True)
class Judgement:
    """Where a research stands against its deadline, in seconds from its start."""

    used_s: float
    write_by_s: float  # when writing must start
    findings: int  # in hand
    writing: WritingTime  # what the report kept for needs (the first finding's, with none)
    pace: Pace
    in_flight: dict[str, int] = field(default_factory=dict)  # LLM calls by kind
    awaited: int = 0  # analysis calls in flight expected to answer before writing must start
    expected_s: float | None = None  # when the last analysis call in flight should answer
    running_s: float = 0.0  # how long the oldest analysis call in flight has run
    hopeless: bool = False  # nothing in hand, and no analysis call in flight answers in time

    @property
    def write_now(self) -> bool:
        return self.hopeless or self.used_s >= self.write_by_s


class TimeCeiling:
    """A research's ``max_time_s`` (inactive without one); see the module."""

    def __init__(
        self,
        state: ResearchState | None = None,
        calls: CallLog | None = None,
        max_time_s: float | None = None,
        began: float = 0.0,
    ) -> None:
        self.max_time_s = max_time_s
        self.ended_it = False  # it stopped the research
        self.last: Judgement | None = None  # the judgement that stopped a phase
        self._research = state
        self._calls = calls or CallLog()
        self._began = began  # anyio's clock at the research's start
        self._paced: tuple[tuple[int, int], tuple[Pace, Pace]] | None = None
        self.writer: tuple[str, str] | None = None  # (provider, model) of the report's calls

    @classmethod
    def start(cls, state: ResearchState, llm: ResearchLLM) -> TimeCeiling:
        """The ceiling of ``state``'s run, begun :func:`spent_before` seconds ago; ``llm``
        tells the calls in flight and the model that writes the report."""
        if not state.options.max_time_s:
            return cls()
        began = anyio.current_time() - spent_before(state)
        ceiling = cls(state, llm.calls, state.options.max_time_s, began)
        ceiling.writer = llm.model_for("synthesis")
        return ceiling

    @staticmethod
    def current() -> TimeCeiling | None:
        """The ceiling of the research running in this task, if it has one."""
        ceiling = _current.get()
        return ceiling if ceiling is not None and ceiling.active else None

    @contextmanager
    def bound(self) -> Iterator[None]:
        """Make this the :meth:`current` ceiling inside (and in tasks started inside)."""
        if not self.active:
            yield
            return
        token = _current.set(self)
        try:
            yield
        finally:
            _current.reset(token)

    @property
    def active(self) -> bool:
        return self.max_time_s is not None

    def used(self) -> float:
        return anyio.current_time() - self._began

    def left(self) -> float:
        """Seconds until the deadline (infinite without one)."""
        return math.inf if self.max_time_s is None else self.max_time_s - self.used()

    def finish_by(self) -> float:
        """When (on anyio's clock) the report's calls must have answered: the deadline less
        ``MARGIN_S`` for assembling and saving the report (infinite without a deadline)."""
        return math.inf if self.max_time_s is None else self._began + self.max_time_s - MARGIN_S

    # ------------------------------------------------------------------ judging

    @property
    def _limit(self) -> float:
        assert self.max_time_s is not None, "an inactive ceiling judges nothing"
        return self.max_time_s

    @property
    def _state(self) -> ResearchState:
        assert self._research is not None, "an inactive ceiling judges nothing"
        return self._research

    def pace(self) -> Pace:
        """The pace of the report's calls, from this research's finished LLM calls (refitted
        when more have answered; see :meth:`Pace.of_writing`)."""
        return self._paces()[0]

    def kind_s(self, kind: str) -> float:
        """How long a call of ``kind`` is expected to take (see :func:`kind_seconds`)."""
        return kind_seconds(kind, self._records(), self._paces()[1])

    def _paces(self) -> tuple[Pace, Pace]:
        """The writer's pace and that of every call."""
        usage = self._state.llm_usage
        key = (len(usage.calls), usage.dropped_calls)
        if self._paced is None or self._paced[0] != key:
            writing = Pace.of_writing(usage.calls, self.writer)
            self._paced = (key, (writing, Pace.of(usage.calls)))
        return self._paced[1]

    def report_time(self) -> WritingTime:
        """The time to write and check a report of the findings in hand."""
        return writing_time(self._state, finding_groups(self._state), self.pace())

    def judge(self) -> Judgement:
        """When writing must start, from the findings in hand and the calls in flight."""
        state, used, pace = self._state, self.used(), self.pace()
        groups = finding_groups(state)
        findings = sum(groups)
        flying = self._calls.in_flight()
        clock = time.perf_counter()
        analysis = [c for c in flying if c.kind == "analysis"]
        latency = self.kind_s("analysis")
        ends = [max(used, used - (clock - c.started) + latency) for c in analysis]
        if findings:
            writing = writing_time(state, groups, pace)
        elif analysis:  # the first findings to land must still be written
            writing = writing_time(state, [1], pace, check=False)
        else:
            writing = WritingTime(0)
        write_by = self._limit - writing.total_s - MARGIN_S
        awaited = sum(1 for end in ends if end <= write_by)
        measured = any(r.purpose.partition(":")[0] == "analysis" for r in self._records())
        return Judgement(
            used_s=used,
            write_by_s=write_by,
            findings=findings,
            writing=writing,
            pace=pace,
            in_flight=dict(Counter(c.kind for c in flying)),
            awaited=awaited,
            expected_s=max(ends) if ends else None,
            running_s=max((clock - c.started for c in analysis), default=0.0),
            hopeless=not findings and bool(analysis) and measured and not awaited,
        )

    def reached(self) -> bool:
        """Whether writing must start now (or the ceiling already ended the research)."""
        return self.ended_it or (self.active and self.judge().write_now)

    def allows(self, kind: str, after: Phase | None = None) -> bool:
        """Whether a call of ``kind`` started now (a judgement after phase ``after``) leaves
        time for the rest of the round's work towards findings and for writing them up: those
        in hand, or, with none, what one analysis call finds."""
        if not self.active:
            return True
        judged = self.judge()
        if self.ended_it or judged.write_now:
            return False
        budget = judged.write_by_s
        if not judged.findings:
            first = writing_time(self._state, [FINDINGS_PER_CALL], judged.pace)
            budget = min(budget, self._limit - first.total_s - MARGIN_S)
        return judged.used_s + self.kind_s(kind) + self._ahead(after) <= budget

    def _ahead(self, after: Phase | None) -> float:
        """The work still ahead of findings after phase ``after``: searches and analysis."""
        if after in (Phase.PLANNING, Phase.REFINEMENT):
            return self.round_s()["search_s"] + self.kind_s("analysis")
        unread = any(not s.analyzed for s in self._state.sources)
        if after is Phase.GATHERING and unread:
            return self.kind_s("analysis")
        return 0.0

    def round_s(self) -> dict[str, float]:
        """What a further round takes before its findings are in hand: its refinement, a
        search and an analysis call, at this research's pace."""
        searches = self._calls.seconds("search")
        return {
            "refinement_s": self.kind_s("refinement"),
            "search_s": percentile(searches) if searches else PRIOR_SEARCH_S,
            "analysis_s": self.kind_s("analysis"),
        }

    async def race(self, work: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        """Run ``work`` until it ends or writing must start, whichever comes first: (whether it
        ended, its result). When writing must start, ``work`` is cancelled and :attr:`last`
        holds the judgement that said so."""
        done: list[T] = []
        with anyio.CancelScope() as scope:

            async def run() -> None:
                done.append(await work())
                scope.cancel()

            async def watch() -> None:
                while True:
                    judged = self.judge()
                    if judged.write_now:
                        self.last = judged
                        scope.cancel()
                        return
                    await anyio.sleep(min(POLL_S, judged.write_by_s - judged.used_s))

            await together(run, watch)
        return (True, done[0]) if done else (False, None)

    # ------------------------------------------------------------------ the decisions

    def due(self, phase: Phase) -> Judgement | None:
        """The judgement that writing must start before ``phase`` runs, if it must."""
        if phase is Phase.SYNTHESIS or not self.active:
            return None
        judged = self.judge()
        return judged if judged.write_now else None

    def stop(self, judged: Judgement, phase: Phase, *, write: bool, begun: bool) -> Stop:
        """End the research at ``phase`` (``begun``: stopped while it ran, else not begun):
        its report is written (``write``) or the one written stands."""
        assert self.max_time_s is not None
        self.ended_it = True
        state = self._state
        figures: dict[str, Any] = {
            "next_phase": Phase.SYNTHESIS.value if write else "COMPLETED",
            "used_s": round(judged.used_s, 2),
            "write_by_s": round(judged.write_by_s, 2),
            "reserve_s": round(judged.writing.total_s + MARGIN_S, 2),
            "writing_s": round(judged.writing.writing_s, 2),
            "checking_s": round(judged.writing.checking_s, 2),
            "findings": judged.findings,
            "in_flight": judged.in_flight,
            "analysis_expected_s": (
                None if judged.expected_s is None else round(judged.expected_s, 2)
            ),
            "analysis_running_s": round(judged.running_s, 2),
            "sources_not_analysed": sum(1 for s in state.sources if not s.analyzed),
            "sub_queries_not_searched": len(state.pending_sub_queries()),
            "sub_questions_unanswered": sum(
                1 for sq in state.sub_questions if sq.status is not BranchStatus.COMPLETED
            ),
            **judged.pace.figures(),
        }
        if not judged.findings:
            figures["needed_s"] = self._needed_s(judged, figures)
        rationale, warning = stop_texts(
            self.max_time_s,
            state.iteration,
            phase,
            figures,
            judged.writing,
            judged.pace,
            hopeless=judged.hopeless,
            write=write,
            begun=begun,
        )
        return Stop(rationale, self._inputs(phase, judged.used_s), figures, warning)

    def round_refused(self) -> Stop | None:
        """The stop before a further round that cannot bring findings before writing must
        start (None: it can, or there is no ceiling)."""
        if not self.active:
            return None
        assert self.max_time_s is not None
        judged = self.judge()
        parts = self.round_s()
        needs = sum(parts.values())
        if not judged.write_now and judged.used_s + needs <= judged.write_by_s:
            return None
        self.ended_it = True
        figures: dict[str, Any] = {
            "next_phase": "COMPLETED",
            "used_s": round(judged.used_s, 2),
            "write_by_s": round(judged.write_by_s, 2),
            "round_s": round(needs, 2),
            **{key: round(value, 2) for key, value in parts.items()},
            "findings": judged.findings,
            **judged.pace.figures(),
        }
        rationale, warning = round_texts(
            self.max_time_s, self._state.iteration, figures, parts, judged.pace
        )
        return Stop(rationale, self._inputs(Phase.REFINEMENT, judged.used_s), figures, warning)

    def _inputs(self, phase: Phase, used: float) -> dict[str, Any]:
        return {
            "phase": phase.value,
            "iteration": self._state.iteration,
            "max_time_s": self.max_time_s,
            "used_s": round(used, 2),
        }

    def _needed_s(self, judged: Judgement, figures: dict[str, Any]) -> int:
        """About how long a research of this pace needs to write a report with findings."""
        searches = self._calls.seconds("search")
        search_s = percentile(searches) if searches else PRIOR_SEARCH_S
        if judged.expected_s is not None:  # one that overran is taken to need as long again
            to_findings = max(judged.expected_s - judged.used_s, judged.running_s)
        elif figures["sources_not_analysed"]:
            to_findings = self.kind_s("analysis")
        else:
            to_findings = search_s + self.kind_s("analysis")
        calls = max(1, judged.in_flight.get("analysis", 0))
        first = writing_time(self._state, [FINDINGS_PER_CALL * calls], judged.pace)
        return math.ceil(judged.used_s + max(0.0, to_findings) + first.total_s + MARGIN_S)

    def _records(self) -> list[LLMCallRecord]:
        return self._state.llm_usage.calls


def spent_before(state: ResearchState) -> float:
    """The seconds of ``state``'s run gone before its supervisor began: since it was queued for
    a new research (the time its user took to answer is not its work), since the run's own
    start for a resumed one (see the module; only a resume, which records a ``resume``
    decision, starts a later run)."""
    resumed = any(decision.action == "resume" for decision in state.decisions)
    since = state.started_at if resumed else (state.queued_at or state.created_at)
    return 0.0 if since is None else max(0.0, (utcnow() - since).total_seconds())
