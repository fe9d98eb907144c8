"""What a research accumulates: sub-queries, sources, findings, gaps, decisions, usage, fidelity."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import Field, PrivateAttr

from foundry_mcp.providers.search.base import Publication
from foundry_mcp.research.models.base import (
    AgentRole,
    Confidence,
    Severity,
    SourceQuality,
    SubQueryStatus,
    Verdict,
    _Model,
    new_id,
    utcnow,
)
from foundry_mcp.research.models.modes import SearchTarget


class SubQuery(_Model):
    """A focused search query the planner (or refiner) derived from the question."""

    id: str = Field(default_factory=lambda: new_id("sq"))
    query: str
    rationale: str = ""
    priority: int = 1
    iteration: int = 1
    gap_id: str | None = None
    hypothesis_id: str | None = None  # hypotheses mode: the hypothesis this search explores
    target: SearchTarget = SearchTarget.BOTH  # local documents, the web, or both
    source_types: list[str] = Field(default_factory=list)  # kinds to search; empty: all
    sources: list[str] = Field(default_factory=list)  # the user's sources to search; empty: all
    status: SubQueryStatus = SubQueryStatus.PENDING
    error: str | None = None
    source_ids: list[str] = Field(default_factory=list)
    providers: list[str] = Field(default_factory=list)


class Source(_Model):
    """A document found by a search provider, with the text read from it.

    The page text (``content``) is not part of the stored state: the store keeps it once, in its
    page table, under ``content_hash``, and fills it back when a run needs it
    (``Store.load_pages``). A state read without that has ``content`` None and its reference.
    """

    id: str = Field(default_factory=lambda: new_id("src"))
    sub_query_id: str | None = None
    title: str
    url: str | None = None
    snippet: str = ""
    content: str | None = None  # never in a stored state's JSON (``store.states.Snapshot``)
    content_hash: str | None = None  # "sha256:<hex>" of the page text the store keeps for it
    quality: SourceQuality = SourceQuality.UNKNOWN
    provider: str = ""
    score: float | None = None
    iteration: int = 1
    analyzed: bool = False
    branches: list[str] = Field(default_factory=list)  # hierarchical: the sub-questions using it
    publication: Publication | None = None  # authors, year, venue... as the search API gave them

    # The text object the store holds for this source (identity, not equality, is compared:
    # a save of an unchanged source writes no page and hashes nothing).
    _kept: str | None = PrivateAttr(default=None)

    def __setattr__(self, name: str, value: Any) -> None:
        # A text set aside (``content = None``, read back or not) loses its reference too: the
        # store must not give it back.
        if name == "content" and value is None:
            super().__setattr__("content_hash", None)
        super().__setattr__(name, value)

    @property
    def text_is_kept(self) -> bool:
        """Whether the store holds ``content`` as it is (or the source has no text to keep).

        False for a text set since the last save (to store), and for one set aside since. A
        source read without its text (``content`` None, ``content_hash`` set) is kept.
        """
        return self.content is self._kept

    def keep_text(self, text: str | None) -> None:
        """Record ``text`` as what the store holds for this source (saved, or read back)."""
        self._kept = text


class Finding(_Model):
    """A claim extracted from sources, with the ids of the sources that support it."""

    id: str = Field(default_factory=lambda: new_id("fnd"))
    content: str
    confidence: Confidence = Confidence.MEDIUM
    source_ids: list[str] = Field(default_factory=list)
    category: str | None = None
    iteration: int = 1
    sub_question_id: str | None = None  # hierarchical: the sub-question that found it
    # Hierarchical: every sub-question the finding answers, as the analyst filed it (the one
    # whose reading found it included); a finding another part's reading found reaches this
    # part's researcher through ``ResearchState.filed``.
    parts: list[str] = Field(default_factory=list)


class PageRecord(_Model):
    """What the research has read of a source's page, over all its readings: its passages
    (as :mod:`~foundry_mcp.context.reading.passages` splits them), those read (as runs
    ``[first, last]``, so a page read whole is one pair), the tokens sent, and who read it. A
    page is read once; a later reading takes only passages not read before (see
    :mod:`foundry_mcp.research.workflow.reading`)."""

    passages: int
    runs: list[tuple[int, int]] = Field(default_factory=list)  # the passages read, ascending
    tokens: int = 0  # the page text sent, in tokens
    reader: str | None = None  # the sub-question whose researcher read it (None: the research)

    @property
    def read(self) -> frozenset[int]:
        """The passages read."""
        return frozenset(i for first, last in self.runs for i in range(first, last + 1))

    @property
    def count(self) -> int:
        """How many passages were read."""
        return sum(last - first + 1 for first, last in self.runs)

    @property
    def whole(self) -> bool:
        return self.count >= self.passages

    def add(self, passages: Iterable[int]) -> None:
        """Record ``passages`` as read too."""
        runs: list[tuple[int, int]] = []
        for i in sorted(self.read | set(passages)):
            if runs and runs[-1][1] == i - 1:
                runs[-1] = (runs[-1][0], i)
            else:
                runs.append((i, i))
        self.runs = runs


class FiledFinding(_Model):
    """A finding that one sub-question's reading found for another (hierarchical mode), kept
    until that sub-question's researcher takes it: the finding and the sources it cites."""

    part: str  # the sub-question it answers
    finding: Finding
    sources: list[Source] = Field(default_factory=list)
    by: str | None = None  # the sub-question whose reading found it
    # Its reading was done again (a retried analysis): the finding no longer stands, and a
    # researcher that took it drops it, so the new reading's findings do not repeat it.
    withdrawn: bool = False


class Gap(_Model):
    """A question the research has not answered yet."""

    id: str = Field(default_factory=lambda: new_id("gap"))
    description: str
    suggested_queries: list[str] = Field(default_factory=list)
    priority: int = 1
    addressed: bool = False
    severity: Severity | None = None
    iteration: int = 1


class Contradiction(_Model):
    """Sources that disagree about something that matters to the question."""

    id: str = Field(default_factory=lambda: new_id("con"))
    description: str
    source_ids: list[str] = Field(default_factory=list)
    resolution: str | None = None
    iteration: int = 1


class EvidenceQuote(_Model):
    """A passage shown to the fact-checker for a claim, exactly as the source's stored text has
    it: ``text == <source's field>[start:end]``."""

    source_id: str
    text: str
    start: int
    end: int
    field: str = "content"  # which stored text: the page's "content" or its "snippet"


class ClaimCheck(_Model):
    """The verification verdict on one cited sentence of the report, and the quotes behind it."""

    sentence: str
    source_ids: list[str] = Field(default_factory=list)
    verdict: Verdict = Verdict.UNVERIFIED
    reason: str = ""
    quotes: list[EvidenceQuote] = Field(default_factory=list)
    repaired_from: list[str] = Field(default_factory=list)  # what it cited before a repair


class VerificationSummary(_Model):
    """Counts of the citation verification pass over the report."""

    claims_checked: int = 0
    supported: int = 0
    partial: int = 0
    unsupported: int = 0
    unverified: int = 0
    uncited_sentences: int = 0
    removed: int = 0
    repaired: int = 0  # unsupported by their citations, supported by another source: re-cited
    llm_calls: int = 0


class AgentDecision(_Model):
    """One recorded step of the supervisor: a dispatch, an evaluation or an iteration decision."""

    agent: AgentRole
    action: str
    rationale: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, Any] | None = None
    timestamp: datetime = Field(default_factory=utcnow)


MAX_LLM_CALL_RECORDS = 200  # per research; older records are dropped, totals are kept


class LLMCallRecord(_Model):
    """One LLM call: who answered, for what, what it read and wrote, and its estimated cost."""

    provider: str
    model: str
    phase: str
    purpose: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None  # None: no price known for the model
    at: datetime = Field(default_factory=utcnow)
    key: str | None = None  # the request's content key in the journal of answers


class UsageTotals(_Model):
    """Tokens, calls and estimated cost summed over LLM calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost_usd: float = 0.0  # of the calls whose price is known
    unpriced_calls: int = 0

    def add(self, record: LLMCallRecord) -> None:
        self.input_tokens += record.input_tokens
        self.output_tokens += record.output_tokens
        self.calls += 1
        if record.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += record.cost_usd


class LLMUsage(_Model):
    """Every LLM call of a research (the most recent ones) and totals by phase and provider."""

    calls: list[LLMCallRecord] = Field(default_factory=list)
    dropped_calls: int = 0
    total: UsageTotals = Field(default_factory=UsageTotals)
    by_phase: dict[str, UsageTotals] = Field(default_factory=dict)
    by_provider: dict[str, UsageTotals] = Field(default_factory=dict)
    by_model: dict[str, UsageTotals] = Field(default_factory=dict)  # "provider:model"
    models_by_phase: dict[str, list[str]] = Field(default_factory=dict)  # who ran each phase
    max_cost_usd: float | None = None  # the ceiling of the last run
    cost_ceiling_reached: bool = False
    booked: list[str] = Field(default_factory=list)  # journal keys of the calls counted

    @property
    def spent_usd(self) -> float:
        return self.total.cost_usd

    def books(self, key: str) -> bool:
        """Whether the call with this journal key is already counted."""
        return key in self.booked

    def add(self, record: LLMCallRecord) -> None:
        if record.key is not None:
            self.booked.append(record.key)
        self.calls.append(record)
        if len(self.calls) > MAX_LLM_CALL_RECORDS:
            excess = len(self.calls) - MAX_LLM_CALL_RECORDS
            del self.calls[:excess]
            self.dropped_calls += excess
        self.total.add(record)
        self.by_phase.setdefault(record.phase, UsageTotals()).add(record)
        self.by_provider.setdefault(record.provider, UsageTotals()).add(record)
        label = f"{record.provider}:{record.model}"
        self.by_model.setdefault(label, UsageTotals()).add(record)
        served = self.models_by_phase.setdefault(record.phase, [])
        if label not in served:
            served.append(label)


class ReportMetadata(_Model):
    """Facts about the final report (the synthesizer's output schema)."""

    sections: list[str] = Field(default_factory=list)
    word_count: int = 0
    citations_count: int = 0
    sources_cited: int = 0
    sources_examined: int = 0
    confidence_summary: dict[str, int] = Field(default_factory=dict)
    dropped_citations: int = 0
    cited_source_ids: list[str] = Field(default_factory=list)
    verification: VerificationSummary | None = None
