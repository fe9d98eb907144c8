"""The published shape of ``deep-research-report``: a page of the report with its sources,
decisions, usage and fidelity; and ``deep-research-evidence``, a page of its checked sentences."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from foundry_mcp.server.results.status import AgentName, Fidelity, Result, StatusName, Usage

VerdictName = Literal["supported", "partial", "unsupported", "unverified"]
ContentLevelName = Literal["full", "condensed", "compressed", "key_points", "headline", "dropped"]


class VerificationSummary(Result):
    claims_checked: int
    supported: int
    partial: int
    unsupported: int
    unverified: int
    uncited_sentences: int
    removed: int
    repaired: int = Field(description="Re-cited to another source that backs them.")
    llm_calls: int


class ReportMetadata(Result):
    sections: list[str]
    word_count: int
    citations_count: int
    sources_cited: int
    sources_examined: int
    confidence_summary: dict[str, int] = Field(description="Findings per confidence.")
    dropped_citations: int
    verification: VerificationSummary | None


class CitedSource(Result):
    number: int = Field(description="Its [n] in the report.")
    source_id: str
    title: str
    url: str | None


class KeyDecision(Result):
    agent: AgentName
    action: str
    rationale: str
    iteration: int | None


class DecisionLog(Result):
    total: int
    by_action: dict[str, int]
    key_decisions: list[KeyDecision] = Field(description="The latest 20 that changed course.")


class ItemFidelity(Result):
    item_type: str
    original_tokens: int
    relevant_tokens: int | None
    current_tokens: int
    current_level: ContentLevelName
    compression_ratio: float
    method: str = Field(
        description="full, focus, budget (the reading budget chose the passages), selection "
        "(chosen to fit the window), summary, truncation or dropped."
    )
    summarizer: str | None
    phase: str
    iteration: int
    archived: bool


class ReportFidelity(Fidelity):
    """The status block plus the degraded items and the report's size against the client."""

    content_fidelity: dict[str, ItemFidelity] | None = Field(
        None, description="Up to 100 degraded items, by id."
    )
    content_fidelity_not_shown: int | None = None
    content_archive_hashes: dict[str, str] | None = None
    report_tokens: int
    client_budget_tokens: int
    report_warning: str | None = Field(None, description="Set when the report exceeds the budget.")


class AnswerSource(Result):
    number: int | None = Field(description="Its [n] in the report; None if not cited there.")
    source_id: str
    url: str | None
    title: str
    quote: str = Field(description="Verbatim from the source.")
    verdict: str = Field(description="The fact-checker's: supported, partial or unverified.")


class StructuredAnswer(Result):
    """The research's answer in the shape of its output_schema."""

    data: Any = Field(description="The answer, in the schema's shape; a null value: unknown.")
    citations: dict[str, list[AnswerSource]] = Field(
        description="Each value's sources, by JSON pointer (e.g. /rows/0/licence)."
    )
    unknown: dict[str, str] = Field(description="Why a value is null, by JSON pointer.")
    valid: bool = Field(description="Validates against the schema, nulls allowed at leaves.")
    strict_valid: bool = Field(description="Validates against the schema as given.")
    errors: list[str]
    checked: int = Field(description="Values the fact-checker was asked about.")
    supported: int
    removed: int = Field(description="Values made null: their sources did not state them.")


class ReportResult(Result):
    """``deep-research-report``: the summary and one page of the report."""

    research_id: str
    status: StatusName
    version: int | None = Field(None, description="The report's version shown (1, 2, ...).")
    summary: str = Field(description="The executive summary, at most 2,000 characters.")
    report: str = Field(description="The page: characters [offset, next_offset).")
    offset: int
    next_offset: int | None = Field(description="None on the last page.")
    total_chars: int
    truncated: bool
    report_metadata: ReportMetadata | None
    sources: list[CitedSource]
    decision_log: DecisionLog
    usage: Usage
    fidelity: ReportFidelity
    answer: StructuredAnswer | None = Field(
        None, description="With output_schema: the answer in its shape (null until written)."
    )


class ClaimSource(Result):
    number: int | None = Field(description="Its [n] in the report; None if not cited there.")
    source_id: str
    title: str | None
    url: str | None


class Quote(Result):
    number: int | None
    source_id: str
    text: str = Field(description="Equal to the source's `field`[start:end].")
    start: int
    end: int
    field: str = Field(description="'content' or 'snippet'.")


class Claim(Result):
    sentence: str
    verdict: VerdictName
    reason: str
    sources: list[ClaimSource]
    quotes: list[Quote]


class EvidenceResult(Result):
    """``deep-research-evidence``: a page of the report's checked sentences."""

    research_id: str
    status: StatusName
    claims: list[Claim]
    offset: int = Field(description="Counts claims, not characters.")
    next_offset: int | None
    total_claims: int
