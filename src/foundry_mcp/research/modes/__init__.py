"""The research modes: strategies that order the same specialists differently.

* ``simple`` (:mod:`.simple`): one pass over the question, refined while gaps remain;
* ``hierarchical`` (:mod:`.hierarchical`): sub-questions researched in parallel, then integrated;
* ``hypotheses`` (:mod:`.hypotheses`): investigative hypotheses explored and weighed;
* ``auto`` (:mod:`.routing`): planning decides which of these the question needs.

``playbook_for(state, kit)`` returns the :class:`ModeRouter`, the playbook the supervisor
follows: it hands each phase to the playbook of the research's mode, deciding the mode during
planning when it is ``auto``.
"""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    Phase,
    ResearchMode,
    ResearchState,
    ValidationResult,
)
from foundry_mcp.research.modes.allocation import adopt_plan, sample_local_documents
from foundry_mcp.research.modes.decomposition import adopt_decomposition, sub_questions_from
from foundry_mcp.research.modes.hierarchical import HierarchicalPlaybook
from foundry_mcp.research.modes.hypotheses import HypothesesPlaybook
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.modes.routing import choose_mode, lexical_prior
from foundry_mcp.research.modes.simple import SimplePlaybook
from foundry_mcp.research.workflow.agents.planner import plan
from foundry_mcp.research.workflow.playbook import Playbook


class ModeRouter:
    """The playbook of whichever mode the research runs in (decided in planning for auto)."""

    def __init__(self, state: ResearchState, kit: ResearchKit) -> None:
        self.state = state
        self.kit = kit
        self._playbooks: dict[ResearchMode, Playbook] = {
            ResearchMode.SIMPLE: SimplePlaybook(state, kit),
            ResearchMode.HIERARCHICAL: HierarchicalPlaybook(state, kit),
            ResearchMode.HYPOTHESES: HypothesesPlaybook(state, kit),
        }

    @property
    def current(self) -> Playbook:
        """The playbook of the research's mode (simple until the mode is decided)."""
        return self._playbooks.get(self.state.mode, self._playbooks[ResearchMode.SIMPLE])

    async def execute(self, phase: Phase, guidance: str | None) -> dict[str, Any]:
        state = self.state
        if phase is Phase.PLANNING and state.mode_decision is None:
            await self._decide_mode(guidance)
        outputs = await self.current.execute(phase, guidance)
        if (
            phase is Phase.PLANNING
            and state.mode is ResearchMode.SIMPLE
            and "fell_back_to" in outputs
        ):
            # The mode's own planning fell back to simple: plan the simple way (it may already
            # have the plan, from the same answer).
            outputs = {**outputs, **await self.current.execute(phase, guidance)}
        return {"mode": state.mode.value, **outputs}

    async def _decide_mode(self, guidance: str | None) -> None:
        """Record the mode; for ``auto``, let the wording and the planner choose it."""
        state = self.state
        modes = state.options.mode
        prior = lexical_prior(state.query)
        if state.mode is not ResearchMode.AUTO:
            state.mode_decision = choose_mode(
                state.mode, prior, None, None, modes.min_sub_questions
            )
            self._record_decision()
            return
        sample = await sample_local_documents(self.kit, state.query)
        output = await plan(self.kit.llm, state, guidance, judge=True, local_sample=sample)
        sub_questions = sub_questions_from(output.decomposition, state.query, modes)
        decision = choose_mode(
            ResearchMode.AUTO, prior, output.assessment, len(sub_questions), modes.min_sub_questions
        )
        state.mode, state.mode_decision = decision.mode, decision
        self._record_decision()
        # The planner's one answer serves the chosen mode: its decomposition, or its plan.
        state.research_brief = output.research_brief or state.research_brief
        if decision.mode is ResearchMode.HIERARCHICAL:
            adopt_decomposition(state, output.decomposition, sub_questions)
        elif decision.mode is ResearchMode.SIMPLE:
            adopt_plan(state, output, sample)

    def _record_decision(self) -> None:
        state = self.state
        decision = state.mode_decision
        assert decision is not None
        state.record(
            AgentDecision(
                agent=AgentRole.SUPERVISOR,
                action="choose_mode",
                rationale=f"Mode {decision.mode.value}: " + " ".join(decision.reasons),
                inputs={
                    "requested": decision.requested.value,
                    "lexical_signals": decision.lexical.hierarchical_signals
                    + decision.lexical.hypothesis_signals,
                },
                outputs={
                    "mode": decision.mode.value,
                    "planner_recommends": (
                        decision.assessment.recommended_mode.value if decision.assessment else None
                    ),
                    "fallback": decision.fallback,
                },
            )
        )

    def timeout(self, phase: Phase) -> float | None:
        return self.current.timeout(phase)

    def gate(self, phase: Phase) -> ValidationResult:
        return self.current.gate(phase)

    def describe(self, phase: Phase) -> str:
        return self.current.describe(phase)

    def can_retry(self, phase: Phase) -> bool:
        return self.current.can_retry(phase)

    async def ahead(self, phase: Phase) -> None:
        await self.current.ahead(phase)

    def prepare_retry(self, phase: Phase) -> None:
        self.current.prepare_retry(phase)

    def judged(self, phase: Phase) -> bool:
        return self.current.judged(phase)

    def takes_guidance(self, phase: Phase) -> bool:
        return self.current.takes_guidance(phase)

    def next_phase(self, phase: Phase, complete_early: bool) -> Phase | None:
        return self.current.next_phase(phase, complete_early)


def playbook_for(state: ResearchState, kit: ResearchKit) -> Playbook:
    """The playbook the supervisor follows for ``state`` (see :class:`ModeRouter`)."""
    return ModeRouter(state, kit)


__all__ = ["ModeRouter", "ResearchKit", "playbook_for"]
