"""The use cases of deep research: start, status, report, list, cancel, resume, delete.

The MCP tool and the CLI both call this service; it validates input, talks to the store and the
job runner, and returns plain payload dictionaries. It raises ``FoundryError`` for everything a
user can act on.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from typing import Any

import anyio

from foundry_mcp.config import Settings
from foundry_mcp.errors import (
    FoundryError,
    InputError,
    InvalidStateError,
    ProviderError,
    ReportNotReadyError,
)
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.research.jobs import Job, JobRunner
from foundry_mcp.research.models import (
    AgentDecision,
    AgentRole,
    Phase,
    ResearchLimits,
    ResearchOptions,
    ResearchState,
    Status,
    SubQueryStatus,
    utcnow,
)
from foundry_mcp.research.report import report_page, report_summary
from foundry_mcp.research.store import ResearchStore, validate_research_id
from foundry_mcp.research.workflow.calls import CallLog, ResearchLLM
from foundry_mcp.research.workflow.supervisor import Supervisor, SupervisorHooks

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 200_000
LIMIT_RANGES: dict[str, tuple[float, float]] = {
    "max_iterations": (1, 10),
    "max_sub_queries": (1, 20),
    "max_sources_per_query": (1, 50),
    "max_concurrent": (1, 10),
    "task_timeout": (10, 86400),
}
MAX_WAIT_SECONDS = 60.0
WAIT_POLL_SECONDS = 0.1
DELETE_WAIT_SECONDS = 10.0
RECENT_DECISIONS = 5


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
    ) -> None:
        self.settings = settings
        self.store = store
        self.providers = providers
        self.jobs = jobs
        self.hooks = hooks
        self.call_logs: dict[str, CallLog] = {}
        self._deleted: set[str] = set()

    # ------------------------------------------------------------------ start

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
    ) -> dict[str, Any]:
        """Validate, save a queued research and start it in the background."""
        query = _check_query(query)
        limits = self._limits(
            None,
            max_iterations=max_iterations,
            max_sub_queries=max_sub_queries,
            max_sources_per_query=max_sources_per_query,
            max_concurrent=max_concurrent,
            task_timeout=task_timeout,
        )
        llm_name, llm_model = self.providers.resolve_llm(provider_id, model)
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
            ),
            llm_provider=llm_name,
            llm_model=llm_model,
            search_providers=search,
            warnings=warnings,
        )
        self._claim(state)
        self.store.save(state)
        self.jobs.start(state.id, self._run)
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
            "provider": f"{llm_name}:{llm_model}",
        }

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
                low, high = LIMIT_RANGES[name]
                check_range(name, value, low, high, integer=name != "task_timeout")
                setattr(limits, name, float(value) if name == "task_timeout" else value)
        return limits

    # ------------------------------------------------------------------ the run

    async def _run(self, job: Job) -> None:
        """The background body of one research: supervisor, timeout and final status."""
        state = self.store.load(job.research_id)
        if job.cancel_requested:  # cancelled before it started: nothing to stop
            self._abort(state, Status.CANCELLED, "cancelled")
            self._save_run(state)
            return
        calls = self.call_logs.setdefault(state.id, CallLog())
        state.status = Status.RUNNING
        state.started_at = utcnow()
        state.error = None
        self._save_run(state)

        async def checkpoint() -> None:
            self._save_run(state)

        try:
            llm_provider = await anyio.to_thread.run_sync(self.providers.llm, state.llm_provider)
            search = [
                await anyio.to_thread.run_sync(self.providers.search, name)
                for name in state.search_providers
            ]
            llm = ResearchLLM(llm_provider, state.llm_model, state, calls)
            supervisor = Supervisor(state, llm, search, calls, checkpoint, self.hooks)
            with anyio.fail_after(state.limits.task_timeout):
                await supervisor.run()
        except TimeoutError:
            self._abort(state, Status.TIMED_OUT, "timeout")
            state.error = (
                f"The research exceeded its task_timeout of {state.limits.task_timeout:g} s "
                f"during {state.phase.value}."
            )
        except anyio.get_cancelled_exc_class():
            if job.cancel_requested:
                self._abort(state, Status.CANCELLED, "cancelled")
            else:
                self._abort(state, Status.INTERRUPTED, "interrupted")
                state.error = "The server stopped while the research was running."
            self._save_run(state)
            raise
        except FoundryError as exc:
            self._abort(state, Status.FAILED, "failed")
            state.error = f"{exc.message} {exc.remediation}".strip()
            if isinstance(exc, ProviderError):
                state.metadata["failed_provider"] = exc.provider
        except Exception:
            log.exception("research %s failed unexpectedly", state.id)
            self._abort(state, Status.FAILED, "failed")
            state.error = "An internal error stopped the research; see the server log."
        else:
            state.status = Status.COMPLETED
            state.completed_at = utcnow()
        self._save_run(state)

    def _save_run(self, state: ResearchState) -> None:
        """Save a run's state, unless the research was deleted while it ran."""
        if state.id not in self._deleted:
            self.store.save(state)

    @staticmethod
    def _abort(state: ResearchState, status: Status, reason: str) -> None:
        state.status = status
        state.completed_at = utcnow()
        state.metadata[reason] = True
        state.metadata["abort_phase"] = state.phase.value
        state.metadata["abort_iteration"] = state.iteration

    def _claim(self, state: ResearchState) -> None:
        state.owner_pid = os.getpid()
        state.owner_host = socket.gethostname()

    # ------------------------------------------------------------------ status

    async def status(
        self, research_id: Any, *, wait: bool = False, wait_timeout: float | None = None
    ) -> dict[str, Any]:
        """The research's status; with ``wait``, first block until it moves (long poll)."""
        research_id = validate_research_id(research_id)
        timeout = 30.0 if wait_timeout is None else wait_timeout
        check_range("wait_timeout", timeout, 0, MAX_WAIT_SECONDS, integer=False)
        state = self._load_checked(research_id)
        if wait and state.status.is_active:
            before = self.store.fingerprint(research_id)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                await anyio.sleep(min(WAIT_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
                now = self.store.fingerprint(research_id)
                if now is None or now[:3] != (before or now)[:3]:
                    break
            state = self._load_checked(research_id)
        return self._status_payload(state)

    def _status_payload(self, state: ResearchState) -> dict[str, Any]:
        return {
            "research_id": state.id,
            "query": _shorten(state.query, 200),
            "status": state.status.value,
            "phase": state.phase.value,
            "iteration": state.iteration,
            "max_iterations": state.limits.max_iterations,
            "counts": {
                "sub_queries": len(state.sub_queries),
                "sub_queries_completed": len(state.completed_sub_queries()),
                "sources": len(state.sources),
                "findings": len(state.findings),
                "gaps": len(state.gaps),
                "gaps_unaddressed": len(state.unaddressed_gaps()),
            },
            "elapsed_s": round(state.elapsed_seconds(), 2),
            "tokens": {
                "input": state.usage.input_tokens,
                "output": state.usage.output_tokens,
                "total": state.usage.total_tokens,
                "calls": state.usage.calls,
            },
            "search_calls": state.search_calls,
            "provider": f"{state.llm_provider}:{state.llm_model}",
            "report_available": state.report is not None,
            "error": state.error,
            "warnings": state.warnings,
            "recent_decisions": [
                {
                    "agent": d.agent.value,
                    "action": d.action,
                    "rationale": d.rationale,
                    "timestamp": d.timestamp.isoformat(),
                }
                for d in state.decisions[-RECENT_DECISIONS:]
            ],
            "created_at": state.created_at.isoformat(),
            "updated_at": state.updated_at.isoformat(),
        }

    def _load_checked(self, research_id: str) -> ResearchState:
        """Load a state; an active one whose owner process is gone becomes ``interrupted``."""
        state = self.store.load(research_id)
        if state.status.is_active and self._owner_is_gone(state):
            self._abort(state, Status.INTERRUPTED, "interrupted")
            state.error = "The process running this research stopped before it finished."
            self.store.save(state)
        return state

    def _owner_is_gone(self, state: ResearchState) -> bool:
        if self.jobs.is_running(state.id):
            return False
        if state.owner_host not in (None, socket.gethostname()):
            return False  # another machine's process: we cannot tell; trust the state
        if state.owner_pid is None or state.owner_pid == os.getpid():
            return True
        try:
            os.kill(state.owner_pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def recover_orphans(self) -> int:
        """Mark researches left active by dead processes as interrupted; returns how many."""
        count = 0
        for research_id in self.store.active_ids():
            try:
                state = self.store.load(research_id)
            except FoundryError:
                continue
            if state.status.is_active and self._owner_is_gone(state):
                self._load_checked(research_id)
                count += 1
        return count

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
        page = report_page(state.report, offset, max_chars)
        metadata = state.report_metadata
        payload = {
            "research_id": state.id,
            "status": state.status.value,
            "summary": report_summary(state.report),
            **page,
            "report_metadata": metadata.model_dump() if metadata else None,
            "sources": _cited_sources(state),
            "decision_log": _decision_log(state),
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

    # ------------------------------------------------------------------ list

    def list(
        self, *, limit: int | None = None, cursor: str | None = None, completed_only: bool = False
    ) -> dict[str, Any]:
        limit = 20 if limit is None else check_range("limit", limit, 1, 100)
        items, next_cursor = self.store.list_page(limit, cursor, bool(completed_only))
        return {
            "items": [
                {
                    "research_id": item.research_id,
                    "query": _shorten(item.query, 120),
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
        if self.jobs.cancel(research_id):
            state.status = Status.CANCELLING
            self.store.save(state)
            await self.jobs.wait(research_id, 2.0)
        else:
            raise InvalidStateError(
                f"Research {research_id} is run by another foundry-mcp process "
                f"(pid {state.owner_pid}).",
                remediation="Cancel it from the process that runs it (the same editor window).",
            )
        state = self.store.load(research_id)
        return {"research_id": research_id, "status": state.status.value}

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
        """Continue an unfinished research from its saved phase, without redoing work."""
        research_id = validate_research_id(research_id)
        state = self._load_checked(research_id)
        if state.status is Status.COMPLETED:
            raise InvalidStateError(
                f"Research {research_id} is already completed.",
                remediation="Read it with action='deep-research-report', or start a new one.",
            )
        if not state.status.is_resumable:
            raise InvalidStateError(
                f"Research {research_id} is {state.status.value}; it is still being worked on.",
                remediation="Wait for it with action='deep-research-status' and wait=true.",
            )
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
        self.providers.usable_search_providers(state.search_providers)
        previous = state.status
        state.record(
            AgentDecision(
                agent=AgentRole.SUPERVISOR,
                action="resume",
                rationale=f"Resumed from {previous.value} at {state.phase.value}.",
                inputs={"phase": state.phase.value, "iteration": state.iteration},
                outputs={"limits": state.limits.model_dump()},
            )
        )
        for key in ("cancelled", "timeout", "interrupted", "failed"):
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
        self._claim(state)
        self.store.save(state)
        self.jobs.start(research_id, self._run)
        return {
            "research_id": research_id,
            "status": state.status.value,
            "phase": state.phase.value,
            "iteration": state.iteration,
            "resumed_from": previous.value,
        }

    async def delete(self, research_id: Any) -> dict[str, Any]:
        """Delete a research, cancelling it first if it runs here."""
        research_id = validate_research_id(research_id)
        self.store.load(research_id)  # RESEARCH_NOT_FOUND before anything else
        self._deleted.add(research_id)
        if self.jobs.cancel(research_id):
            await self.jobs.wait(research_id, DELETE_WAIT_SECONDS)
        self.store.delete(research_id)
        self.call_logs.pop(research_id, None)
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


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


KEY_DECISIONS = {"decide_iteration", "plan_next_iteration", "retry_phase", "fallback", "resume"}


def _decision_log(state: ResearchState) -> dict[str, Any]:
    """The supervisor's decisions in brief: counts per action and the ones that changed course."""
    counts: dict[str, int] = {}
    for decision in state.decisions:
        counts[decision.action] = counts.get(decision.action, 0) + 1
    key = [
        {
            "agent": d.agent.value,
            "action": d.action,
            "rationale": _shorten(d.rationale, 240),
            "iteration": d.inputs.get("iteration"),
        }
        for d in state.decisions
        if d.action in KEY_DECISIONS
    ]
    return {"total": len(state.decisions), "by_action": counts, "key_decisions": key[-20:]}


def _cited_sources(state: ResearchState) -> list[dict[str, Any]]:
    """The report's numbered sources, in order, from its ``## Sources`` section."""
    cited_ids = state.report_metadata.cited_source_ids if state.report_metadata else []
    by_id = state.source_by_id()
    return [
        {"number": n, "id": sid, "title": by_id[sid].title, "url": by_id[sid].url}
        for n, sid in enumerate(cited_ids, start=1)
        if sid in by_id
    ]
