"""Start a revision of a completed research's report (``deep-research-revise``): a rewrite,
a deepen or a refresh, made as the research's next version.

The revision runs as a background run of the research, started exactly as the resume of a
completed research is (``writes.ResearchWriter.resume``): checked first (the request, the
research's state, the providers it needs), then claimed under this process's lease, saved
queued and run; the runner runs the revision instead of the supervisor
(:mod:`foundry_mcp.research.revision`). The answer says what it will do and how to follow it.
"""

from __future__ import annotations

from typing import Any

import anyio

from foundry_mcp.errors import InvalidStateError
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    ResearchState,
    Revision,
    RevisionKind,
)
from foundry_mcp.research.service.completed.request import ReviseRequest
from foundry_mcp.research.service.completed.versions import versions_of, versions_payload
from foundry_mcp.research.service.parts import ServiceParts
from foundry_mcp.research.service.starting.again import check_providers, run_again
from foundry_mcp.research.store.records import validate_research_id


class Revisions(ServiceParts):
    """Starts revisions and reads versions; see the module and :mod:`.versions`."""

    async def start(self, research_id: Any, revise: Any) -> dict[str, Any]:
        """Check ``revise`` (:class:`ReviseRequest`), then start the revision it asks for."""
        research_id = validate_research_id(research_id)
        asked = ReviseRequest.read(revise)
        # Claimed under our lease before its run starts, and never left claimed but not run
        # by a caller that gives up meanwhile (shielded), as a resume is.
        with self.jobs.starting(research_id), anyio.CancelScope(shield=True):
            started = await self._start(research_id, asked)
        return started

    async def _start(self, research_id: str, asked: ReviseRequest) -> dict[str, Any]:
        state = await self.watch.load_checked(research_id)
        # The request checked against the research before anything is claimed or saved (the
        # revision set on a copy: the claim below compares the research as it was read).
        self._revision(state.model_copy(deep=True), asked)
        check_providers(self, state, searches=asked.revision_kind is not RevisionKind.REWRITE)
        if not await self.watch.claim_to_resume(state):
            raise InvalidStateError(
                f"Research {research_id} was just resumed or revised by another process.",
                remediation="Follow it with action='deep-research-status'.",
            )
        previous = state.status
        revision = self._revision(state, asked)
        state.record(
            AgentDecision(
                agent=AgentRole.SUPERVISOR,
                action="revise",
                rationale=f"A {revision.kind.value} of version {revision.base_version} asked.",
                inputs=asked.model_dump(mode="json", exclude_none=True),
                outputs={"revision": revision.id, "part_question": revision.part_question},
            )
        )
        await run_again(
            self,
            state,
            "revision_started",
            {"revision_id": revision.id, "kind": revision.kind.value, "from": previous.value},
        )
        return revise_payload(state, revision)

    @staticmethod
    def _revision(state: ResearchState, asked: ReviseRequest) -> Revision:
        # Here, not at the top: it brings in the research engine, which a process that only
        # reads research (a CLI command) never needs.
        from foundry_mcp.research.revision.starting import new_revision

        return new_revision(
            state,
            asked.revision_kind,
            instructions=asked.instructions(),
            part=asked.part,
            max_searches=asked.max_searches,
        )

    async def versions(
        self, research_id: Any, version: Any = None, compare_to: Any = None
    ) -> dict[str, Any]:
        """The research's versions; with ``version``, the delta against ``compare_to``."""
        state = await self.watch.load_checked(validate_research_id(research_id))
        return versions_payload(state, version, compare_to)


def revise_payload(state: ResearchState, revision: Revision) -> dict[str, Any]:
    """What ``deep-research-revise`` returns (``ReviseResult``)."""
    number = versions_of(state)[-1].number + 1
    return {
        "research_id": state.id,
        "revision_id": revision.id,
        "kind": revision.kind.value,
        "status": state.status.value,
        "version": number,
        "base_version": revision.base_version,
        "part": revision.part_question,
        "max_searches": revision.max_searches,
        "plan": plan(state, revision),
        "next_action": (
            f"Poll action='deep-research-status', research_id='{state.id}' with wait=true "
            f"until completed, then read version {number} with action='deep-research-report'; "
            "action='deep-research-versions' lists the versions with their cost."
        ),
    }


def plan(state: ResearchState, revision: Revision) -> str:
    """What the revision will do, in a sentence."""
    asked = revision.instructions
    shape = {
        "report": "",
        "brief": " as a one-page brief",
        "table": " as a comparison table",
        "memo": " as a memo",
    }[asked.form.value]
    how = shape
    if asked.audience:
        how += f" for {asked.audience}"
    if asked.length_words:
        how += f" in about {asked.length_words:,} words"
    if asked.language:
        how += f" in {asked.language}"
    if asked.corrections:
        how += ", with the corrections asked"
    write = f"write the report again{how}"
    if revision.kind is RevisionKind.REWRITE:
        return (
            f"Rewrite: {write} from its {len(state.findings)} findings and "
            f"{len(state.sources)} sources; no search."
        )
    budget = (
        f"up to {revision.max_searches} new searches" if revision.max_searches else "new searches"
    )
    if revision.kind is RevisionKind.DEEPEN:
        return (
            f"Deepen: research {revision.part_question!r} further with {budget}, then {write} "
            "with what is found."
        )
    since = f" since {revision.since:%Y-%m-%d}" if revision.since else ""
    return (
        f"Refresh: ask its searches again ({budget}) for what is new{since}, read its cited "
        f"pages again for changes, then {write} with a section on what changed."
    )
