"""The words of a research's page: :class:`ViewData` and its parts, as ``assets/view.js`` reads
them (its JSON is the page's data, embedded, polled or passed by an MCP Apps host).

Every text here is shown by the page as text, never as markup: titles, quotes and the model's
words may hold anything.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from foundry_mcp.research.models import PHASE_ORDER

PartKind = Literal["sub_question", "hypothesis", "search"]


class _View(BaseModel):
    pass


class Cost(_View):
    """Tokens, calls and the estimated cost (US dollars) of some LLM calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0


class PhaseCost(Cost):
    phase: str


class Usage(_View):
    """The research's cost in total and by phase (in the house's phase order), and its searches."""

    total: Cost = Field(default_factory=Cost)
    by_phase: list[PhaseCost] = Field(default_factory=list)
    search_calls: int = 0
    max_cost_usd: float | None = None
    cost_ceiling_reached: bool = False


class Part(_View):
    """One part of the plan: a sub-question, a hypothesis, or (simple mode) a search."""

    id: str
    kind: PartKind
    text: str
    status: str  # pending, researching, completed, failed, skipped
    progress: float = 0.0  # 0..1
    detail: str = ""  # the part's phase, iteration or verdict, in words
    sources: int = 0
    findings_count: int = 0
    findings: list[str] = Field(default_factory=list)  # the first few, cut


class Plan(_View):
    brief: str | None = None
    parts: list[Part] = Field(default_factory=list)


class Quote(_View):
    """A passage of a source behind a sentence: its number in the report (None: not cited)."""

    number: int | None
    text: str


class Claim(_View):
    """A cited sentence of the report, as the fact-checker judged it."""

    sentence: str
    verdict: str
    reason: str = ""
    numbers: list[int] = Field(default_factory=list)
    quotes: list[Quote] = Field(default_factory=list)


class Reading(_View):
    """What was read of a source's page."""

    passages: int
    passages_read: int
    tokens: int
    whole: bool


class SourceView(_View):
    id: str
    number: int | None = None  # in the report; None: found, not cited
    title: str
    url: str | None = None
    provider: str = ""
    quality: str = "unknown"
    read: Reading | None = None


class Version(_View):
    number: int
    kind: str
    label: str  # what made it, in words
    created_at: str
    cost_usd: float = 0.0
    tokens: int = 0
    search_calls: int = 0


class FollowUpView(_View):
    question: str
    answer: str
    answerable: bool = True
    numbers: list[int] = Field(default_factory=list)
    quotes: list[Quote] = Field(default_factory=list)


class Activity(_View):
    agent: str
    action: str
    text: str
    at: str


class ViewData(_View):
    """Everything a research's page shows, in the page's own words (``assets/view.js``)."""

    research_id: str
    question: str
    status: str
    live: bool  # still running: the page expects newer data
    phase: str
    phase_index: int  # 1..phases
    phases: int = len(PHASE_ORDER)
    iteration: int = 1
    max_iterations: int = 1
    mode: str = "auto"
    elapsed_s: float = 0.0
    created_at: str
    updated_at: str
    usage: Usage = Field(default_factory=Usage)
    plan: Plan = Field(default_factory=Plan)
    findings: int = 0
    report: str | None = None  # markdown of the latest version, without its list of sources
    version: int | None = None
    claims: list[Claim] = Field(default_factory=list)
    verdicts: dict[str, int] = Field(default_factory=dict)  # verdict -> sentences, all of them
    sources: list[SourceView] = Field(default_factory=list)
    sources_total: int = 0
    versions: list[Version] = Field(default_factory=list)
    follow_ups: list[FollowUpView] = Field(default_factory=list)
    activity: list[Activity] = Field(default_factory=list)  # the latest decisions, newest last
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    omitted: list[str] = Field(default_factory=list)  # what the bounds left out, in words
