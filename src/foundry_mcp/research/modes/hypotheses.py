"""Hypotheses mode (seed 004): being written; see the issue."""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.models import Phase, ResearchState, ValidationResult
from foundry_mcp.research.modes.kit import ResearchKit


class HypothesesPlaybook:
    def __init__(self, state: ResearchState, kit: ResearchKit) -> None:
        self.state = state
        self.kit = kit

    async def execute(self, phase: Phase, guidance: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def timeout(self, phase: Phase) -> float | None:
        raise NotImplementedError

    def gate(self, phase: Phase) -> ValidationResult:
        raise NotImplementedError

    def describe(self, phase: Phase) -> str:
        raise NotImplementedError

    def can_retry(self, phase: Phase) -> bool:
        raise NotImplementedError

    def prepare_retry(self, phase: Phase) -> None:
        raise NotImplementedError

    def next_phase(self, phase: Phase, complete_early: bool) -> Phase | None:
        raise NotImplementedError
