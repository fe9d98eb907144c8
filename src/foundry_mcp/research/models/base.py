"""The words every model is made of: ids, timestamps and the enumerations of the domain."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

RESEARCH_ID_PATTERN = re.compile(r"^deepres-[0-9a-f]{12}$")

STATE_SCHEMA_VERSION = 5


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def new_research_id() -> str:
    """A fresh research id: ``deepres-`` followed by 12 hex digits."""
    return f"deepres-{secrets.token_hex(6)}"


def new_id(prefix: str) -> str:
    """A short random id such as ``src-1a2b3c4d``."""
    return f"{prefix}-{secrets.token_hex(4)}"


EventListener = Callable[[str, dict[str, Any]], None]


class Phase(StrEnum):
    """The five working phases of the supervisor's state machine."""

    PLANNING = "planning"
    GATHERING = "gathering"
    ANALYSIS = "analysis"
    SYNTHESIS = "synthesis"
    REFINEMENT = "refinement"


PHASE_ORDER: tuple[Phase, ...] = (
    Phase.PLANNING,
    Phase.GATHERING,
    Phase.ANALYSIS,
    Phase.SYNTHESIS,
    Phase.REFINEMENT,
)


class Status(StrEnum):
    """The one canonical lifecycle status of a research."""

    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    # Stopped after planning until the user approves the plan (review_plan): no process works
    # on it, it survives restarts, and resuming it goes on.
    WAITING = "waiting"

    @property
    def is_active(self) -> bool:
        """True while some process is (or should be) working on the research."""
        return self in (Status.QUEUED, Status.RUNNING, Status.CANCELLING)


class AgentRole(StrEnum):
    """The supervisor and its five specialists."""

    SUPERVISOR = "supervisor"
    PLANNER = "planner"
    GATHERER = "gatherer"
    ANALYZER = "analyzer"
    SYNTHESIZER = "synthesizer"
    REFINER = "refiner"


PHASE_TO_AGENT: dict[Phase, AgentRole] = {
    Phase.PLANNING: AgentRole.PLANNER,
    Phase.GATHERING: AgentRole.GATHERER,
    Phase.ANALYSIS: AgentRole.ANALYZER,
    Phase.SYNTHESIS: AgentRole.SYNTHESIZER,
    Phase.REFINEMENT: AgentRole.REFINER,
}


class Confidence(StrEnum):
    """How strongly the sources support a finding."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CONFIRMED = "confirmed"
    SPECULATION = "speculation"


class SourceQuality(StrEnum):
    """The analyzer's judgement of a source's reliability."""

    UNKNOWN = "unknown"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class SubQueryStatus(StrEnum):
    """Where a sub-query is in the gathering phase."""

    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"


class Severity(StrEnum):
    """The refiner's judgement of how much a gap matters."""

    CRITICAL = "critical"
    MODERATE = "moderate"
    MINOR = "minor"


class Verdict(StrEnum):
    """What the cited sources say about one claim of the report."""

    SUPPORTED = "supported"
    PARTIAL = "partial"
    UNSUPPORTED = "unsupported"
    UNVERIFIED = "unverified"  # the judge could not be asked or its answer was unreadable


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_assignment=False)
