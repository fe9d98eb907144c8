"""Which provider call each call of a research came after: the trace of its critical path.

Every provider call of a research (an LLM call, a search, a page read) is a :class:`Step`: what
it was, when it started and ended (seconds since the run began), and the step it came after:
the last call to end in the flow of work that made it (the task that made it, or the task that
started that one, as it was then), or, after a fan-out of concurrent work, the call of those
children that ended last (:func:`joined`). Walking back from the research's last call along
these links (:func:`critical_path`) gives the calls that had to happen one after another, and
the gaps between them: the server's own work, or a wait on something that is not a provider
call (a page another researcher is reading, a save).

The links follow the tasks (a context variable), so no call site needs to know which flow it is
in; each call's event carries its step, the step it came after and its times.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

_last: ContextVar[Step | None] = ContextVar("foundry_last_step", default=None)
_numbers = itertools.count(1)


@dataclass
class Step:
    """One provider call in a research's trace (see the module)."""

    number: int
    kind: str  # llm, search, fetch
    started: float  # time.perf_counter()
    after: Step | None
    ended: float | None = None

    def fields(self, origin: float) -> dict[str, Any]:
        """The step as an event's fields, its times in seconds since ``origin``."""
        return {
            "call": self.kind,
            "step": self.number,
            "after": self.after.number if self.after is not None else None,
            "start_s": round(self.started - origin, 3),
            "end_s": round((self.ended or self.started) - origin, 3),
        }


def begin(kind: str) -> Step:
    """A call of ``kind`` starts now, after the last call of this flow."""
    return Step(next(_numbers), kind, time.perf_counter(), _last.get())


def end(step: Step) -> None:
    """``step`` ended now: the next call of this flow comes after it."""
    step.ended = time.perf_counter()
    _last.set(step)


def current() -> Step | None:
    """The last call to end in this flow."""
    return _last.get()


def joined(children: Iterable[Step | None]) -> None:
    """A fan-out's children are done: this flow goes on after the one that ended last (if it
    ended after this flow's own last call)."""
    ended = [step for step in children if step is not None and step.ended is not None]
    mine = _last.get()
    if ended:
        latest = max(ended, key=lambda step: step.ended or 0.0)
        if mine is None or mine.ended is None or (latest.ended or 0.0) > mine.ended:
            _last.set(latest)


@dataclass(frozen=True)
class PathStep:
    """A step of a critical path read back from events: the call and the gap before it."""

    step: int
    kind: str
    phase: str
    branch: str | None
    start_s: float
    end_s: float
    gap_s: float  # since the step it came after ended (or since the run began)


def critical_path(events: Sequence[Mapping[str, Any]]) -> list[PathStep]:
    """The chain of calls, first to last, from the last call back along ``after`` links;
    ``events`` are call events' data (with ``step``, ``after``, ``start_s``, ``end_s``)."""
    by_step = {int(e["step"]): e for e in events if e.get("step") is not None}
    if not by_step:
        return []
    last = max(by_step.values(), key=lambda e: float(e["end_s"]))
    chain: list[Mapping[str, Any]] = []
    seen: set[int] = set()
    node: Mapping[str, Any] | None = last
    while node is not None and int(node["step"]) not in seen:
        seen.add(int(node["step"]))
        chain.append(node)
        after = node.get("after")
        node = by_step.get(int(after)) if after is not None else None
    chain.reverse()
    path = []
    previous_end = 0.0
    for event in chain:
        start = float(event["start_s"])
        path.append(
            PathStep(
                step=int(event["step"]),
                kind=str(event.get("call", "")),
                phase=str(event.get("phase", "")),
                branch=event.get("branch"),
                start_s=start,
                end_s=float(event["end_s"]),
                gap_s=max(0.0, start - previous_end),
            )
        )
        previous_end = float(event["end_s"])
    return path
