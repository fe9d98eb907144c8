"""What each action of the ``research`` tool returns in ``data``: one pydantic model per action,
published as the resource ``research://schemas`` (see ``server.surface``) and checked in
dispatch.

The models list every key the research service returns and allow more (a newer field never
breaks a client). A payload that does not fit its model is a bug in foundry-mcp: it is logged and
returned unchanged, never turned into a failed call. Per-action hints (read-only, destructive,
idempotent) are published in the tool's ``_meta`` (:mod:`.hints`), since MCP annotates whole
tools only.
"""

from __future__ import annotations

import logging
from typing import Any, Literal, get_args

from pydantic import Field, ValidationError
from pydantic.json_schema import models_json_schema

from foundry_mcp.providers.breaker import CircuitState
from foundry_mcp.providers.search.base import SourceType
from foundry_mcp.research.effort import Effort
from foundry_mcp.research.export.formats import ExportFormat
from foundry_mcp.server.results.report import EvidenceResult, ReportResult, VerdictName
from foundry_mcp.server.results.status import (
    BoundsReport,
    Clarified,
    ModeName,
    PhaseName,
    Result,
    StatusName,
    StatusResult,
    Timestamp,
    UsageTotals,
)
from foundry_mcp.server.results.versions import ReviseResult, VersionsResult

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- deep-research


class Limits(Result):
    max_iterations: int
    max_sub_queries: int
    max_sources_per_query: int
    max_concurrent: int
    task_timeout: float = Field(description="Seconds.")
    reading_budget: int | None = Field(
        None, description="Tokens of page text one round reads; null: whole pages."
    )


class SearchPlan(Result):
    providers: list[str] = Field(description="The search providers the research uses.")
    source_types: list[SourceType] = Field(description="The kinds asked for; empty: all.")
    strategy: Literal["priority", "all"]
    warnings: list[str] = Field(description="Providers skipped, and why.")
    preferred_sources: list[str]
    bounds: BoundsReport | None = None


class StartResult(Result):
    """``deep-research`` (start): the research is queued and runs in the background."""

    research_id: str
    status: StatusName
    phase: PhaseName
    message: str
    limits: Limits
    mode: ModeName
    effort: Effort
    provider: str = Field(description="provider:model")
    provider_choice: str | None = Field(
        None, description="Present when the LLM was found on this machine: which and why."
    )
    phase_providers: dict[str, list[str]] = Field(
        description="Per-phase provider:model lists, first choice first; empty when pinned."
    )
    search: SearchPlan
    clarification: Clarified | None = Field(
        None, description="Present when the user was asked about the question first."
    )


class CancelResult(Result):
    """``deep-research-cancel``."""

    research_id: str
    status: StatusName = Field(description="After the request.")


class ResumeResult(Result):
    """``deep-research-resume``: a stopped research goes on, a completed one for more rounds."""

    research_id: str
    status: StatusName
    phase: PhaseName
    iteration: int
    resumed_from: StatusName
    plan: Literal["approved", "edited"] | None = Field(
        None, description="A waiting plan was approved, as shown or edited."
    )


class AskSource(Result):
    number: int = Field(
        description="Its [n] in the report; sources the report does not cite come after."
    )
    source_id: str
    title: str
    url: str | None
    in_report: bool = Field(description="Listed in the report's Sources.")


class AskQuote(Result):
    source_id: str
    number: int
    quote: str = Field(description="Verbatim text of the source (its page, or its snippet).")


class AskResult(Result):
    """``deep-research-ask``: a follow-up question answered from a completed research's
    sources, with citations and the quotes behind them; nothing is searched."""

    research_id: str
    status: StatusName = Field(description="The research's, unchanged (completed).")
    follow_up_id: str
    question: str
    answer: str = Field(description="Markdown citing the sources as [n].")
    answerable: bool = Field(description="False: the saved sources do not answer it.")
    reason: str = Field(description="What the answer rests on, or what the sources lack.")
    sources: list[AskSource] = Field(description="The sources the answer cites, first cited first.")
    quotes: list[AskQuote] = Field(description="The passages behind its checked sentences.")
    verdicts: dict[VerdictName, int] = Field(description="Cited sentences per verdict.")
    follow_ups: int = Field(description="Follow-ups the research now keeps, this one included.")
    usage: UsageTotals = Field(description="The follow-up's own LLM calls.")
    next_action: str | None = Field(
        None, description="When unanswerable: what to call to research the question."
    )
    gap_id: str | None = Field(
        None, description="When unanswerable in a simple research: the open gap it became."
    )


class DeleteResult(Result):
    research_id: str
    deleted: bool


class RestoreResult(Result):
    research_id: str
    item_id: str
    restored_from: Literal["state", "archive"]
    content_hash: str | None = Field(description="sha256 of the original, when archived.")
    phase: PhaseName
    reopened_analysis: bool = Field(description="The phase went back to analysis.")
    next_action: str


# --------------------------------------------------------------------------- the rest


class ListItem(Result):
    research_id: str
    query: str = Field(description="Cut to 120 characters.")
    status: StatusName
    phase: PhaseName
    iteration: int
    created_at: Timestamp
    updated_at: Timestamp


class ListResult(Result):
    items: list[ListItem]
    next_cursor: str | None


class Event(Result):
    seq: int
    at: Timestamp
    kind: str
    data: dict[str, Any] = Field(description="The event's own fields; they vary by kind.")


class EventsResult(Result):
    research_id: str
    events: list[Event]
    next_cursor: str | None


class ExportResult(Result):
    """The export's text in ``content``, or the file it was written to in ``path``."""

    research_id: str
    status: StatusName
    format: ExportFormat
    chars: int
    version: int | None = Field(None, description="The report's version exported.")
    content: str | None = None
    path: str | None = None


class ProviderHealth(Result):
    name: str
    kind: str | None
    role: Literal["llm", "search"] | None
    in_use: bool
    used_for: list[str]
    key_present: bool
    base_url: str | None
    model: str | None
    status: Literal["ok", "error", "not_configured", "not_checked", "unchecked", "unsupported"]
    latency_s: float | None
    error_kind: str | None
    problem: str | None
    fix: str | None
    note: str | None = Field(
        None, description="Why a provider was not called (not_checked), and what was looked at."
    )
    circuit: CircuitState | None = Field(
        None, description="Present once the provider has been called in this process."
    )


class HealthResult(Result):
    ok: bool = Field(description="No provider in use failed.")
    providers: list[ProviderHealth]
    problems: list[str]
    elapsed_s: float


class ErrorData(Result):
    """``data`` of every failed call."""

    error_code: str
    error_type: str
    remediation: str = Field(description="What to do next, in one sentence.")
    field: str | None = Field(None, description="The parameter at fault.")
    details: dict[str, Any] | None = None


# --------------------------------------------------------------------------- tables

RESULT_MODELS: dict[str, type[Result]] = {
    "deep-research": StartResult,
    "deep-research-status": StatusResult,
    "deep-research-report": ReportResult,
    "deep-research-evidence": EvidenceResult,
    "deep-research-list": ListResult,
    "deep-research-events": EventsResult,
    "deep-research-cancel": CancelResult,
    "deep-research-resume": ResumeResult,
    "deep-research-ask": AskResult,
    "deep-research-revise": ReviseResult,
    "deep-research-versions": VersionsResult,
    "deep-research-delete": DeleteResult,
    "deep-research-restore": RestoreResult,
    "deep-research-export": ExportResult,
    "health": HealthResult,
}

# What ``data`` may be, as published: every action's model and the failure.
ActionResult = (
    StartResult
    | StatusResult
    | ReportResult
    | EvidenceResult
    | ListResult
    | EventsResult
    | CancelResult
    | ResumeResult
    | AskResult
    | ReviseResult
    | VersionsResult
    | DeleteResult
    | RestoreResult
    | ExportResult
    | HealthResult
    | ErrorData
)


def result_schemas() -> dict[str, Any]:
    """Every shape ``data`` may take, as one JSON Schema document: ``$defs`` (shared by all) and,
    for each action, the ``$ref`` of its result (one shape per action)."""
    _, schema = models_json_schema(
        [(model, "serialization") for model in get_args(ActionResult)],
        ref_template="#/$defs/{model}",
    )
    actions: dict[str, Any] = {
        action: {"$ref": f"#/$defs/{model.__name__}"} for action, model in RESULT_MODELS.items()
    }
    actions["failure"] = {"$ref": "#/$defs/ErrorData"}
    _, errors = models_json_schema([(ErrorData, "serialization")], ref_template="#/$defs/{model}")
    return {"$defs": {**schema["$defs"], **errors["$defs"]}, "actions": actions}


def conform(action: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` checked against its action's model and dumped as JSON, keys exactly as given;
    a payload that does not fit is logged (it is our bug) and returned as it is."""
    model = RESULT_MODELS[action]
    try:
        checked = model.model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        log.error("%s returned data that does not fit %s: %s", action, model.__name__, problems)
        return payload
    return checked.model_dump(mode="json", exclude_unset=True)
