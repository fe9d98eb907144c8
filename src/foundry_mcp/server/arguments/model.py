"""What the ``research`` tool accepts: one pydantic model is the bounds, the validation and the
published input schema.

A call whose arguments do not fit the model is refused with the tool's own envelope
(``VALIDATION_ERROR`` naming the field, or ``UNKNOWN_ACTION``), never with the SDK's text.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from foundry_mcp.config import (
    LIMIT_BOUNDS,
    MAX_QUERY_CHARS,
    MAX_WAIT_SECONDS,
    WHOLE_PAGES,
)
from foundry_mcp.research.export.formats import ExportFormat
from foundry_mcp.server.arguments.types import (
    HIGH,
    LOW,
    NOT_BOOL,
    Concurrency,
    Domains,
    EditedPlan,
    Iterations,
    Offset,
    PageChars,
    PageSize,
    PreferredSources,
    ReadingBudget,
    ReviseObject,
    SourcesPerQuery,
    SourceTypes,
    SubQueries,
    TaskTimeout,
    VersionNumber,
    WaitSeconds,
    limit_field,
)

LIMIT_PARAMS = tuple(LIMIT_BOUNDS)
BOUND_PARAMS = ("include_domains", "exclude_domains", "published_after", "published_before")

# Each action and the parameters it reads: the tool description, the "ignored parameter"
# warnings and the dispatcher's table all follow this.
ACTION_PARAMS: dict[str, tuple[str, ...]] = {
    "deep-research": (
        "query",
        "system_prompt",
        "provider_id",
        "model",
        "mode",
        "effort",
        "max_time_s",
        "language",
        "source_types",
        "preferred_sources",
        "clarify",
        "review_plan",
        *BOUND_PARAMS,
        "output_schema",
        *LIMIT_PARAMS,
    ),
    "deep-research-status": ("research_id", "wait", "wait_timeout"),
    "deep-research-report": ("research_id", "offset", "max_chars", "version"),
    "deep-research-evidence": ("research_id", "offset", "max_chars"),
    "deep-research-list": ("limit", "cursor", "completed_only", "status", "query"),
    "deep-research-events": ("research_id", "cursor", "limit"),
    "deep-research-cancel": ("research_id",),
    "deep-research-resume": ("research_id", "plan", *LIMIT_PARAMS),
    "deep-research-ask": ("research_id", "query"),
    "deep-research-revise": ("research_id", "revise"),
    "deep-research-versions": ("research_id", "version", "compare_to"),
    "deep-research-delete": ("research_id",),
    "deep-research-restore": ("research_id", "item_id"),
    "deep-research-export": ("research_id", "format", "path", "overwrite", "version"),
    "health": (),
}

ACTION_SUMMARIES: dict[str, str] = {
    "deep-research": "start one",
    "deep-research-status": "where it is",
    "deep-research-report": "summary and a page",
    "deep-research-evidence": "checked sentences, quotes",
    "deep-research-list": "newest first",
    "deep-research-events": "audit trail",
    "deep-research-cancel": "stop; resumable",
    "deep-research-resume": "go on; approve a waiting plan",
    "deep-research-ask": "follow-up question",
    "deep-research-revise": "rewrite, deepen, refresh report",
    "deep-research-versions": "versions; a delta",
    "deep-research-delete": "delete",
    "deep-research-restore": "an archived source back",
    "deep-research-export": "as a file format",
    "health": "check providers",
}

# Parameters of earlier versions, and what replaced them.
RETIRED_PARAMS = {
    "deep_research_action": "to continue or resume a research use "
    "action='deep-research-resume'; to cancel one, action='deep-research-cancel'",
    "evidence": "for the checked sentences and their quotes use action='deep-research-evidence'",
}

Action = Literal[
    "deep-research",
    "deep-research-status",
    "deep-research-report",
    "deep-research-evidence",
    "deep-research-list",
    "deep-research-events",
    "deep-research-cancel",
    "deep-research-resume",
    "deep-research-ask",
    "deep-research-revise",
    "deep-research-versions",
    "deep-research-delete",
    "deep-research-restore",
    "deep-research-export",
    "health",
]


class ResearchArguments(BaseModel):
    """The arguments of one ``research`` call."""

    model_config = ConfigDict(extra="forbid", title="research")

    action: Action = Field(description="The operation.")
    query: str | None = Field(
        None,
        max_length=MAX_QUERY_CHARS,
        description=f"deep-research: the research question (<= {MAX_QUERY_CHARS:,} chars); "
        "deep-research-list: words every listed question holds; deep-research-ask: the "
        "follow-up question.",
    )
    system_prompt: str | None = Field(
        None, description="deep-research: extra context or instructions for the research."
    )
    provider_id: str | None = Field(
        None,
        description="deep-research: LLM as 'provider' or 'provider:model', e.g. 'openai:gpt-4.1'.",
    )
    model: str | None = Field(None, description="deep-research: LLM model name override.")
    mode: Literal["auto", "simple", "hierarchical", "hypotheses"] | None = Field(
        None,
        description=(
            "deep-research: how the question is researched. auto (default) chooses; simple: one "
            "pass; hierarchical: 2-5 sub-questions researched in parallel, then integrated; "
            "hypotheses: competing explanations explored and weighed."
        ),
    )
    effort: Literal["quick", "standard", "deep"] | None = Field(
        None,
        description=(
            "deep-research: how thorough, in one word: quick (one short round, 2 sub-queries, "
            "simple mode), standard (the configuration) or deep (4 rounds, 6 sub-queries, 8 "
            "sources each). Limits given explicitly win."
        ),
    )
    max_time_s: Annotated[float, Field(ge=5, le=86400), NOT_BOOL] | None = Field(
        None,
        description=(
            "deep-research: time ceiling in seconds (5-86400): near it, the research stops "
            "searching and writes its report from what it has, within the ceiling."
        ),
    )
    language: str | None = Field(
        None,
        max_length=40,
        description="deep-research: the report's language, e.g. 'German' or 'de' "
        "(default: the question's).",
    )
    source_types: SourceTypes | None = Field(
        None,
        description=(
            "deep-research: the kinds of sources to search, one or more of web (Tavily, "
            "Google), academic (Semantic Scholar papers), news (Tavily's news search), local "
            "(the user's documents). Default: every configured search provider."
        ),
    )
    preferred_sources: PreferredSources | None = Field(
        None,
        description=(
            "deep-research: sites to favour, as domains ('docs.python.org'; subdomains count) "
            "or https:// address prefixes (at most 20): their sources rank higher and are "
            "never cut below a headline when the budget is tight."
        ),
    )
    include_domains: Domains | None = Field(
        None,
        description="deep-research: read only sources on these domains ('python.org': its "
        "subdomains too; at most 50); the user's documents and MCP sources are not bounded.",
    )
    exclude_domains: Domains | None = Field(
        None, description="deep-research: never search, read or cite these domains (at most 50)."
    )
    published_after: date | None = Field(
        None,
        description="deep-research: only sources published on or after this day (YYYY-MM-DD); "
        "a source whose day is unknown is kept.",
    )
    published_before: date | None = Field(
        None, description="deep-research: only sources published on or before this day."
    )
    output_schema: dict[str, Any] | None = Field(
        None,
        description="deep-research: a JSON Schema (an object or array at the top) the research "
        "also answers in, every value cited with a quote in a map beside it; a value no source "
        "states is null with the reason. The report action returns it as answer.",
    )
    clarify: Literal["auto", "off", "always"] | None = Field(
        None,
        description=(
            "deep-research: ask the user about a vague question before researching, through "
            "the client (MCP elicitation). auto (default): when the question is ambiguous and "
            "the client can answer; always; off. A client that cannot answer gets no question: "
            "the status lists the assumptions made instead."
        ),
    )
    review_plan: bool | None = Field(
        None,
        description=(
            "deep-research: stop after planning, before any search, until the user approves "
            "the plan (shown through the client, or in the status as status 'waiting'; "
            "deep-research-resume approves it, with plan to change it)."
        ),
    )
    plan: EditedPlan | None = Field(
        None,
        description=(
            "deep-research-resume of a research waiting for approval: the plan to research "
            "instead, as a list of queries (sub-questions in hierarchical mode) or an object "
            "{queries: [...], preferred_sources: [...]}. Omitted: the plan as shown."
        ),
    )
    max_iterations: Iterations | None = limit_field(
        "max_iterations", "deep-research/resume: rounds"
    )
    max_sub_queries: SubQueries | None = limit_field(
        "max_sub_queries", "deep-research/resume: sub-queries per round"
    )
    max_sources_per_query: SourcesPerQuery | None = limit_field(
        "max_sources_per_query", "deep-research/resume: sources per sub-query"
    )
    max_concurrent: Concurrency | None = limit_field(
        "max_concurrent", "deep-research/resume: parallel searches"
    )
    task_timeout: TaskTimeout | None = limit_field(
        "task_timeout", "deep-research/resume: overall timeout in seconds"
    )
    reading_budget: ReadingBudget | None = Field(
        None,
        description=(
            "deep-research/resume: tokens of page text a round reads, the passages worth most "
            f"first, {LOW['reading_budget']:g}-{HIGH['reading_budget']:g}; {WHOLE_PAGES}: "
            "whole pages (default: the effort's)."
        ),
    )
    research_id: str | None = Field(
        None, description="The id returned by deep-research, e.g. 'deepres-0123456789ab'."
    )
    item_id: str | None = Field(
        None, description="deep-research-restore: the source id to restore, e.g. 'src-1a2b3c4d'."
    )
    wait: bool | None = Field(
        None, description="deep-research-status: block until the status or phase changes."
    )
    wait_timeout: WaitSeconds | None = Field(
        None,
        description=(
            f"deep-research-status: longest wait in seconds, 0-{MAX_WAIT_SECONDS:g} (default 30)."
        ),
    )
    offset: Offset | None = Field(
        None,
        description=(
            "deep-research-report: first character of the page; deep-research-evidence: "
            "first checked sentence."
        ),
    )
    max_chars: PageChars | None = Field(
        None,
        description="deep-research-report / -evidence: page size, 1000-100000 (default 20000).",
    )
    limit: PageSize | None = Field(
        None,
        description=(
            "deep-research-list: items per page, 1-100 (default 20); deep-research-events: "
            "1-500 (default 50)."
        ),
    )
    cursor: str | None = Field(
        None, description="deep-research-list / -events: next_cursor from the previous page."
    )
    completed_only: bool | None = Field(
        None, description="deep-research-list: only completed research."
    )
    status: str | None = Field(
        None,
        description=(
            "deep-research-list: only these statuses, comma-separated, e.g. 'running,interrupted'."
        ),
    )
    format: ExportFormat | None = Field(
        None,
        description=(
            "deep-research-export: markdown (the report), json (question, status, report, "
            "sources, findings, claim checks with quotes, usage), bibtex or ris (the cited "
            "sources, in report order). Default markdown."
        ),
    )
    path: str | None = Field(
        None,
        description=(
            "deep-research-export: write to this file inside the server's working directory "
            "(relative or absolute; its directory must exist) instead of returning the text."
        ),
    )
    overwrite: bool | None = Field(
        None, description="deep-research-export: replace an existing file at path."
    )
    revise: ReviseObject | None = Field(
        None,
        description="deep-research-revise: what to make of the report, an object {kind: "
        "rewrite|deepen|refresh, form, audience, length_words, language, corrections, part, "
        "max_searches} (each key below, under revise).",
    )
    version: VersionNumber | None = Field(
        None,
        description="deep-research-report / -export: which version of the report (default: "
        "the latest); deep-research-versions: the version whose delta to show.",
    )
    compare_to: VersionNumber | None = Field(
        None,
        description="deep-research-versions: the version to compare version with (default: "
        "the one before it).",
    )

    def given(self) -> dict[str, Any]:
        """The parameters the caller set (not None), action excluded."""
        return {
            name: getattr(self, name)
            for name in self.model_fields_set
            if name != "action" and getattr(self, name) is not None
        }


def input_schema() -> dict[str, Any]:
    """The JSON schema published as the tool's ``inputSchema``."""
    return ResearchArguments.model_json_schema()
