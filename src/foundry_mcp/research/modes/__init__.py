"""The research modes: strategies that order the same specialists differently.

``playbook_for(state, kit)`` is the playbook the supervisor follows for a research:

* ``simple`` (:mod:`.simple`): one pass over the question, refined while gaps remain;
* ``hierarchical`` (:mod:`.hierarchical`): sub-questions researched in parallel, then integrated;
* ``hypotheses`` (:mod:`.hypotheses`): investigative hypotheses explored and weighed;
* ``auto`` (:mod:`.routing`): planning decides which of these the question needs.
"""

from __future__ import annotations

from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.modes.kit import ResearchKit
from foundry_mcp.research.modes.simple import SimplePlaybook
from foundry_mcp.research.workflow.supervisor import Playbook


def playbook_for(state: ResearchState, kit: ResearchKit) -> Playbook:
    """The playbook of ``state``'s mode."""
    return SimplePlaybook(state, kit)


__all__ = ["ResearchKit", "playbook_for"]
