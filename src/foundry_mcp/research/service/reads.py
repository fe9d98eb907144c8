"""The read side of the research service (:class:`ResearchLookup`): status (with the long poll),
report pages, the list and the audit trail, as plain payload dictionaries.

Every read of a single research goes through ``OwnershipWatch`` (``load_checked``; for a
status, ``settled``), so a research whose process died is reported ``interrupted``, never
``running``. Every store call runs off the event loop (:class:`AsyncStore`). A status the store
cannot give within ``STATUS_READ_SECONDS`` (a lock held by another process, a paused database)
or at all (a database out of reach) is the last one this process read of that research, marked
as such, or ``STORE_UNAVAILABLE``.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import anyio

from foundry_mcp.config import MAX_WAIT_SECONDS
from foundry_mcp.errors import (
    FoundryError,
    InputError,
    ReportNotReadyError,
    ResearchNotFoundError,
    StoreUnavailableError,
)
from foundry_mcp.research.export.footer import with_cost_footer
from foundry_mcp.research.models import ResearchState, Status, utcnow
from foundry_mcp.research.service.completed.versions import at_version
from foundry_mcp.research.service.inputs import check_range, parse_statuses, search_words
from foundry_mcp.research.service.ownership import OwnershipWatch
from foundry_mcp.research.service.payloads.answer import answer_payload
from foundry_mcp.research.service.payloads.evidence import all_claims, evidence_page
from foundry_mcp.research.service.payloads.report_pages import report_page, report_summary
from foundry_mcp.research.service.payloads.status import (
    all_sources,
    cited_sources,
    decision_log,
    report_fidelity_block,
    shorten,
    status_payload,
    usage_payload,
)
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.paging import not_a_cursor
from foundry_mcp.research.store.protocol import Store
from foundry_mcp.research.store.records import (
    Event,
    Fingerprint,
    StatusRead,
    research_not_found,
    validate_research_id,
)

WAIT_POLL_SECONDS = 0.1
STATUS_READ_SECONDS = 0.8  # a status answers within a second, from the store or from memory
EVENTS_PAGE = 500  # the most deep-research-events returns at once
# How many research's last status a server keeps in memory: well above the research a team
# worker serves at once (100 in benchmarks/team/load.py), at about 150 KB a decoded state.
LAST_READS_KEPT = 256

ProgressCallback = Callable[[dict[str, Any]], Awaitable[None]]


def status_of(read: StatusRead) -> dict[str, Any]:
    """The status payload of a research as ``Store.load_status`` read it."""
    return status_payload(
        read.state,
        cancel_requested=read.ownership.cancel_requested,
        last_event_at=read.last_event_at,
    )


class LastReads:
    """The last status this server read of each research, and when: what a status answers when
    the store is slow to (and the state a read need not decode again when it is unchanged).

    Only the ``LAST_READS_KEPT`` research read most recently are kept, the others forgotten
    oldest first; a research is forgotten as soon as it is deleted.
    """

    def __init__(self) -> None:
        self._kept = LAST_READS_KEPT
        self._reads: OrderedDict[str, tuple[StatusRead, datetime]] = OrderedDict()

    def get(self, research_id: str) -> tuple[StatusRead, datetime] | None:
        return self._reads.get(research_id)

    def put(self, research_id: str, read: StatusRead, at: datetime) -> None:
        self._reads[research_id] = (read, at)
        self._reads.move_to_end(research_id)
        while len(self._reads) > self._kept:
            self._reads.popitem(last=False)

    def forget(self, research_id: str) -> None:
        self._reads.pop(research_id, None)


class ResearchLookup:
    """Looks up any research in the store, whichever process runs it: its status, report,
    claims, sources and events, and the list (``ResearchService.lookup``)."""

    def __init__(self, io: AsyncStore, watch: OwnershipWatch) -> None:
        self.io = io
        self.watch = watch
        self.last_reads = LastReads()

    def forget(self, research_id: str) -> None:
        """The research was deleted: its last status read is no answer any more."""
        self.last_reads.forget(research_id)

    async def status(
        self,
        research_id: Any,
        *,
        wait: bool = False,
        wait_timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        principal: str | None = None,
    ) -> dict[str, Any]:
        """The research's status; with ``wait``, first block until it moves (long poll).

        One store statement answers (``Store.load_status``). A wait sleeps on the store's
        change notice, reading only the research's fingerprint when woken; ``on_progress``
        (given only when the caller asked for progress) receives the status every second.
        With ``principal``, another principal's research is not found, as an unknown id.
        """
        research_id = validate_research_id(research_id)
        timeout = 30.0 if wait_timeout is None else wait_timeout
        check_range("wait_timeout", timeout, 0, MAX_WAIT_SECONDS, integer=False)
        read, stale = await self._read(research_id, principal)
        if wait and read.state.status.is_active and stale is None:
            # Woken on every save (PostgreSQL: NOTIFY; SQLite: polling), it ends once the
            # status, phase or iteration moved from the state read above (a save landing
            # between that read and the first fingerprint is news).
            state = read.state
            before = (state.status.value, state.phase.value, state.iteration, "")
            last = await self._fingerprint(research_id)
            deadline = time.monotonic() + timeout
            next_report = time.monotonic()
            while not _moved(before, last) and (left := deadline - time.monotonic()) > 0:
                if on_progress is not None and time.monotonic() >= next_report:
                    progress, _ = await self._read(research_id, principal)
                    await on_progress(status_of(progress))
                    next_report = time.monotonic() + 1.0
                if on_progress is not None:
                    left = min(left, max(WAIT_POLL_SECONDS, next_report - time.monotonic()))
                await self.io.wait_for_change(research_id, left, since=last)
                last = await self._fingerprint(research_id)
            read, stale = await self._read(research_id, principal)
        payload = status_of(read)
        if stale is not None:
            payload["warnings"] = [stale, *payload["warnings"]]
        return payload

    async def _read(self, research_id: str, principal: str | None) -> tuple[StatusRead, str | None]:
        """The research as a status reads it (``OwnershipWatch.settled``), and None; or, when
        the store does not answer in time or is known out of reach, the last read of it and a
        warning saying why and when that read was. With ``principal``, ``RESEARCH_NOT_FOUND``
        unless it is that principal's."""
        remembered = self.last_reads.get(research_id)
        known = remembered[0].state if remembered else None  # not decoded again if unchanged
        try:
            with anyio.fail_after(STATUS_READ_SECONDS):
                read = await self.io.read(lambda store: store.load_status(research_id, known))
        except ResearchNotFoundError:
            self.forget(research_id)  # deleted, by another server maybe
            raise
        except (TimeoutError, StoreUnavailableError) as exc:
            # Slow to answer, or known out of reach (PostgreSQL fails fast for a few seconds
            # after a call found the database lost): the last status read, if there is one.
            if remembered is None:
                if isinstance(exc, StoreUnavailableError):
                    raise
                raise StoreUnavailableError(
                    f"The research store did not answer within {STATUS_READ_SECONDS:g} s, and "
                    f"this server has not read {research_id} before.",
                    remediation="Try again in a few seconds; if it persists, check the store "
                    "(another process holding the SQLite database locked, or the PostgreSQL "
                    "server of [research] store_url).",
                ) from None
            read, at = remembered
            if principal is not None and read.principal != principal:
                raise research_not_found(research_id) from None
            why = (
                exc.message
                if isinstance(exc, StoreUnavailableError)
                else f"The research store did not answer within {STATUS_READ_SECONDS:g} s "
                "(busy or unreachable)."
            )
            return read, f"{why} This is the status as read at {at.isoformat()}."
        if principal is not None and read.principal != principal:
            raise research_not_found(research_id)
        read = await self.watch.settled(read)
        self.last_reads.put(research_id, read, utcnow())
        return read, None

    async def _fingerprint(self, research_id: str) -> Fingerprint | None:
        return await self.io.read(lambda store: store.fingerprint(research_id))

    async def report(
        self,
        research_id: Any,
        *,
        offset: int | None = None,
        max_chars: int | None = None,
        evidence: bool = False,
        version: int | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        """A page of the report (of ``version``, else the latest), its summary and sources; and
        warnings for the envelope. With ``evidence``, a page of the checked sentences with their
        quotes instead (``offset`` counts sentences there).
        """
        research_id = validate_research_id(research_id)
        offset = 0 if offset is None else check_range("offset", offset, 0, 10**9)
        max_chars = (
            20_000 if max_chars is None else check_range("max_chars", max_chars, 1000, 100_000)
        )
        loaded = await self.watch.load_checked(research_id)
        if loaded.report is None:
            raise _not_ready(loaded)
        state, number = at_version(loaded, version)
        warnings = []
        if state.status is not Status.COMPLETED:
            warnings.append(
                f"The research is {state.status.value}: this report is from an unfinished run."
            )
        if evidence:
            page = evidence_page(state, offset, max_chars)
            return {"research_id": state.id, "status": state.status.value, **page}, warnings
        metadata = state.report_metadata
        payload = {
            "research_id": state.id,
            "status": state.status.value,
            "version": number,
            "summary": report_summary(state.report or ""),
            **report_page(with_cost_footer(state), offset, max_chars),
            # The cited ids are `sources`, in report order.
            "report_metadata": (
                metadata.model_dump(exclude={"cited_source_ids"}) if metadata else None
            ),
            "sources": cited_sources(state),
            "decision_log": decision_log(state),
            "usage": usage_payload(state),
            "fidelity": report_fidelity_block(state),
            **answer_payload(state),
        }
        return payload, warnings

    async def claims(self, research_id: Any) -> str:
        """Every checked sentence of the report with its quotes, as JSON (the MCP resource)."""
        state = await self.watch.load_checked(validate_research_id(research_id))
        if state.report is None:
            raise _not_ready(state)
        return all_claims(state)

    async def sources(self, research_id: Any) -> str:
        """Every source the research gathered, cited or not, as JSON (the MCP resource)."""
        state = await self.watch.load_checked(validate_research_id(research_id))
        return _to_json(all_sources(state))

    async def answer(self, research_id: Any) -> str:
        """The answer in the caller's shape with its citations, as JSON (the MCP resource)."""
        state = await self.watch.load_checked(validate_research_id(research_id))
        if state.structured_answer is None:
            raise _no_answer(state)
        return _to_json(answer_payload(state)["answer"])

    async def full_report(self, research_id: Any, version: int | None = None) -> str:
        """The whole markdown report (of ``version``) with its cost footer (the resource)."""
        state = await self.watch.load_checked(validate_research_id(research_id))
        if state.report is None:
            raise _not_ready(state)
        return with_cost_footer(at_version(state, version)[0])

    async def listing(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        completed_only: bool = False,
        status: str | None = None,
        query: str | None = None,
        principal: str | None = None,
    ) -> dict[str, Any]:
        """Research newest first, optionally of some statuses only, or whose question holds
        every word of ``query`` (with ``principal``: only that principal's)."""
        limit = 20 if limit is None else check_range("limit", limit, 1, 100)
        statuses = parse_statuses(status)
        words = search_words(query)
        items, next_cursor = await self.io.read(
            lambda store: store.list_page(
                limit, cursor, bool(completed_only), statuses, principal=principal, words=words
            )
        )
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

    async def recent_reports(
        self, limit: int, query_chars: int, principal: str | None = None
    ) -> list[tuple[str, str]]:
        """``(research_id, query cut to query_chars)`` of the newest completed research (with
        ``principal``: only that principal's)."""
        items, _ = await self.io.read(
            lambda store: store.list_page(limit, completed_only=True, principal=principal)
        )
        return [(item.research_id, shorten(item.query, query_chars)) for item in items]

    async def events(
        self, research_id: Any, *, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """A page of the research's audit trail, oldest first."""
        research_id = validate_research_id(research_id)
        limit = 50 if limit is None else check_range("limit", limit, 1, 500)
        after = 0
        if cursor:
            if not cursor.isdigit():
                raise not_a_cursor("deep-research-events")
            after = int(cursor)

        def read(store: Store) -> list[Event]:
            if store.fingerprint(research_id) is None:  # an unknown id
                raise research_not_found(research_id)
            return store.events(research_id, after, limit)

        events = await self.io.read(read)
        return {
            "research_id": research_id,
            "events": [{"seq": e.seq, "at": e.at, "kind": e.kind, "data": e.data} for e in events],
            "next_cursor": str(events[-1].seq) if len(events) == limit else None,
        }

    async def all_events(self, research_id: Any) -> str:
        """The whole audit trail, oldest first, as JSON (the MCP resource)."""
        page = await self.events(research_id, limit=EVENTS_PAGE)
        events = page["events"]
        while page["next_cursor"] is not None:
            page = await self.events(research_id, cursor=page["next_cursor"], limit=EVENTS_PAGE)
            events += page["events"]
        return _to_json({"research_id": page["research_id"], "events": events})


def _moved(before: Fingerprint | None, now: Fingerprint | None) -> bool:
    """Whether a research moved for a waiting status: its status, phase or iteration changed,
    or it is gone. A queued research that began running has not moved: its run starts a few
    milliseconds after the start answer (``runner.ANSWER_FIRST_SECONDS``), and a wait begun
    at once would otherwise end then, with nothing new to tell."""
    if before is None or now is None:
        return True
    began = (before[0], now[0]) == (Status.QUEUED.value, Status.RUNNING.value)
    return now[1:3] != before[1:3] or (now[0] != before[0] and not began)


def _to_json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, indent=1)


def _no_answer(state: ResearchState) -> FoundryError:
    if state.options.output_schema is None:
        return InputError(
            f"Research {state.id} was started without output_schema: it has no structured answer.",
            remediation="Start a research with output_schema (a JSON Schema) for one; its "
            "report is at research://{id}/report.",
            details={"field": "output_schema"},
        )
    if state.report is None:
        return _not_ready(state)
    return ReportNotReadyError(
        f"Research {state.id} has its report; its answer in your shape is written after it.",
        remediation="Wait for the status completed (or resume the research), then read it again.",
    )


def _not_ready(state: ResearchState) -> ReportNotReadyError:
    if state.status.is_active:
        return ReportNotReadyError(
            f"Research {state.id} is {state.status.value} in {state.phase.value}; no report yet."
        )
    return ReportNotReadyError(
        f"Research {state.id} ended {state.status.value} before writing a report.",
        remediation="Resume it with action='deep-research-resume' to finish the report.",
    )
