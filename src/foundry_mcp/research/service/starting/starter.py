"""The start of a research: its request checked, the queued research saved, its run scheduled.

The checks come before anything is saved, so a research that cannot run fails at once, naming
the fix, instead of in the background.
"""

from __future__ import annotations

from typing import Any

import anyio

from foundry_mcp.context.runtime import ContextServices
from foundry_mcp.research.effort import PRESETS, Effort, check_effort
from foundry_mcp.research.language import check_language
from foundry_mcp.research.llm.calls import CallLog
from foundry_mcp.research.models import (
    Clarify,
    ResearchLimits,
    ResearchOptions,
    ResearchState,
    SearchOptions,
    utcnow,
)
from foundry_mcp.research.service.asking.asker import Asker
from foundry_mcp.research.service.asking.clarifier import clarify as clarify_question
from foundry_mcp.research.service.inputs import (
    check_bounds,
    check_clarify,
    check_preferred_sources,
    check_query,
    check_range,
    check_source_types,
    research_limits,
    resolve_mode,
)
from foundry_mcp.research.service.parts import ServiceParts
from foundry_mcp.research.service.payloads.status import shorten
from foundry_mcp.research.service.starting.request import ResearchRequest
from foundry_mcp.research.service.starting.started import started_payload
from foundry_mcp.research.workflow.report.answer_schema import check_output_schema_off_loop


class ResearchStarter(ServiceParts):
    """Starts this process's new researches."""

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
        waits after planning until the plan is approved (:mod:`..asking.plan_review`).

        The report is written in ``language`` when given, else in the question's language when
        it is recognised (:mod:`foundry_mcp.research.language`). ``bounds`` bound its sources,
        over the configured ones (:func:`..inputs.check_bounds`). With ``output_schema`` (a JSON
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
        fit_token_options(self.context, state)  # token budget options from [research]
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


def fit_token_options(context: ContextServices, state: ResearchState) -> None:
    """Resolve the research's token options from the settings of this moment.

    Called when a research starts and again when it resumes (``ResearchWriter.resume``): a
    resume after a settings change (for example ``allow_content_dropping`` after a
    ``CONTEXT_EXCEEDED`` failure) uses the new ones.
    """
    options, warnings = context.token_options(state.llm_provider, state.llm_model)
    state.options.token_budget = options
    for warning in warnings:
        state.warn(warning)
