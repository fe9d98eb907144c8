"""One reading: what of each pending page one analysis sends the analyst, in batches, and its
record once the analyst has read them.

With a reading budget (``ResearchLimits.reading_budget``) the reading's allowance
(:func:`~foundry_mcp.research.workflow.reading.budget.round_allowance`) goes to the most
relevant passages not read before across all its pages
(:func:`~foundry_mcp.context.reading.across.read_within`, in a reading process of its own:
:mod:`~foundry_mcp.context.reading.elsewhere`), relevant meaning to the question, all
its parts and the round's sub-queries (:func:`reading_terms`). Without one, each
page is read whole within its share of the round's budget
(:func:`~foundry_mcp.research.workflow.reading.shares.focus_sources`, which focuses a page only
where the model's window demands it); so is a page the user restored
(``ResearchState.protected_content_ids``), whatever the budget. Either way the texts are packed
into batches (:mod:`~foundry_mcp.research.workflow.fitting.batches`), and what the reading read
of each page is kept (:attr:`Reading.pages`) until its batch is analysed, then recorded
(:meth:`Reading.record`). CPU work over long pages: call :func:`read_pages` in a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.reading.across import Page
from foundry_mcp.context.reading.elsewhere import reading_processes
from foundry_mcp.context.reading.focus import RepeatLedger, focus_terms
from foundry_mcp.context.reading.passages import split_passages_with_breaks
from foundry_mcp.research.models import PageRecord, ResearchState, Source
from foundry_mcp.research.prompts.analyzer import render_source, source_text
from foundry_mcp.research.workflow.fitting.batches import (
    ReadySource,
    batch_capacity,
    pack,
    sub_query_of,
)
from foundry_mcp.research.workflow.fitting.fitter import Fitting
from foundry_mcp.research.workflow.reading.budget import count_read
from foundry_mcp.research.workflow.reading.readings import Readings
from foundry_mcp.research.workflow.reading.shares import focus_sources

_FRAME_ALLOWANCE = 200  # tokens of a source's title, address and snippet around its text


@dataclass
class Reading:
    """What one analysis sends of its pages: the batches (source id -> text, one call each),
    the sources whose passages were chosen to fit, and what it read of each page, kept for the
    record (its passages of how many, and the tokens sent)."""

    batches: list[dict[str, str]] = field(default_factory=list)
    selected: set[str] = field(default_factory=set)
    pages: dict[str, PageRecord] = field(default_factory=dict)

    def record(
        self, state: ResearchState, batch: Sequence[Source], readings: Readings | None
    ) -> None:
        """What the analyst was sent of each page of ``batch``: recorded for the research
        (``readings``, with its text), counted in the round's budget, and told in a
        ``page_read`` event."""
        texts = {source_id: text for sent in self.batches for source_id, text in sent.items()}
        for source in batch:
            page = self.pages.get(source.id)
            if page is None or not page.runs:
                continue
            if readings is not None:
                readings.record(source.id, page, state.branch, texts.get(source.id, ""))
            if not page.tokens:
                continue  # its passages were all read from other pages: nothing was sent
            count_read(state, page.tokens)
            state.emit(
                "page_read",
                {
                    "source_id": source.id,
                    "url": source.url,
                    "passages_read": page.count,
                    "passages": page.passages,
                    "tokens": page.tokens,
                },
            )


def _page_record(passages: int, chosen: Sequence[int], tokens: int) -> PageRecord:
    """What a reading read of one page: ``chosen`` of its ``passages``, ``tokens`` sent."""
    page = PageRecord(passages=passages, tokens=tokens)
    page.add(chosen)
    return page


def read_pages(
    fitting: Fitting,
    state: ResearchState,
    pending: Sequence[Source],
    *,
    room: int,
    allowance: int | None,
    read_before: Mapping[str, frozenset[int]],
    terms: Sequence[str],
    ledger: RepeatLedger | None,
) -> Reading:
    """The reading of ``pending`` (see the module); ``room``: what one call can carry;
    ``allowance``: the tokens of page text it may send (None: whole pages); ``read_before``: the
    passages of each page read earlier in the research."""
    protected = set(state.protected_content_ids)
    whole = [s for s in pending if allowance is None or s.id in protected]
    ready = _whole(fitting, state, whole, ledger, room) if whole else []
    pages = {
        item.source.id: _page_record(n, range(n), item.tokens)
        for item in ready
        if (n := len(split_passages_with_breaks(source_text(item.source))))
    }
    if allowance is not None:
        rest = [s for s in pending if s.id not in protected]
        budgeted, read = _budgeted(
            fitting, state, rest, allowance, read_before, terms, ledger, room
        )
        ready += budgeted
        pages.update(read)
    for source in pending:  # the originals' counts, cached for the ladder
        fitting.counter.count(source_text(source))
    capacity = batch_capacity(room, sum(item.tokens for item in ready))
    batches = [{item.source.id: item.text for item in b} for b in pack(ready, capacity)]
    return Reading(batches, {item.source.id for item in ready if item.selected}, pages)


def reading_terms(
    state: ResearchState,
    parts: Sequence[str],
    sources: Sequence[Source],
    also: Sequence[str] = (),
) -> list[str]:
    """What a reading is relevant to: the question (the research's, for a sub-question's
    researcher), its parts, the researcher's own question, the sub-queries that found
    ``sources``, and ``also`` (the analyzer's: the round's sub-queries, which may have found
    the same pages)."""
    found_by = [sub_query_of(state, s) for s in sources]
    return focus_terms(state.parent_query, state.query, *parts, *dict.fromkeys(found_by), *also)


def _whole(
    fitting: Fitting,
    state: ResearchState,
    pending: Sequence[Source],
    ledger: RepeatLedger | None,
    room: int,
) -> list[ReadySource]:
    if ledger is not None:
        seed_ledger(ledger, state)
    return focus_sources(
        state,
        pending,
        fitting.counter,
        ledger,
        round_budget=fitting.phase_budget("analysis"),
        room=room,
    )


def _budgeted(
    fitting: Fitting,
    state: ResearchState,
    pending: Sequence[Source],
    allowance: int,
    read_before: Mapping[str, frozenset[int]],
    terms: Sequence[str],
    ledger: RepeatLedger | None,
    room: int,
) -> tuple[list[ReadySource], dict[str, PageRecord]]:
    """The passages of ``pending`` worth most within ``allowance``; a passage read before from
    its page is not a candidate, and a sentence another page gave is worth nothing."""
    counter = fitting.counter
    if ledger is not None:
        seed_ledger(ledger, state)
    pages = [Page(s.id, source_text(s), read_before.get(s.id, frozenset())) for s in pending]
    known = frozenset(ledger.first_reader) if ledger is not None else frozenset()
    cap = max(1, batch_capacity(room) - _FRAME_ALLOWANCE)
    chosen = reading_processes().read_within(
        pages, terms, allowance, counter, known=known, page_cap=cap, reader=state.id
    )
    ready: list[ReadySource] = []
    read: dict[str, PageRecord] = {}
    for source, page, selection in zip(pending, pages, chosen, strict=True):
        read[source.id] = _page_record(selection.passages, selection.chosen, selection.tokens)
        if ledger is not None and selection.text:
            ledger.claim_text(source.id, selection.text)
        if not selection.text and (source.content or selection.chosen):
            # Nothing of it within the allowance (considered, not read), or nothing new in it
            # (its passages all read from other pages: read, not sent again).
            continue
        text = selection.text or source_text(source)  # a page of no text: its snippet
        frame = counter.count(render_source(source, "", ContentLevel.FULL))
        whole = selection.whole(page.read_before) and not page.read_before
        ready.append(ReadySource(source, text, counter.count(text) + frame, not whole))
    return ready, read


def seed_ledger(ledger: RepeatLedger, state: ResearchState) -> None:
    """Claim what earlier readings sent (a resumed run's ledger starts empty): the recorded
    passages of each page, or the whole text of a page analysed before readings were kept."""
    if ledger.first_reader:
        return
    for source in state.sources:
        if not source.analyzed or not source.content:
            continue
        record = state.readings.get(source.id)
        if record is None:
            ledger.claim_text(source.id, source.content)
            continue
        pieces = split_passages_with_breaks(source.content.strip())
        for i in record.read:
            if i < len(pieces):
                ledger.claim_text(source.id, pieces[i][0])
