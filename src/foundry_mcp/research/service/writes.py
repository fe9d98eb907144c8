"""The write side of the research service: start, resume and restore (cancel and delete are
``stopping``'s).

Start and resume check their input and the providers before anything is saved, so a research
that cannot run fails at once, naming the fix, instead of in the background.
"""

from __future__ import annotations

from typing import Any

import anyio

from foundry_mcp.config import Settings
from foundry_mcp.config.research_settings import LimitArgs
from foundry_mcp.context.runtime import ContextServices
from foundry_mcp.errors import InputError, InvalidStateError
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.research.effort import PRESETS, Effort, check_effort
from foundry_mcp.research.language import check_language
from foundry_mcp.research.llm.calls import CallLog
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    Clarify,
    Phase,
    ResearchLimits,
    ResearchMode,
    ResearchOptions,
    ResearchRequest,
    ResearchState,
    SearchOptions,
    Status,
    SubQueryStatus,
    utcnow,
)
from foundry_mcp.research.runs.jobs import JobRunner
from foundry_mcp.research.runs.runner import ResearchRunner
from foundry_mcp.research.service.asking.asker import Asker
from foundry_mcp.research.service.asking.clarifier import clarify as clarify_question
from foundry_mcp.research.service.asking.plan_review import approve, waits_for
from foundry_mcp.research.service.inputs import (
    check_bounds,
    check_can_continue,
    check_clarify,
    check_preferred_sources,
    check_query,
    check_range,
    check_source_types,
    research_limits,
    resolve_mode,
    stopped_parts,
)
from foundry_mcp.research.service.ownership import FencedEdit, OwnershipWatch
from foundry_mcp.research.service.payloads.started import started_payload
from foundry_mcp.research.service.payloads.status import shorten
from foundry_mcp.research.service.restore import restore_content
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.archive import StoreArchive
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.records import validate_research_id
from foundry_mcp.research.workflow.report.answer_schema import check_output_schema_off_loop


class ResearchWriter:
    """Starts and resumes this process's runs; restores content into any research."""

    def __init__(
        self,
        *,
        settings: Settings,
        io: AsyncStore,
        providers: ProviderRegistry,
        jobs: JobRunner,
        runner: ResearchRunner,
        owner: Owner,
        context: ContextServices,
        watch: OwnershipWatch,
    ) -> None:
        self.settings = settings
        self.io = io
        self.providers = providers
        self.jobs = jobs
        self.runner = runner
        self.owner = owner
        self.context = context
        self.watch = watch

    async def start(
        self,
        request: ResearchRequest,
        *,
        asker: Asker | None = None,
        principal: str | None = None,
    ) -> dict[str, Any]:
        """Check ``request``, save a queued research and start it in the background.

        With an ``asker`` (the user can be asked) and ``clarify`` not off, a vague question is
        first clarified with the user (:mod:`~foundry_mcp.research.service.asking.clarifier`);
        without one, the planner states the assumptions it makes. ``review_plan``: the research
        waits after planning until the plan is approved (:mod:`.asking.plan_review`).

        The report is written in ``language`` when given, else in the question's language when
        it is recognised (:mod:`foundry_mcp.research.language`). ``bounds`` bound its sources,
        over the configured ones (:func:`.inputs.check_bounds`). With ``output_schema`` (a JSON
        Schema) it also answers in that shape, each value cited (:mod:`.answer_schema`).
        ``effort`` sets the limits, mode and checks the caller did not give (see
        :mod:`foundry_mcp.research.effort`). The research belongs to ``principal`` (None: the
        local user).
        """
        query = check_query(request.query)
        options, limits = await self._checked_options(request)
        llm_name, llm_model = self.providers.resolve_llm(request.provider_id, request.model)
        # A provider named by the caller runs every phase; otherwise the per-phase lists apply
        # (resolved now, to fail here naming the key).
        routes = {} if request.provider_id else self.providers.resolve_routes()
        search, warnings = self.providers.search_providers(options.search.source_types)
        state = ResearchState(
            principal=principal,
            query=query,
            system_prompt=(request.system_prompt or None),
            limits=limits,
            options=options,
            mode=options.mode.requested,
            llm_provider=llm_name,
            llm_model=llm_model,
            search_providers=search,
            warnings=warnings,
        )
        stated = self._provider_statement(request.provider_id, llm_name)
        if stated is not None:
            state.metadata["provider_choice"] = stated
        if options.search.bounds is not None:
            state.metadata["bounds"] = self.providers.bounds_report(search, options.search.bounds)
        self._fit_settings(state)  # token budget options from [research]
        if asker is not None and options.clarify != Clarify.OFF:
            llm = await self.runner.research_llm(state, CallLog(), journaled=False)
            wait = self.settings.research.clarify_timeout
            state.clarification = await clarify_question(llm, state, asker, wait)
        state.queued_at = utcnow()  # its deadline counts from here, not while its user answered
        await self._save_and_run(state)
        return started_payload(state, routes, warnings)

    async def _checked_options(
        self, request: ResearchRequest
    ) -> tuple[ResearchOptions, ResearchLimits]:
        """The request's options and limits, each checked (``InputError`` naming the field),
        over the effort's preset and the ``[research]`` settings."""
        research = self.settings.research
        written_in = check_language(request.language) if request.language is not None else None
        kinds = check_source_types(request.source_types)
        preferred = check_preferred_sources(request.preferred_sources)
        bounded = check_bounds(request.bounds or {}, research)
        schema = (
            await check_output_schema_off_loop(request.output_schema)
            if request.output_schema is not None
            else None
        )
        chosen = check_effort(request.effort)
        asking = check_clarify(request.clarify, research.clarify)
        max_time_s = request.max_time_s
        if max_time_s is not None:
            check_range("max_time_s", max_time_s, 5, 86400, integer=False)
        preset = PRESETS[chosen or Effort.STANDARD]
        mode_options = resolve_mode(research, request.mode or preset.mode)
        limits = research_limits(research, None, preset.limits(**request.limits))
        if preset.whole_pages and request.limits.get("reading_budget") is None:
            limits.reading_budget = None
        options = ResearchOptions(
            verify_citations=research.deep_research_verify_citations,
            parallel_writing=research.deep_research_parallel_writing,
            pinned_provider=bool(request.provider_id),
            preferred_sources=preferred,
            report_quotes=self.settings.report.quotes,
            language=written_in,
            language_from_question=written_in is None,
            clarify=asking,
            review_plan=bool(request.review_plan),
            output_schema=schema,
            max_verified_claims=preset.max_verified_claims
            or research.deep_research_verification_max_claims,
            gate_retries=research.deep_research_gate_retries,
            enable_reflection=research.deep_research_enable_reflection
            if preset.reflection is None
            else preset.reflection,
            effort=(chosen or Effort.STANDARD).value,
            max_time_s=float(max_time_s) if max_time_s is not None else research.max_time_s,
            phase_timeouts=research.phase_timeouts(),
            stall_timeout=research.deep_research_stall_timeout,
            mode=mode_options,
            search=SearchOptions(
                source_types=kinds,
                strategy=research.deep_research_search_strategy,
                bounds=bounded,
                private_text_in_public=research.private_text_in_public_searches,
            ),
        )
        return options, limits

    def _provider_statement(self, provider_id: str | None, llm_name: str) -> str | None:
        """What to say of a provider found on this machine (no configuration named one), said
        once, when the research starts; None otherwise."""
        choice = self.providers.llm_choice
        if choice is None or not choice.detected or provider_id or llm_name != choice.provider:
            return None
        return choice.statement

    async def _save_and_run(self, state: ResearchState) -> None:
        """Save the queued research under our lease, then schedule its run."""
        created: dict[str, Any] = {"query": shorten(state.query, 300)}
        if state.principal is not None:
            created["principal"] = state.principal
        # Saved before its run is scheduled; a caller that gives up meanwhile does not leave a
        # research saved and never run (shielded).
        lease = self.watch.lease_seconds
        with self.jobs.starting(state.id), anyio.CancelScope(shield=True):
            # Asked first: no queued write names it yet, and its caller waits for it.
            await self.io.write(lambda store: store.create(state, self.owner, lease), first=True)
            self.runner.event(state.id, "created", created)
            self.jobs.start(state.id, self.runner.run)

    async def resume(
        self,
        research_id: Any,
        limits: LimitArgs | None = None,
        *,
        plan: Any = None,
        patient: bool = False,
        shown: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Continue an unfinished research from its saved phase, without redoing work.

        A completed research given a larger ``max_iterations`` continues with a refinement
        round, if gaps are still open. A research waiting for its plan's approval goes on with
        the plan, or with ``plan`` (:mod:`.asking.plan_review`); with ``shown`` (the plan an approval
        form showed) only while it still waits for that plan, undecided: ``InvalidStateError``
        otherwise. ``patient``: its reads wait out a short outage of the database, as its
        writes do (a takeover, which no user is waiting on).
        """
        research_id = validate_research_id(research_id)
        # Claimed under our lease before its run starts, and never left claimed but not run
        # by a caller that gives up meanwhile (shielded).
        with self.jobs.starting(research_id), anyio.CancelScope(shield=True):
            resumed = await self._resume(research_id, limits, patient, plan, shown)
        return resumed

    async def _resume(
        self,
        research_id: str,
        limits: LimitArgs | None,
        patient: bool,
        plan: Any,
        shown: dict[str, Any] | None,
    ) -> dict[str, Any]:
        state = await self.watch.load_checked(research_id, patient=patient)
        # A form's late approval: the claim below fails if it changes between this read and then.
        if shown is not None and not waits_for(state, shown):
            raise InvalidStateError(
                f"Research {research_id} no longer waits for the plan the form showed.",
                remediation="Read its status: action='deep-research-status'.",
            )
        if state.status.is_active:
            raise InvalidStateError(
                f"Research {research_id} is {state.status.value}; it is still being worked on.",
                remediation="Wait for it with action='deep-research-status' and wait=true.",
            )
        if plan is not None and state.status is not Status.WAITING:
            raise InputError(
                f"Research {research_id} is {state.status.value}, not waiting for its plan's "
                "approval; plan applies only to a research started with review_plan=true "
                "whose status is waiting.",
                remediation="Resume it without plan.",
                details={"field": "plan"},
            )
        edited = approve(state, plan) if state.status is Status.WAITING else None
        continuing = state.status is Status.COMPLETED
        given = limits or {}
        if continuing:
            check_can_continue(state, given.get("max_iterations"))
        state.limits = research_limits(self.settings.research, state.limits, given)
        # The provider must still be usable: fail now, not in the background.
        self.providers.resolve_llm(f"{state.llm_provider}:{state.llm_model}", None)
        if not state.options.pinned_provider:
            self.providers.resolve_routes()
        self.providers.usable_search_providers(state.search_providers)
        if not await self.watch.claim_to_resume(state):
            raise InvalidStateError(
                f"Research {research_id} was just resumed by another process.",
                remediation="Follow it with action='deep-research-status'.",
            )
        previous = state.status
        if continuing:  # a round more, or the sub-questions that were stopped
            state.phase = Phase.GATHERING if stopped_parts(state) else Phase.REFINEMENT
        state.record(
            AgentDecision(
                agent=AgentRole.SUPERVISOR,
                action="resume",
                rationale=f"Resumed from {previous.value} at {state.phase.value}.",
                inputs={"phase": state.phase.value, "iteration": state.iteration},
                outputs={"limits": state.limits.model_dump()},
            )
        )
        for key in (
            "cancelled",
            "timeout",
            "interrupted",
            "failed",
            "timeout_phase",
            "cost_ceiling_reached",
        ):
            state.metadata.pop(key, None)
        if state.phase is Phase.GATHERING:  # searches that failed get another chance
            for sub_query in state.sub_queries:
                if (
                    sub_query.iteration == state.iteration
                    and sub_query.status is SubQueryStatus.FAILED
                ):
                    sub_query.status = SubQueryStatus.PENDING
                    sub_query.error = None
        state.status = Status.QUEUED
        state.completed_at = None
        state.error = None
        self._fit_settings(state)  # current token settings (see restore_content)
        await self.io.write(lambda store: store.save(state, self.owner))
        self.runner.event(
            research_id,
            "resumed",
            {"from": previous.value, "phase": state.phase.value, "pid": self.owner.pid},
        )
        self.jobs.start(research_id, self.runner.run)
        resumed = {
            "research_id": research_id,
            "status": state.status.value,
            "phase": state.phase.value,
            "iteration": state.iteration,
            "resumed_from": previous.value,
        }
        if edited is not None:
            resumed["plan"] = "edited" if edited else "approved"
        return resumed

    async def restore_content(self, research_id: Any, item_id: Any) -> dict[str, Any]:
        """Bring a dropped (archived) source back into a stopped research; resume it next."""
        research_id = validate_research_id(research_id)
        if not isinstance(item_id, str) or not item_id.strip():
            raise InputError("item_id must name a source id.", details={"field": "item_id"})
        state = await self.watch.load_checked(research_id)
        if state.mode is not ResearchMode.SIMPLE:
            raise InvalidStateError(
                f"Research {research_id} ran in {state.mode.value} mode, whose sources belong to "
                "its researchers; restoring archived content works for simple research only.",
                remediation=(
                    "Start a new research in simple mode (mode='simple') on the part you need, "
                    "or raise the token budget (model_context_overrides) so nothing is dropped."
                ),
            )
        enabled = state.options.token_budget.archive_enabled
        item = item_id.strip()

        def restore(store: Store) -> dict[str, Any]:
            """Read what the restore needs (the pages the store keeps, the archive in the store)
            and save, fenced: only while nobody has taken the research up meanwhile."""
            edit = FencedEdit.read(store, research_id)
            store.load_pages(edit.state)  # a text the store still keeps needs no archive
            disk = self.context.archive()
            archive = StoreArchive.beside(disk, store, research_id) if enabled else None
            result = restore_content(edit.state, item, archive)
            if not edit.save():
                raise InvalidStateError(
                    f"Research {research_id} was resumed by another server meanwhile.",
                    remediation="Restore the source once it stops "
                    "(action='deep-research-status' says when).",
                )
            return result

        result = await self.io.write(restore)
        self.runner.event(research_id, "content_restored", {"item_id": item}, owned=False)
        return result

    def _fit_settings(self, state: ResearchState) -> None:
        """Resolve the research's token options from the settings of this moment.

        Called when a research starts and when it resumes: a resume after a settings change
        (for example ``allow_content_dropping`` after a ``CONTEXT_EXCEEDED`` failure) uses the
        new ones.
        """
        options, warnings = self.context.token_options(state.llm_provider, state.llm_model)
        state.options.token_budget = options
        for warning in warnings:
            state.warn(warning)
