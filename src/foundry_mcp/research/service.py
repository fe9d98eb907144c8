"""The use cases of deep research: start, status, report, list, events, cancel, resume, delete.

The MCP tool and the CLI both call this service; it validates input, talks to the store and the
job runner, and returns plain payload dictionaries. It raises ``FoundryError`` for everything a
user can act on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from foundry_mcp.config import LIMIT_BOUNDS, Settings
from foundry_mcp.context.fidelity import report_fidelity_block
from foundry_mcp.context.restore import restore_content
from foundry_mcp.context.runtime import ContextServices
from foundry_mcp.context.runtime import prepare as prepare_context
from foundry_mcp.errors import (
    FoundryError,
    InputError,
    InvalidStateError,
    ReportNotReadyError,
)
from foundry_mcp.providers.health import check_providers
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.research.jobs import JobRunner
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    ExplorationMode,
    HypothesisMode,
    ModeOptions,
    Phase,
    ResearchLimits,
    ResearchMode,
    ResearchOptions,
    ResearchState,
    Status,
    SubQueryStatus,
)
from foundry_mcp.research.report import report_page, report_summary
from foundry_mcp.research.runner import ResearchRunner, abort
from foundry_mcp.research.store import Owner, ResearchStore, validate_research_id
from foundry_mcp.research.views import (
    cited_sources,
    decision_log,
    shorten,
    status_payload,
    usage_payload,
)
from foundry_mcp.research.workflow.supervisor import SupervisorHooks

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 200_000
MAX_WAIT_SECONDS = 60.0
WAIT_POLL_SECONDS = 0.1
CANCEL_WAIT_SECONDS = 2.0
DELETE_WAIT_SECONDS = 10.0
LEASE_SECONDS = 20.0
HEARTBEAT_SECONDS = 0.25  # how often cancel requests from other processes are noticed
RENEW_EVERY_SECONDS = 5.0
AUTO_RESUME_LIMIT = 20  # newest interrupted research resumed at start-up with auto_resume

ProgressCallback = Callable[[dict[str, Any]], Awaitable[None]]


def check_range(name: str, value: Any, low: float, high: float, *, integer: bool = True) -> Any:
    """``value`` if it is a number within [low, high]; ``InputError`` naming the field if not."""
    kind = "an integer" if integer else "a number"
    valid_type = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not valid_type:
        raise InputError(
            f"{name} must be {kind} between {low:g} and {high:g} (got {value!r}).",
            details={"field": name},
        )
    if not low <= value <= high:
        raise InputError(
            f"{name} must be between {low:g} and {high:g} (got {value}).",
            remediation=f"Pass {name} within {low:g}..{high:g}, or leave it out for the default.",
            details={"field": name},
        )
    return value


class ResearchService:
    """Deep research for one process: starts background runs and answers about any research."""

    def __init__(
        self,
        settings: Settings,
        store: ResearchStore,
        providers: ProviderRegistry,
        jobs: JobRunner,
        hooks: SupervisorHooks | None = None,
        owner: Owner | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.providers = providers
        self.jobs = jobs
        self.owner = owner or Owner()
        self.runner = ResearchRunner(store, providers, self.owner, hooks)
        self.context = ContextServices(settings, providers)  # token management

    @property
    def call_logs(self) -> dict[str, Any]:
        """Timing of provider calls per research run by this process (for benchmarks)."""
        return self.runner.call_logs

    # ------------------------------------------------------------------ start

    def start_warnings(self) -> list[str]:
        """What a user starting a research should know about the configuration."""
        return self.settings.trust_warnings()

    def start(
        self,
        query: Any,
        *,
        system_prompt: str | None = None,
        provider_id: str | None = None,
        model: str | None = None,
        max_iterations: int | None = None,
        max_sub_queries: int | None = None,
        max_sources_per_query: int | None = None,
        max_concurrent: int | None = None,
        task_timeout: float | None = None,
        mode: str | None = None,
    ) -> dict[str, Any]:
        """Validate, save a queued research and start it in the background."""
        query = _check_query(query)
        mode_options = self._mode_options(mode)
        limits = self._limits(
            None,
            max_iterations=max_iterations,
            max_sub_queries=max_sub_queries,
            max_sources_per_query=max_sources_per_query,
            max_concurrent=max_concurrent,
            task_timeout=task_timeout,
        )
        llm_name, llm_model = self.providers.resolve_llm(provider_id, model)
        routes = self.providers.resolve_routes()  # per-phase lists: fail now, naming the key
        search, warnings = self.providers.usable_search_providers(
            self.settings.research.deep_research_providers
        )
        research = self.settings.research
        state = ResearchState(
            query=query,
            system_prompt=(system_prompt or None),
            limits=limits,
            options=ResearchOptions(
                verify_citations=research.deep_research_verify_citations,
                max_verified_claims=research.deep_research_verification_max_claims,
                gate_retries=research.deep_research_gate_retries,
                enable_reflection=research.deep_research_enable_reflection,
                phase_timeouts=research.phase_timeouts(),
                mode=mode_options,
            ),
            mode=mode_options.requested,
            llm_provider=llm_name,
            llm_model=llm_model,
            search_providers=search,
            warnings=warnings,
        )
        prepare_context(self.context, state)  # token budget options from [research]
        self.store.create(state, self.owner, LEASE_SECONDS)
        self.runner.event(state.id, "created", {"query": shorten(query, 300)})
        self.jobs.start(state.id, self.runner.run)
        return {
            "research_id": state.id,
            "status": state.status.value,
            "phase": state.phase.value,
            "message": (
                "Research started in the background. Call action='deep-research-status' with "
                "this research_id (wait=true to block until it moves), then "
                "action='deep-research-report'."
            ),
            "limits": limits.model_dump(),
            "mode": mode_options.requested.value,
            "provider": f"{llm_name}:{llm_model}",
            "phase_providers": {
                group: [f"{name}:{chosen}" for name, chosen in pairs]
                for group, pairs in routes.items()
            },
        }

    def _mode_options(self, mode: str | None) -> ModeOptions:
        """The research's mode and the modes' settings; ``mode`` overrides ``[research] mode``."""
        research = self.settings.research
        requested = research.mode if mode is None else mode
        try:
            chosen = ResearchMode(requested)
        except ValueError:
            raise InputError(
                f"mode must be one of {', '.join(m.value for m in ResearchMode)} (got {mode!r}).",
                remediation="Pass mode='auto' (the default), 'simple', 'hierarchical' or "
                "'hypotheses', or leave it out.",
                details={"field": "mode"},
            ) from None
        return ModeOptions(
            requested=chosen,
            min_sub_questions=research.min_sub_questions,
            max_sub_questions=research.max_sub_questions,
            sub_question_min_iterations=research.sub_question_min_iterations,
            sub_question_max_iterations=research.sub_question_max_iterations,
            sub_question_max_queries=research.sub_question_max_queries,
            max_hypotheses_per_task=research.max_hypotheses_per_task,
            hypothesis_mode=HypothesisMode(research.hypothesis_mode),
            exploration_mode=ExplorationMode(research.exploration_mode),
            min_confidence_threshold=research.min_confidence_threshold,
        )

    def _limits(self, base: ResearchLimits | None, **given: Any) -> ResearchLimits:
        research = self.settings.research
        limits = (
            base.model_copy()
            if base
            else ResearchLimits(
                max_iterations=research.deep_research_max_iterations,
                max_sub_queries=research.deep_research_max_sub_queries,
                max_sources_per_query=research.deep_research_max_sources,
                max_concurrent=research.deep_research_max_concurrent,
                task_timeout=research.deep_research_timeout,
            )
        )
        for name, value in given.items():
            if value is not None:
                low, high = LIMIT_BOUNDS[name]
                check_range(name, value, low, high, integer=name != "task_timeout")
                setattr(limits, name, float(value) if name == "task_timeout" else value)
        return limits

    # ------------------------------------------------------------------ ownership

    async def heartbeat(self) -> None:
        """Keep this process's leases alive and obey cancel requests from other processes."""
        last_renewal = 0.0
        while True:
            running = self.jobs.running_ids()
            try:
                if time.monotonic() - last_renewal >= RENEW_EVERY_SECONDS:
                    cancel = self.store.renew(self.owner, running, LEASE_SECONDS)
                    last_renewal = time.monotonic()
                else:
                    cancel = self.store.cancel_requests(self.owner, running)
            except Exception:  # a busy or failing disk must not kill the heartbeat
                log.exception("heartbeat could not reach the store")
                cancel = set()
            for research_id in cancel:
                self.runner.event(research_id, "cancel_received", {"pid": self.owner.pid})
                self.jobs.cancel(research_id)
            await anyio.sleep(HEARTBEAT_SECONDS)

    def _load_checked(self, research_id: str) -> ResearchState:
        """Load a state; an active one whose owner is gone is recorded ``interrupted``."""
        state = self.store.load(research_id)
        if not state.status.is_active:
            return state
        ownership = self.store.ownership(research_id)
        if ownership is None:
            return state
        if ownership.is_alive(self.owner, self.jobs.is_running(research_id)):
            return state
        if self.store.disown(research_id, ownership.token):
            state = self.store.load(research_id)
            if state.status.is_active:
                abort(state, Status.INTERRUPTED, "interrupted")
                state.error = "The process running this research stopped before it finished."
                self.store.save(state)
                self.runner.event(research_id, "interrupted", {"previous_owner_pid": ownership.pid})
        return self.store.load(research_id)

    def recover_orphans(self) -> list[str]:
        """Mark research left active by stopped processes as interrupted; returns their ids."""
        recovered = []
        for research_id in self.store.active_ids():
            try:
                if self._load_checked(research_id).status is Status.INTERRUPTED:
                    recovered.append(research_id)
            except FoundryError:
                continue
        return recovered

    def housekeeping(self) -> dict[str, Any]:
        """Start-up chores: orphans, retention, and (if configured) auto-resume."""
        research = self.settings.research
        recovered = self.recover_orphans()
        removed = 0
        if research.retention_days:
            removed = self.store.delete_older_than(research.retention_days)
        resumed = []
        if research.auto_resume:
            interrupted, _ = self.store.list_page(AUTO_RESUME_LIMIT, statuses=[Status.INTERRUPTED])
            for research_id in [item.research_id for item in interrupted]:
                try:
                    self.resume(research_id)
                    resumed.append(research_id)
                except FoundryError as exc:
                    log.warning("auto-resume of %s failed: %s", research_id, exc.message)
        archived = self.context.purge_archive()  # content_archive_ttl_hours
        return {
            "interrupted": recovered,
            "deleted": removed,
            "resumed": resumed,
            "archive_purged": archived,
        }

    # ------------------------------------------------------------------ status

    async def status(
        self,
        research_id: Any,
        *,
        wait: bool = False,
        wait_timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """The research's status; with ``wait``, first block until it moves (long poll).

        While waiting, ``on_progress`` receives the status every second.
        """
        research_id = validate_research_id(research_id)
        timeout = 30.0 if wait_timeout is None else wait_timeout
        check_range("wait_timeout", timeout, 0, MAX_WAIT_SECONDS, integer=False)
        state = self._load_checked(research_id)
        if wait and state.status.is_active:
            before = self.store.fingerprint(research_id)
            deadline = time.monotonic() + timeout
            next_report = time.monotonic()
            while time.monotonic() < deadline:
                if on_progress is not None and time.monotonic() >= next_report:
                    await on_progress(self._status_of(self._load_checked(research_id)))
                    next_report = time.monotonic() + 1.0
                await anyio.sleep(min(WAIT_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
                now = self.store.fingerprint(research_id)
                if now is None or before is None or now[:3] != before[:3]:
                    break
            state = self._load_checked(research_id)
        return self._status_of(state)

    def _status_of(self, state: ResearchState) -> dict[str, Any]:
        ownership = self.store.ownership(state.id)
        return status_payload(
            state,
            cancel_requested=bool(ownership and ownership.cancel_requested),
            last_event_at=self.store.last_event_at(state.id),
        )

    # ------------------------------------------------------------------ report

    def report(
        self, research_id: Any, *, offset: int | None = None, max_chars: int | None = None
    ) -> tuple[dict[str, Any], list[str]]:
        """A page of the report, its summary and sources; and warnings for the envelope."""
        research_id = validate_research_id(research_id)
        offset = 0 if offset is None else check_range("offset", offset, 0, 10**9)
        max_chars = (
            20_000 if max_chars is None else check_range("max_chars", max_chars, 1000, 100_000)
        )
        state = self._load_checked(research_id)
        if state.report is None:
            raise self._not_ready(state)
        warnings = []
        if state.status is not Status.COMPLETED:
            warnings.append(
                f"The research is {state.status.value}: this report is from an unfinished run."
            )
        metadata = state.report_metadata
        payload = {
            "research_id": state.id,
            "status": state.status.value,
            "summary": report_summary(state.report),
            **report_page(state.report, offset, max_chars),
            "report_metadata": metadata.model_dump() if metadata else None,
            "sources": cited_sources(state),
            "decision_log": decision_log(state),
            "usage": usage_payload(state),
            "fidelity": report_fidelity_block(state),
        }
        return payload, warnings

    def full_report(self, research_id: Any) -> str:
        """The whole markdown report (the MCP resource)."""
        state = self._load_checked(validate_research_id(research_id))
        if state.report is None:
            raise self._not_ready(state)
        return state.report

    @staticmethod
    def _not_ready(state: ResearchState) -> ReportNotReadyError:
        if state.status.is_active:
            return ReportNotReadyError(
                f"Research {state.id} is {state.status.value} in {state.phase.value}; "
                "no report yet."
            )
        return ReportNotReadyError(
            f"Research {state.id} ended {state.status.value} before writing a report.",
            remediation="Resume it with action='deep-research-resume' to finish the report.",
        )

    # ------------------------------------------------------------------ health

    async def health(self) -> dict[str, Any]:
        """Every known or configured provider: key present, a cheap live call, and the fix."""
        return await check_providers(self.providers)

    # ------------------------------------------------------------------ list and events

    def list(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        completed_only: bool = False,
        status: str | None = None,
    ) -> dict[str, Any]:
        """Research newest first, optionally of some statuses only."""
        limit = 20 if limit is None else check_range("limit", limit, 1, 100)
        statuses = _parse_statuses(status)
        items, next_cursor = self.store.list_page(limit, cursor, bool(completed_only), statuses)
        return {
            "items": [
                {
                    "research_id": item.research_id,
                    "query": shorten(item.query, 120),
                    "status": item.status.value,
                    "phase": item.phase,
                    "iteration": item.iteration,
                    "created_at": item.created_at,
                    "updated_at": item.updated_at,
                }
                for item in items
            ],
            "next_cursor": next_cursor,
        }

    def events(
        self, research_id: Any, *, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """A page of the research's audit trail, oldest first."""
        research_id = validate_research_id(research_id)
        limit = 50 if limit is None else check_range("limit", limit, 1, 500)
        self.store.load(research_id)  # RESEARCH_NOT_FOUND for unknown ids
        after = 0
        if cursor:
            if not cursor.isdigit():
                raise InputError(
                    "cursor is not a cursor returned by deep-research-events.",
                    remediation="Pass next_cursor from the previous page unchanged.",
                    details={"field": "cursor"},
                )
            after = int(cursor)
        events = self.store.events(research_id, after, limit)
        return {
            "research_id": research_id,
            "events": [{"seq": e.seq, "at": e.at, "kind": e.kind, "data": e.data} for e in events],
            "next_cursor": str(events[-1].seq) if len(events) == limit else None,
        }

    # ------------------------------------------------------------------ cancel, resume, delete

    async def cancel(self, research_id: Any) -> dict[str, Any]:
        """Stop a running research; its partial results stay and it can be resumed."""
        research_id = validate_research_id(research_id)
        state = self._load_checked(research_id)
        if state.status in (Status.CANCELLING, Status.CANCELLED):
            return {"research_id": research_id, "status": state.status.value}
        if not state.status.is_active:
            raise InvalidStateError(
                f"Research {research_id} is {state.status.value}; there is nothing to cancel.",
                remediation="Only queued or running research can be cancelled.",
            )
        self.runner.event(research_id, "cancel_requested", {"by_pid": self.owner.pid})
        self.store.request_cancel(research_id)  # status says "cancelling" until the run stops
        if self.jobs.cancel(research_id):
            await self.jobs.wait(research_id, CANCEL_WAIT_SECONDS)
        else:  # run by another process: its heartbeat picks the request up
            with anyio.move_on_after(CANCEL_WAIT_SECONDS):
                while self.store.load(research_id).status.is_active:
                    await anyio.sleep(WAIT_POLL_SECONDS)
        status = self._status_of(self.store.load(research_id))["status"]
        return {"research_id": research_id, "status": status}

    def resume(
        self,
        research_id: Any,
        *,
        max_iterations: int | None = None,
        max_sub_queries: int | None = None,
        max_sources_per_query: int | None = None,
        max_concurrent: int | None = None,
        task_timeout: float | None = None,
    ) -> dict[str, Any]:
        """Continue an unfinished research from its saved phase, without redoing work.

        A completed research given a larger ``max_iterations`` continues with a refinement
        round, if gaps are still open.
        """
        research_id = validate_research_id(research_id)
        state = self._load_checked(research_id)
        if state.status.is_active:
            raise InvalidStateError(
                f"Research {research_id} is {state.status.value}; it is still being worked on.",
                remediation="Wait for it with action='deep-research-status' and wait=true.",
            )
        continuing = state.status is Status.COMPLETED
        if continuing:
            self._check_can_continue(state, max_iterations)
        state.limits = self._limits(
            state.limits,
            max_iterations=max_iterations,
            max_sub_queries=max_sub_queries,
            max_sources_per_query=max_sources_per_query,
            max_concurrent=max_concurrent,
            task_timeout=task_timeout,
        )
        # The provider must still be usable: fail now, not in the background.
        self.providers.resolve_llm(f"{state.llm_provider}:{state.llm_model}", None)
        self.providers.resolve_routes()
        self.providers.usable_search_providers(state.search_providers)
        ownership = self.store.ownership(research_id)
        expected = ownership.token if ownership else None
        if not self.store.claim(research_id, self.owner, LEASE_SECONDS, expected):
            raise InvalidStateError(
                f"Research {research_id} was just resumed by another process.",
                remediation="Follow it with action='deep-research-status'.",
            )
        previous = state.status
        if continuing:
            state.phase = Phase.REFINEMENT
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
        prepare_context(self.context, state)  # current token settings (see restore_content)
        self.store.save(state, self.owner)
        self.runner.event(
            research_id,
            "resumed",
            {"from": previous.value, "phase": state.phase.value, "pid": self.owner.pid},
        )
        self.jobs.start(research_id, self.runner.run)
        return {
            "research_id": research_id,
            "status": state.status.value,
            "phase": state.phase.value,
            "iteration": state.iteration,
            "resumed_from": previous.value,
        }

    @staticmethod
    def _check_can_continue(state: ResearchState, max_iterations: int | None) -> None:
        if state.mode is not ResearchMode.SIMPLE:
            raise InvalidStateError(
                f"Research {state.id} is a completed {state.mode.value} research; only a simple "
                "research can be continued with more iterations.",
                remediation=(
                    "Read it with action='deep-research-report'. To go deeper, start a new "
                    "research on the part you need (a sub-question or a hypothesis), or raise "
                    "sub_question_max_iterations / max_hypotheses_per_task for the next one."
                ),
            )
        if max_iterations is None or max_iterations <= state.iteration:
            raise InvalidStateError(
                f"Research {state.id} is already completed "
                f"(iteration {state.iteration} of {state.limits.max_iterations}).",
                remediation=(
                    "Read it with action='deep-research-report'. To research further, resume "
                    f"with max_iterations above {state.iteration}, or start a new research."
                ),
            )
        if not state.unaddressed_gaps():
            raise InvalidStateError(
                f"Research {state.id} is completed and has no open gap left to research.",
                remediation="Start a new research with a more specific question.",
            )

    def restore_content(self, research_id: Any, item_id: Any) -> dict[str, Any]:
        """Bring a dropped (archived) source back into a stopped research; resume it next."""
        research_id = validate_research_id(research_id)
        if not isinstance(item_id, str) or not item_id.strip():
            raise InputError("item_id must name a source id.", details={"field": "item_id"})
        state = self._load_checked(research_id)
        if state.mode is not ResearchMode.SIMPLE:
            raise InvalidStateError(
                f"Research {research_id} ran in {state.mode.value} mode, whose sources belong to "
                "its researchers; restoring archived content works for simple research only.",
                remediation=(
                    "Start a new research in simple mode (mode='simple') on the part you need, "
                    "or raise the token budget (model_context_overrides) so nothing is dropped."
                ),
            )
        archive = self.context.archive() if state.options.token_budget.archive_enabled else None
        result = restore_content(state, item_id.strip(), archive)
        self.store.save(state)
        self.runner.event(research_id, "content_restored", {"item_id": item_id.strip()})
        return result

    async def delete(self, research_id: Any) -> dict[str, Any]:
        """Delete a research, cancelling it first if it runs here or elsewhere."""
        research_id = validate_research_id(research_id)
        state = self._load_checked(research_id)  # RESEARCH_NOT_FOUND before anything else
        self.runner.deleted.add(research_id)
        if self.jobs.cancel(research_id):
            await self.jobs.wait(research_id, DELETE_WAIT_SECONDS)
        elif state.status.is_active:
            self.store.request_cancel(research_id)
        self.store.delete(research_id)
        self.runner.call_logs.pop(research_id, None)
        return {"research_id": research_id, "deleted": True}


# ---------------------------------------------------------------------- helpers


def _check_query(query: Any) -> str:
    if query is None or (isinstance(query, str) and not query.strip()):
        raise InputError(
            "query is required to start a deep research and must not be empty.",
            remediation="Pass the research question as query='...'.",
            details={"field": "query"},
        )
    if not isinstance(query, str):
        raise InputError("query must be a string.", details={"field": "query"})
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(
            f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}.",
            remediation="Shorten the question; put long background in system_prompt or "
            "summarise it.",
            details={"field": "query"},
        )
    return query.strip()


def _parse_statuses(raw: str | None) -> list[Status]:
    """``"running,failed"`` as statuses; ``InputError`` naming the bad value."""
    if raw is None or not raw.strip():
        return []
    statuses = []
    for part in raw.split(","):
        name = part.strip().lower()
        try:
            statuses.append(Status(name))
        except ValueError:
            raise InputError(
                f"status {name!r} is not a research status.",
                remediation=f"Use one or more of: {', '.join(s.value for s in Status)}.",
                details={"field": "status"},
            ) from None
    return statuses
