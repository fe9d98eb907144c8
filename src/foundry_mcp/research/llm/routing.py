"""What identifies an LLM call of a research: the provider list its purpose picks, the phase
its work counts in, the content key the answer journal keeps it under, and the log of when
provider calls were in flight."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from foundry_mcp.providers.llm.base import LLMProvider, LLMRequest
from foundry_mcp.research.llm import trace
from foundry_mcp.research.llm.trace import Step
from foundry_mcp.research.models import LLMCallRecord

LLM_PHASES = ("planning", "analysis", "synthesis", "refinement")


@dataclass(frozen=True)
class InFlight:
    """An LLM call waiting for its answer: its purpose and when (``time.perf_counter``) it left."""

    purpose: str
    started: float

    @property
    def kind(self) -> str:
        """What the call does, for its latency: ``analysis``, ``synthesis``, ``reflection``..."""
        return self.purpose.partition(":")[0]


@dataclass
class CallLog:
    """Start and end times (``time.perf_counter``) of every provider call, by kind, and the
    calls still waiting for their answer: the LLM calls (which the time ceiling weighs) and the
    searches and page reads. It also knows when the research last moved (a call landed, or a
    researcher saved its work), which the stall watch weighs (``modes/watch.py``)."""

    intervals: list[tuple[str, float, float]] = field(default_factory=list)
    origin: float = field(default_factory=time.perf_counter)  # the run's start, for the trace
    _flying: dict[int, InFlight] = field(default_factory=dict)
    _steps: dict[int, Step] = field(default_factory=dict)
    _tickets: int = 0
    _waiting: int = 0  # searches and page reads in flight
    _moved: float = field(default_factory=time.perf_counter)
    _departures: list[anyio.Event] = field(default_factory=list)  # waiting for the next call

    def add(self, kind: str, started: float, ended: float) -> None:
        self.intervals.append((kind, started, ended))
        self.moved()

    def count(self, kind: str) -> int:
        return sum(1 for k, _, _ in self.intervals if k == kind)

    def seconds(self, kind: str) -> list[float]:
        """How long each finished call of ``kind`` took."""
        return [ended - started for k, started, ended in self.intervals if k == kind]

    def depart(self, purpose: str, started: float) -> int:
        """Note an LLM call in flight; returns its ticket for :meth:`land`."""
        self._tickets += 1
        self._flying[self._tickets] = InFlight(purpose, started)
        self._steps[self._tickets] = trace.begin("llm")
        for departed in self._departures:
            departed.set()
        self._departures.clear()
        return self._tickets

    async def departure(self, limit: float) -> None:
        """Until the next LLM call is on its way, ``limit`` seconds at most (call on the loop)."""
        departed = anyio.Event()
        self._departures.append(departed)
        with anyio.move_on_after(limit):
            await departed.wait()

    def land(self, ticket: int) -> dict[str, Any]:
        """The call of ``ticket`` answered, failed or was cancelled; its trace fields."""
        self._flying.pop(ticket, None)
        self.moved()
        step = self._steps.pop(ticket, None)
        if step is None:
            return {}
        trace.end(step)
        return step.fields(self.origin)

    def in_flight(self) -> list[InFlight]:
        """The LLM calls waiting for their answer, oldest first."""
        return list(self._flying.values())

    @contextmanager
    def waiting(self, kind: str) -> Iterator[dict[str, Any]]:
        """Time one search or page read (``kind``) while it is in flight; logged when done.
        Yields the fields of its trace step, filled in when it ends."""
        step = trace.begin(kind)
        self._waiting += 1
        fields: dict[str, Any] = {}
        try:
            yield fields
        finally:
            self._waiting -= 1
            trace.end(step)
            self.add(kind, step.started, step.ended or step.started)
            fields.update(step.fields(self.origin))

    def moved(self) -> None:
        """Something of the research moved: a call landed, or work was saved."""
        self._moved = time.perf_counter()

    def idle_for(self) -> float:
        """Seconds since the research last moved; 0 while any provider call is in flight (its
        own timeout bounds it)."""
        if self._flying or self._waiting:
            return 0.0
        return time.perf_counter() - self._moved


@dataclass(frozen=True)
class LLMRoute:
    """One (provider, model) an LLM call can be sent to."""

    provider: LLMProvider
    model: str

    @property
    def label(self) -> str:
        return f"{self.provider.name}:{self.model}"


def route_group(purpose: str, phase: str) -> str | None:
    """The provider list that serves ``purpose`` while the research is in ``phase``."""
    head, _, tail = purpose.partition(":")
    if head in LLM_PHASES:
        return head
    if head == "verification":
        return "synthesis"
    if head == "reflection":
        return tail if tail in LLM_PHASES else None
    if head == "summarization":
        return "summarization"
    return phase if phase in LLM_PHASES else None


def work_phase(purpose: str, phase: str) -> str:
    """The phase a call's work belongs to: the one its purpose names, else the current one.

    Analysis calls made while gathering (the pipeline) count as analysis, in usage and in the
    journal's keys alike, so a source analysed on resume in the analysis phase finds its answer.
    """
    head = purpose.partition(":")[0]
    return head if head in LLM_PHASES else phase


class AnswerJournal(Protocol):
    """Where a research keeps the answers it paid for (see the module)."""

    async def get(self, key: str) -> tuple[str, LLMCallRecord] | None:
        """The saved answer and usage record for ``key``, if any."""
        ...

    async def put(self, key: str, answer: str, record: LLMCallRecord) -> None:
        """Save an answer with its usage record (before the answer is used)."""
        ...


def request_key(phase: str, purpose: str, provider: str, request: LLMRequest) -> str:
    """The content key of one request: the same request always gets the same key."""
    content = json.dumps(
        [
            phase,
            purpose,
            provider,
            request.model,
            request.system,
            request.user,
            request.json_mode,
            request.max_tokens,
            request.temperature,
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:32]
