"""The use cases of deep research: start, status, report, list, events, cancel, resume, delete.

The MCP tool and the CLI both call ``ResearchService``; it validates input, talks to the store and
the job runner, and returns plain payloads, raising ``FoundryError`` for what a user can act on.
Its use cases are coroutines: every store call runs off the event loop.

``ResearchService`` is the one public face; each use case lives beside it: ``starting/`` starts a
research, ``writes`` (resume, restore), ``stopping`` (cancel, delete), ``reads`` (status, report
pages, the list, the events), ``ownership`` (the heartbeat, research whose process died),
``takeover`` (a dead worker's research), ``chores`` (housekeeping), ``quota`` (a principal's
limits), ``inputs`` (checks on input); ``completed/`` is what a completed research can do
(follow-ups, revisions of its report, its versions), ``asking/`` asks the user, ``payloads/``
and ``restore`` build what they return.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from foundry_mcp.config import LIMIT_BOUNDS, MAX_QUERY_CHARS, MAX_WAIT_SECONDS, Settings
from foundry_mcp.config.research_settings import LimitArgs
from foundry_mcp.context.runtime import ContextServices
from foundry_mcp.providers.health import check_providers
from foundry_mcp.providers.mcp_sources.checks import with_mcp_sources
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.research.export.files import MAX_INLINE_CHARS, export_research
from foundry_mcp.research.models import Status
from foundry_mcp.research.principal import Principal, name_of
from foundry_mcp.research.runs.jobs import JobRunner
from foundry_mcp.research.runs.runner import ResearchRunner
from foundry_mcp.research.service.asking.asker import Asker
from foundry_mcp.research.service.asking.plan_approval import PlanApprovals
from foundry_mcp.research.service.chores import housekeeping
from foundry_mcp.research.service.completed.follow_up import FollowUps
from foundry_mcp.research.service.completed.revising import Revisions
from foundry_mcp.research.service.completed.versions import at_version
from foundry_mcp.research.service.inputs import check_range
from foundry_mcp.research.service.ownership import OwnershipWatch
from foundry_mcp.research.service.parts import ServiceParts
from foundry_mcp.research.service.quota import admitted, check_spending
from foundry_mcp.research.service.reads import ProgressCallback, ResearchLookup
from foundry_mcp.research.service.starting.request import ResearchRequest
from foundry_mcp.research.service.starting.starter import ResearchStarter
from foundry_mcp.research.service.stopping import ResearchStopper
from foundry_mcp.research.service.writes import ResearchWriter
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.records import research_not_found, validate_research_id

if TYPE_CHECKING:
    from foundry_mcp.research.workflow.supervisor import SupervisorHooks

__all__ = [
    "LIMIT_BOUNDS",
    "MAX_QUERY_CHARS",
    "MAX_WAIT_SECONDS",
    "ProgressCallback",
    "ResearchService",
    "check_range",
]


class ResearchService:
    """Deep research for one process: starts background runs and answers about any research.

    Every use case takes an optional ``principal``, the team server's caller: a research then
    belongs to the principal that started it, and to any other principal it does not exist
    (``RESEARCH_NOT_FOUND``, exactly as for an unknown id). Without one (stdio, the CLI) every
    research is visible, as it always was.

    ``io``: the store, off the event loop; ``store``: the store itself, for tools and tests.
    """

    def __init__(
        self,
        settings: Settings,
        io: AsyncStore,
        providers: ProviderRegistry,
        jobs: JobRunner,
        hooks: SupervisorHooks | None = None,
        owner: Owner | None = None,
    ) -> None:
        self.settings = settings
        self.io = io
        self.store = io.sync
        self.providers = providers
        self.jobs = jobs
        self.owner = owner or Owner()
        self.runner = ResearchRunner(io, providers, self.owner, hooks)
        self.context = ContextServices(settings, providers)  # token management
        self.watch = OwnershipWatch(io, jobs, self.runner, self.owner)
        self.watch.lease_seconds = settings.research.lease_seconds
        self.lookup = ResearchLookup(io, self.watch)
        self.follow_ups = FollowUps(io, self.runner, self.watch)
        # In the dataclass's order; each part has its own type, which mypy checks.
        parts = ServiceParts(
            settings, io, providers, jobs, self.runner, self.owner, self.context, self.watch
        )
        self.starter = ResearchStarter(**vars(parts))
        self.writer = ResearchWriter(**vars(parts))
        self.revisions = Revisions(**vars(parts))
        self.stopper = ResearchStopper(
            io=io, jobs=jobs, runner=self.runner, owner=self.owner, watch=self.watch
        )
        self.approvals = PlanApprovals(self.watch, settings.research.clarify_timeout)

    @property
    def call_logs(self) -> dict[str, Any]:
        """Timing of provider calls per research run by this process (for benchmarks)."""
        return self.runner.call_logs

    # ------------------------------------------------------------------ start (starting/), writes

    def start_warnings(self) -> list[str]:
        """What a user starting a research should know about the configuration."""
        return self.settings.trust_warnings()

    async def start(
        self,
        request: ResearchRequest | Any,
        *,
        asker: Asker | None = None,
        principal: Principal | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Check ``request``, save a queued research and start it in the background
        (:meth:`ResearchStarter.start`). It belongs to ``principal``, whose
        ``max_concurrent_researches`` it must fit.

        A script or a test may give the question instead of a request, with its options as
        keywords (:meth:`ResearchRequest.of`)."""
        if not isinstance(request, ResearchRequest):
            request = ResearchRequest.of(request, **options)
        elif options:
            raise TypeError(f"options beside a request: {', '.join(options)}; put them in it")
        async with admitted(self.watch, principal):
            return await self.starter.start(request, asker=asker, principal=name_of(principal))

    async def check_spending(self, principal: Principal | None) -> None:
        """``QUOTA_EXCEEDED`` when ``principal`` has spent its daily cost limit; call it before
        starting or resuming one of its research."""
        if principal is not None:
            await check_spending(self.io, principal)

    async def resume(
        self,
        research_id: Any,
        *,
        plan: Any = None,
        shown: dict[str, Any] | None = None,
        principal: Principal | None = None,
        **limits: Unpack[LimitArgs],
    ) -> dict[str, Any]:
        """Continue an unfinished research from its saved phase, without redoing work.

        A completed research given a larger ``max_iterations`` continues with a refinement
        round, if gaps are still open. A research waiting for its plan's approval goes on with
        the plan as shown, or as ``plan`` edits it (``shown``: :meth:`ResearchWriter.resume`).
        """
        await self._reveal(research_id, principal)
        async with admitted(self.watch, principal):
            return await self.writer.resume(research_id, limits, plan=plan, shown=shown)

    async def follow_up(
        self, research_id: Any, *, query: Any, principal: Principal | None = None
    ) -> dict[str, Any]:
        """Answer a follow-up question about a completed research from the sources it read,
        with citations and quotes, without searching; kept with the research."""
        await self._reveal(research_id, principal)
        return await self.follow_ups.answer(research_id, query)

    async def revise(
        self, research_id: Any, revise: Any, *, principal: Principal | None = None
    ) -> dict[str, Any]:
        """Rewrite, deepen or refresh a completed research's report as its next version, in
        the background (``completed/revising.py``; ``revise``: a ``ReviseRequest``)."""
        await self._reveal(research_id, principal)
        async with admitted(self.watch, principal):
            return await self.revisions.start(research_id, revise)

    async def versions(
        self,
        research_id: Any,
        version: Any = None,
        compare_to: Any = None,
        principal: Principal | None = None,
    ) -> dict[str, Any]:
        """The report's versions, what made each and its cost; with ``version``, the delta
        against ``compare_to`` (default: the version before it)."""
        await self._reveal(research_id, principal)
        return await self.revisions.versions(research_id, version, compare_to)

    async def cancel(self, research_id: Any, principal: Principal | None = None) -> dict[str, Any]:
        """Stop a running research; its partial results stay and it can be resumed."""
        await self._reveal(research_id, principal)
        return await self.stopper.cancel(research_id)

    async def restore_content(
        self, research_id: Any, item_id: Any, principal: Principal | None = None
    ) -> dict[str, Any]:
        """Bring a dropped (archived) source back into a stopped research; resume it next."""
        await self._reveal(research_id, principal)
        return await self.writer.restore_content(research_id, item_id)

    async def delete(self, research_id: Any, principal: Principal | None = None) -> dict[str, Any]:
        """Delete a research, cancelling it first if it runs here or elsewhere."""
        await self._reveal(research_id, principal)
        deleted = await self.stopper.delete(research_id)
        self.lookup.forget(deleted["research_id"])
        return deleted

    async def _reveal(self, research_id: Any, principal: Principal | None) -> None:
        """Nothing for the principal's own research (or without a principal); otherwise the
        very error an unknown id gets, so that another principal's ids cannot be probed."""
        if principal is None:
            return
        research_id = validate_research_id(research_id)
        owner = await self.io.read(lambda store: store.principal_of(research_id))
        if owner != principal.name:
            raise research_not_found(research_id)

    # ------------------------------------------------------------------ ownership and chores

    async def heartbeat(self) -> None:
        """Keep this process's leases alive and obey cancel requests from other processes."""
        await self.watch.heartbeat()

    async def recover_orphans(self) -> list[str]:
        """Mark research left active by stopped processes as interrupted; returns their ids."""
        return await self.watch.recover_orphans()

    async def housekeeping(self, resume: bool = True) -> dict[str, Any]:
        """Start-up chores: orphans, retention, and (if configured and ``resume``) auto-resume."""
        return await housekeeping(self, resume)

    # ------------------------------------------------------------------ reads (reads.py)

    async def status(
        self,
        research_id: Any,
        *,
        wait: bool = False,
        wait_timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        asker: Asker | None = None,
        principal: Principal | None = None,
    ) -> dict[str, Any]:
        """The research's status; with ``wait``, first block until it moves (long poll).

        While waiting, ``on_progress`` receives the status every second. Another principal's
        research is not found, as an unknown id. A research waiting for its plan's approval
        has the plan put to the user when ``asker`` can reach them; the status then says what
        became of their answer (``plan_answer``).
        """
        payload = await self._status(research_id, wait, wait_timeout, on_progress, principal)
        if payload["status"] == Status.WAITING.value and asker is not None:

            async def approve(rid: str, plan: list[str] | None, shown: Any) -> dict[str, Any]:
                await self.check_spending(principal)  # as the caller's own resume would
                return await self.resume(rid, plan=plan, shown=shown, principal=principal)

            answered = await self.approvals.ask(payload["research_id"], asker, approve)
            if answered is not None:
                payload = await self._status(research_id, False, None, None, principal)
                payload.update(answered.shown())
        return payload

    async def _status(
        self,
        research_id: Any,
        wait: bool,
        wait_timeout: float | None,
        on_progress: ProgressCallback | None,
        principal: Principal | None,
    ) -> dict[str, Any]:
        return await self.lookup.status(
            research_id,
            wait=wait,
            wait_timeout=wait_timeout,
            on_progress=on_progress,
            principal=name_of(principal),
        )

    async def report(
        self,
        research_id: Any,
        *,
        offset: int | None = None,
        max_chars: int | None = None,
        evidence: bool = False,
        version: int | None = None,
        principal: Principal | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        """A page of the report (of ``version``; None: the latest), its summary and sources
        (with ``evidence``: a page of its checked sentences and their quotes); and warnings."""
        await self._reveal(research_id, principal)
        return await self.lookup.report(
            research_id, offset=offset, max_chars=max_chars, evidence=evidence, version=version
        )

    async def claims(self, research_id: Any, principal: Principal | None = None) -> str:
        """Every checked sentence with its quotes, as JSON (the MCP resource)."""
        await self._reveal(research_id, principal)
        return await self.lookup.claims(research_id)

    async def full_report(
        self, research_id: Any, principal: Principal | None = None, version: int | None = None
    ) -> str:
        """The whole markdown report, of ``version`` (None: the latest; the MCP resource)."""
        await self._reveal(research_id, principal)
        return await self.lookup.full_report(research_id, version)

    async def answer(self, research_id: Any, principal: Principal | None = None) -> str:
        """The answer in the caller's shape, with its citations, as JSON (the MCP resource)."""
        await self._reveal(research_id, principal)
        return await self.lookup.answer(research_id)

    async def sources(self, research_id: Any, principal: Principal | None = None) -> str:
        """Every source the research gathered, cited or not, as JSON (the MCP resource)."""
        await self._reveal(research_id, principal)
        return await self.lookup.sources(research_id)

    async def all_events(self, research_id: Any, principal: Principal | None = None) -> str:
        """The whole audit trail, oldest first, as JSON (the MCP resource)."""
        await self._reveal(research_id, principal)
        return await self.lookup.all_events(research_id)

    async def recent_reports(
        self, limit: int, query_chars: int, principal: Principal | None = None
    ) -> list[tuple[str, str]]:
        """``(research_id, query cut to query_chars)`` of the newest completed research (of
        ``principal`` only, when given)."""
        return await self.lookup.recent_reports(limit, query_chars, name_of(principal))

    async def list(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        completed_only: bool = False,
        status: str | None = None,
        query: str | None = None,
        principal: Principal | None = None,
    ) -> dict[str, Any]:
        """Research newest first, optionally of some statuses only, or whose question holds
        every word of ``query`` (of ``principal`` only, when given)."""
        return await self.lookup.listing(
            limit=limit,
            cursor=cursor,
            completed_only=completed_only,
            status=status,
            query=query,
            principal=name_of(principal),
        )

    async def events(
        self,
        research_id: Any,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        principal: Principal | None = None,
    ) -> dict[str, Any]:
        """A page of the research's audit trail, oldest first."""
        await self._reveal(research_id, principal)
        return await self.lookup.events(research_id, cursor=cursor, limit=limit)

    async def export(
        self,
        research_id: Any,
        *,
        format: str,
        path: str | None = None,
        overwrite: bool = False,
        workspace: Path | None = None,
        max_inline_chars: int | None = MAX_INLINE_CHARS,
        version: int | None = None,
        principal: Principal | None = None,
    ) -> dict[str, Any]:
        """The research (its report as of ``version``; None: the latest) as markdown, json,
        bibtex or ris: in the payload (bounded), or written to ``path`` inside ``workspace``."""
        await self._reveal(research_id, principal)
        loaded = await self.watch.load_checked(validate_research_id(research_id))
        state, number = at_version(loaded, version)
        return export_research(
            state,
            format,
            path=path,
            overwrite=overwrite,
            workspace=workspace or Path.cwd(),
            max_inline_chars=max_inline_chars,
            version=number,
        )

    async def health(self) -> dict[str, Any]:
        """Each provider and MCP source: reached (a cheap live call), or the problem and fix."""
        providers = self.providers  # its MCP sources' connections, opened by their searches
        report = await check_providers(providers)
        return await with_mcp_sources(report, providers.settings, providers.mcp_sources)
