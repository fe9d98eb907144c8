"""What a research mode decides, asked by the supervisor at each phase: the playbook."""

from __future__ import annotations

from typing import Any, Protocol

from foundry_mcp.research.models import Phase, ValidationResult


class Playbook(Protocol):
    """What a research mode decides: the work of each phase and which phase follows.

    Implemented by the modes in :mod:`foundry_mcp.research.modes`.
    """

    async def execute(self, phase: Phase, guidance: str | None) -> dict[str, Any]:
        """Do the phase's work; returns the figures its evaluation records."""
        ...

    def timeout(self, phase: Phase) -> float | None:
        """Seconds the phase may take (None: no limit of its own)."""
        ...

    def gate(self, phase: Phase) -> ValidationResult:
        """The phase's quality gate."""
        ...

    def describe(self, phase: Phase) -> str:
        """The reflection question asked after the phase (think pause, model reflection)."""
        ...

    def can_retry(self, phase: Phase) -> bool:
        """Whether running the phase again can change its outcome."""
        ...

    def judged(self, phase: Phase) -> bool:
        """Whether the model's judgement after ``phase`` can still change what follows."""
        ...

    def takes_guidance(self, phase: Phase) -> bool:
        """Whether ``phase``'s work reads the guidance given before it (if not, it carries over
        to the next phase)."""
        ...

    async def ahead(self, phase: Phase) -> None:
        """Work of the phase after ``phase`` that its judgement cannot change, done while the
        model judges ``phase``; what it made is dropped by :meth:`prepare_retry`."""
        ...

    def prepare_retry(self, phase: Phase) -> None:
        """Undo what the phase produced, so that running it again replaces, not duplicates."""
        ...

    def next_phase(self, phase: Phase, complete_early: bool) -> Phase | None:
        """The phase after ``phase`` (None: the research is complete); records its decision.

        ``complete_early`` is set when the supervisor's reflection judged the report complete.
        """
        ...
