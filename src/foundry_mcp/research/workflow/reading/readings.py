"""The research's readings: who reads which page, what was read of it, and the findings filed
between the question's parts, so that each page's text goes to the analyst once.

One :class:`Readings` serves a whole research: in hierarchical mode the researchers of its
sub-questions share it (as they share the source pool), so a page two of them found is read by
the first, for the question and every part of it, and the second takes that reading's findings
instead of sending the text again. What was read is recorded on the research
(``ResearchState.readings``: a :class:`~foundry_mcp.research.models.PageRecord` a page, by
source id), so a later round, a resume or a new sub-question reads only what was not read before.

**Claims never wait.** A researcher claims the pages it is about to read
(:meth:`Readings.claimed`); the claim takes, at once, every page nobody is reading and nobody
has read, and tells the researcher which pages were read before and which another is reading
now. It never waits while it holds a page: a researcher that wants the busy ones reads its own
first, releases them, and only then waits (:meth:`Readings.settle`), holding nothing. So no set
of researchers sharing pages can wait on each other in a circle, in whatever order they claim
(an analysis retried claims its pages again in another order). Claims are released on every
path, cancellation included. A further reading of a page read in part claims it the same way
(:meth:`Readings.claimed_further`): two researchers never send the same passages.

The analyst files each finding under the parts of the question it answers (the sub-questions,
by id). A finding for another part than the reading's own is kept on the research
(``ResearchState.filed``) until that part's researcher takes it (:meth:`Readings.receive`), with
the sources it cites: it reaches that part's answer though its page was read elsewhere. A
reading done again (a retried analysis) withdraws what it filed, so its parts do not get the
same fact twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio

from foundry_mcp.research.models import (
    BranchStatus,
    FiledFinding,
    Finding,
    PageRecord,
    ResearchState,
    Source,
    SubQuestion,
)


@dataclass
class Claim:
    """One caller's hold on some pages: those it reads now (``mine``), those read before in
    the research (``read``: their findings were filed), and those another caller is reading
    now (``busy``: wait for them with :meth:`Readings.settle`, after releasing ``mine``)."""

    mine: list[Source] = field(default_factory=list)
    read: list[Source] = field(default_factory=list)
    busy: list[Source] = field(default_factory=list)


class Readings:
    """The readings of one research and the findings filed between its parts."""

    def __init__(self, research: ResearchState) -> None:
        self.research = research
        self._busy: dict[str, anyio.Event] = {}

    # ------------------------------------------------------------------ parts

    def parts(self) -> list[SubQuestion]:
        """The parts of the question a reading files findings under: the research's
        sub-questions not answered yet (none in a research that is not decomposed)."""
        return [sq for sq in self.research.sub_questions if sq.status is not BranchStatus.COMPLETED]

    # ------------------------------------------------------------------ claims

    def read_before(self, source_id: str) -> frozenset[int]:
        """The passages of a source's page sent to the analyst in this research."""
        record = self.research.readings.get(source_id)
        return frozenset(record.read) if record else frozenset()

    def is_read(self, source_id: str) -> bool:
        """Whether the analyst was sent any of the source's page in this research."""
        return source_id in self.research.readings

    def is_busy(self, source_id: str) -> bool:
        """Whether a caller is reading the source's page now."""
        return source_id in self._busy

    @contextmanager
    def claimed(self, sources: Sequence[Source]) -> Iterator[Claim]:
        """Claim ``sources`` for a first reading (see the module), without waiting; the pages
        taken are released when the block ends, however it ends."""
        claim = Claim()
        for source in sources:
            if self.is_busy(source.id):
                claim.busy.append(source)
            elif self.is_read(source.id):
                claim.read.append(source)
            else:
                self._take(source)
                claim.mine.append(source)
        try:
            yield claim
        finally:
            self._release(claim.mine)

    @contextmanager
    def claimed_further(self, researcher: ResearchState) -> Iterator[list[Source]]:
        """Claim, without waiting, the sources of ``researcher`` it may read more of: those it
        read, but not whole, and those it considered without reading any of them (nothing of
        them within its allowance then), whose text it still holds. A page another researcher
        read is that one's; a page being read now is left to its reader. Released when the
        block ends."""
        mine: list[Source] = []
        for source in researcher.sources:
            if not source.analyzed or not source.content or self.is_busy(source.id):
                continue
            record = self.research.readings.get(source.id)
            if record is None or (record.reader == researcher.branch and not record.whole):
                self._take(source)
                mine.append(source)
        try:
            yield mine
        finally:
            self._release(mine)

    async def settle(self, sources: Iterable[Source]) -> None:
        """Wait until none of ``sources`` is being read by the callers reading them now. Call
        it holding no claim: the reading waited for may itself wait for nothing but providers."""
        for source in sources:
            busy = self._busy.get(source.id)
            if busy is not None:
                await busy.wait()

    def _take(self, source: Source) -> None:
        self._busy[source.id] = anyio.Event()

    def _release(self, sources: Iterable[Source]) -> None:
        for source in sources:
            busy = self._busy.pop(source.id, None)
            if busy is not None:
                busy.set()

    # ------------------------------------------------------------------ records

    def record(
        self, source_id: str, page: PageRecord, reader: str | None = None, text: str = ""
    ) -> None:
        """Record that a reading by ``reader`` (a sub-question's researcher; None: the
        research's) read ``page`` (its passages read, of how many, and the tokens sent) of a
        source's page, sending ``text`` of it (kept for this run's fact-checker, for a page
        whose every reading it saw: not one read before a resume)."""
        record = self.research.readings.get(source_id)
        sent = self.research.pages_sent()
        if text and (record is None or source_id in sent):
            sent.setdefault(source_id, []).append(text)
        if record is None:
            record = PageRecord(passages=page.passages, reader=reader)
        record.add(page.read)
        record.passages = max(record.passages, page.passages)
        record.tokens += page.tokens
        self.research.readings[source_id] = record

    def forget(self, source_ids: Iterable[str], reader: str | None = None) -> list[str]:
        """Forget what ``reader`` (a sub-question's researcher; None: the research's) read of
        these pages, and withdraw what those readings filed for other parts: its phase run
        again reads them again. Another researcher's reading stays. Returns the pages
        forgotten."""
        forgotten: set[str] = set()
        for source_id in source_ids:
            record = self.research.readings.get(source_id)
            if record is not None and record.reader == reader:
                del self.research.readings[source_id]
                self.research.pages_sent().pop(source_id, None)
                forgotten.add(source_id)
        for filed in self.research.filed:
            if filed.by == reader and forgotten.intersection(filed.finding.source_ids):
                filed.withdrawn = True
        return sorted(forgotten)

    # ------------------------------------------------------------------ filing

    def file(
        self,
        finding: Finding,
        sources: Sequence[Source],
        parts: Iterable[str],
        by: str | None = None,
    ) -> None:
        """Keep ``finding`` (citing ``sources``, found by ``by``'s reading) for each of
        ``parts``' researchers."""
        # Without their text: the reading researcher's state keeps it, once.
        cited = [
            s.model_copy(update={"content": None, "content_hash": None, "analyzed": True})
            for s in sources
            if s.id in finding.source_ids
        ]
        known = {sq.id for sq in self.research.sub_questions}
        for part in dict.fromkeys(parts):
            if part in known:
                self.research.filed.append(
                    FiledFinding(part=part, finding=finding, sources=cited, by=by)
                )

    def withdrawn(self) -> set[str]:
        """The ids of findings filed by readings that were done again."""
        return {filed.finding.id for filed in self.research.filed if filed.withdrawn}

    def receive(self, branch: ResearchState) -> int:
        """Give a sub-question's researcher the findings other readings filed for it (each
        once, with the sources it cites, as read), and take back those withdrawn since; how
        many it got."""
        if branch.branch is None:
            return 0
        withdrawn = self.withdrawn()
        if withdrawn:
            branch.findings = [f for f in branch.findings if f.id not in withdrawn]
        have = {f.id for f in branch.findings}
        sources = {s.id for s in branch.sources}
        got = 0
        for filed in self.research.filed:
            if filed.part != branch.branch or filed.withdrawn or filed.finding.id in have:
                continue
            for source in filed.sources:
                if source.id not in sources:
                    branch.sources.append(source.model_copy(update={"analyzed": True}))
                    sources.add(source.id)
            branch.findings.append(filed.finding.model_copy(deep=True))
            have.add(filed.finding.id)
            got += 1
        return got
