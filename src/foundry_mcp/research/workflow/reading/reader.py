"""Who reads which page of a research, so that each page's text goes to the analyst once.

One :class:`Reader` serves a whole research: in hierarchical mode the researchers of its
sub-questions share it (as they share the source pool), so a page two of them found is read by
the first, for the question and every part of it, and the second waits for that reading instead
of sending the text again. What was read is recorded on the research (``ResearchState.readings``:
the passages of each page sent, by source id), so a later round, a resume or a new sub-question
reads only what was not read before.

The analyst files each finding under the parts of the question it answers (the sub-questions,
by id). A finding for another part than the reading's own is kept on the research
(``ResearchState.filed``) until that part's researcher takes it (:meth:`Reader.receive`), with
the sources it cites: it reaches that part's answer though its page was read elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import anyio

from foundry_mcp.research.models import (
    BranchStatus,
    FiledFinding,
    Finding,
    PageReading,
    ResearchState,
    Source,
    SubQuestion,
)


class Reader:
    """The readings of one research and the findings filed between its parts."""

    def __init__(self, research: ResearchState) -> None:
        self.research = research
        self._busy: dict[str, anyio.Event] = {}

    # ------------------------------------------------------------------ parts

    def parts(self) -> list[SubQuestion]:
        """The parts of the question a reading files findings under: the research's
        sub-questions not answered yet (none in a research that is not decomposed)."""
        return [sq for sq in self.research.sub_questions if sq.status is not BranchStatus.COMPLETED]

    # ------------------------------------------------------------------ readings

    def read_before(self, source_id: str) -> frozenset[int]:
        """The passages of a source's page sent to the analyst in this research."""
        reading = self.research.readings.get(source_id)
        return frozenset(reading.read) if reading else frozenset()

    def is_read(self, source_id: str) -> bool:
        """Whether the analyst was sent any of the source's page in this research."""
        return source_id in self.research.readings

    async def claim(self, sources: Sequence[Source]) -> list[Source]:
        """Of ``sources``, those this caller reads now: each waits for a reading of it in
        flight elsewhere, and one read before is left out (its findings came with that
        reading). Release them with :meth:`release`."""
        mine: list[Source] = []
        for source in sources:
            while (busy := self._busy.get(source.id)) is not None:
                await busy.wait()
            if not self.is_read(source.id):
                self._busy[source.id] = anyio.Event()
                mine.append(source)
        return mine

    def release(self, sources: Iterable[Source]) -> None:
        """End this caller's readings of ``sources`` (done, or given up)."""
        for source in sources:
            busy = self._busy.pop(source.id, None)
            if busy is not None:
                busy.set()

    def record(
        self,
        source_id: str,
        passages: int,
        chosen: Iterable[int],
        tokens: int,
        reader: str | None = None,
    ) -> None:
        """Record that ``chosen`` passages (of ``passages``) of a page, ``tokens`` in all, were
        sent to the analyst by ``reader`` (a sub-question's researcher; None: the research's)."""
        reading = self.research.readings.get(source_id)
        if reading is None:
            reading = PageReading(passages=passages, reader=reader)
        reading.add(chosen)
        reading.passages = max(reading.passages, passages)
        reading.tokens += tokens
        self.research.readings[source_id] = reading

    def read_in_part(self, researcher: ResearchState) -> list[Source]:
        """The sources of ``researcher`` it may read more of: those it read, but not whole, and
        those it considered without reading any of them (nothing of them within its allowance
        then), whose text it still holds. A page another researcher read is that one's."""
        found = []
        for source in researcher.sources:
            if not source.analyzed or not source.content:
                continue
            reading = self.research.readings.get(source.id)
            if reading is None or (reading.reader == researcher.branch and not reading.whole):
                found.append(source)
        return found

    def forget(self, source_ids: Iterable[str], reader: str | None = None) -> None:
        """Forget what ``reader`` (a sub-question's researcher; None: the research's) read of
        these pages: its phase run again reads them again. Another researcher's reading stays."""
        for source_id in source_ids:
            reading = self.research.readings.get(source_id)
            if reading is not None and reading.reader == reader:
                del self.research.readings[source_id]

    # ------------------------------------------------------------------ filing

    def file(self, finding: Finding, sources: Sequence[Source], parts: Iterable[str]) -> None:
        """Keep ``finding`` (citing ``sources``) for each of ``parts``' researchers."""
        # Without their text: the reading researcher's state keeps it, once.
        cited = [
            s.model_copy(update={"content": None, "content_hash": None, "analyzed": True})
            for s in sources
            if s.id in finding.source_ids
        ]
        known = {sq.id for sq in self.research.sub_questions}
        for part in dict.fromkeys(parts):
            if part in known:
                self.research.filed.append(FiledFinding(part=part, finding=finding, sources=cited))

    def receive(self, branch: ResearchState) -> int:
        """Give a sub-question's researcher the findings other readings filed for it (each
        once, with the sources it cites, as read); how many it got."""
        if branch.branch is None:
            return 0
        have = {f.id for f in branch.findings}
        sources = {s.id for s in branch.sources}
        got = 0
        for filed in self.research.filed:
            if filed.part != branch.branch or filed.finding.id in have:
                continue
            for source in filed.sources:
                if source.id not in sources:
                    branch.sources.append(source.model_copy(update={"analyzed": True}))
                    sources.add(source.id)
            branch.findings.append(filed.finding.model_copy(deep=True))
            have.add(filed.finding.id)
            got += 1
        return got
