"""The readings' claims under stress: researchers sharing pages never wait on each other in a
circle, never send a page twice, and leave nothing claimed, whatever the interleaving.

The analyser's own claim loop (``workflow.agents.analyzer.analyze``) runs for real against one
:class:`Readings`; only the reading itself (``_analyze_sources``: the LLM call) is replaced by a
stand-in that takes a random few milliseconds and records what it read. Each trial gives three to
five researchers random overlapping subsets of eight pages, in random orders, several claims per
researcher at once (as the pipeline analyses each search's pages while the next is searched);
some trials cancel readings mid-way and resume them, others retry a researcher's analysis. A
researcher that waits while holding pages deadlocks in such trials (A holds P and waits for Q
while C holds Q and waits for P); every trial here must end within its bound.
"""

from __future__ import annotations

import random
from collections import Counter

import anyio
import pytest

from foundry_mcp.research.models import PageRecord, ResearchState, Source, SubQuestion
from foundry_mcp.research.workflow.agents import analyzer
from foundry_mcp.research.workflow.reading.readings import Readings

pytestmark = pytest.mark.anyio

PAGES = [f"src-{n:08x}" for n in range(8)]
LLM = {"llm_provider": "openai", "llm_model": "gpt-test"}
TRIALS = 120


class Analyst:
    """A stand-in for the analyst's reading: a random latency, then the pages recorded."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.sent: list[tuple[str | None, str]] = []  # (researcher, page) of finished readings
        self.reading: Counter[str] = Counter()  # pages being read at this moment

    async def __call__(
        self, analysis: analyzer.Analysis, pending: list[Source], *, further: int | None = None
    ) -> None:
        state, readings = analysis.state, analysis.readings
        for source in pending:
            self.reading[source.id] += 1
            assert self.reading[source.id] == 1, f"{source.id} is read twice at once"
        try:
            await anyio.sleep(self.rng.uniform(0, 0.004))
            assert readings is not None
            for source in pending:
                readings.record(
                    source.id, PageRecord(passages=1, runs=[(0, 0)], tokens=10), state.branch
                )
                source.analyzed = True
                self.sent.append((state.branch, source.id))
        finally:
            for source in pending:
                self.reading[source.id] -= 1


def researchers(rng: random.Random) -> tuple[ResearchState, list[ResearchState]]:
    parts = [SubQuestion(question=f"part {n} of the question") for n in range(rng.randint(3, 5))]
    research = ResearchState(query="the question", sub_questions=parts, **LLM)
    branches = []
    for part in parts:
        pages = rng.sample(PAGES, rng.randint(3, len(PAGES)))
        branch = ResearchState(query=part.question, branch=part.id, **LLM)
        branch.sources = [Source(id=page, title=page) for page in pages]
        branches.append(branch)
    return research, branches


def claims_of(rng: random.Random, branch: ResearchState) -> list[list[Source]]:
    """A researcher's pages as its searches returned them: two or three overlapping claims,
    each in an order of its own."""
    claims = []
    for _ in range(rng.randint(2, 3)):
        chosen = rng.sample(branch.sources, rng.randint(1, len(branch.sources)))
        claims.append(chosen)
    return claims


async def nothing() -> None:
    return None


async def analyse(branch: ResearchState, sources: list[Source], readings: Readings) -> None:
    await analyzer.analyze(None, branch, None, nothing, sources=sources, readings=readings)  # type: ignore[arg-type]


async def run_trial(seed: int, *, cancel: bool, retry: bool) -> None:
    rng = random.Random(seed)
    analyst = Analyst(rng)
    research, branches = researchers(rng)
    readings = Readings(research)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(analyzer, "_analyze_sources", analyst)
        with anyio.fail_after(10):  # a deadlock never ends; every trial here ends in far less
            async with anyio.create_task_group() as group:
                for branch in branches:
                    for claim in claims_of(rng, branch):
                        group.start_soon(_maybe_cancelled, rng, branch, claim, readings, cancel)
            # The analysis phase (after a resume, too): each analyses what it has not yet.
            async with anyio.create_task_group() as group:
                for branch in branches:
                    group.start_soon(analyse, branch, branch.sources, readings)
            if retry:  # one researcher's analysis runs again while the others read on
                again = rng.choice(branches)
                forgotten = readings.forget([s.id for s in again.sources], again.branch)
                for source in again.sources:
                    if source.id in forgotten:
                        source.analyzed = False
                async with anyio.create_task_group() as group:
                    group.start_soon(analyse, again, again.sources, readings)
    assert not any(readings.is_busy(page) for page in PAGES), "a claim was never released"
    sent = Counter(page for _, page in analyst.sent)
    found = {s.id for branch in branches for s in branch.sources}
    # Every page a researcher found was read, and (a retried reading aside) once in the research.
    assert set(sent) == found
    assert all(times == 1 for times in sent.values()) or retry, sent
    if retry:
        assert all(times <= 2 for times in sent.values()), sent
    assert all(source.analyzed for branch in branches for source in branch.sources)


async def _maybe_cancelled(
    rng: random.Random,
    branch: ResearchState,
    claim: list[Source],
    readings: Readings,
    cancel: bool,
) -> None:
    with anyio.CancelScope() as scope:
        if cancel and rng.random() < 0.3:
            deadline = rng.uniform(0, 0.006)
            scope.deadline = anyio.current_time() + deadline
        await analyse(branch, claim, readings)


@pytest.mark.parametrize("cancel,retry", [(False, False), (True, False), (False, True)])
async def test_researchers_sharing_pages_never_deadlock_and_read_each_page_once(
    cancel: bool, retry: bool
) -> None:
    for seed in range(TRIALS):
        await run_trial(seed, cancel=cancel, retry=retry)


async def test_a_claim_cancelled_while_others_wait_is_released_and_read_by_a_waiter() -> None:
    research = ResearchState(query="q", sub_questions=[SubQuestion(question="a part of q")], **LLM)
    readings = Readings(research)
    page = Source(id="src-00000001", title="page")
    twin = page.model_copy()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            with anyio.CancelScope() as holder:
                with readings.claimed([page]) as first:
                    assert first.mine == [page]
                    with readings.claimed([twin]) as second:
                        assert second.busy == [twin] and not second.mine  # never waits
                    group.start_soon(readings.settle, [twin])
                    holder.cancel()
                    await anyio.sleep_forever()
    assert not readings.is_busy(page.id)
    with readings.claimed([twin]) as third:
        assert third.mine == [twin]  # the cancelled reading recorded nothing: read it here


async def test_further_reading_leaves_a_page_being_read_to_its_reader() -> None:
    research = ResearchState(query="q", **LLM)
    readings = Readings(research)
    mine = ResearchState(query="q", **LLM)
    page = Source(id="src-00000002", title="page", content="text " * 50, analyzed=True)
    mine.sources = [page]
    other = page.model_copy(update={"analyzed": False})
    with readings.claimed([other]), readings.claimed_further(mine) as further:
        assert further == []  # another reading has it now
    with readings.claimed_further(mine) as further:
        assert further == [page]
        assert readings.is_busy(page.id)
    assert not readings.is_busy(page.id)


def test_the_text_sent_is_kept_for_the_fact_checker_of_pages_this_run_read_from_the_start() -> None:
    research = ResearchState(query="q", **LLM)
    research.readings["src-old"] = PageRecord(passages=4, runs=[(0, 0)], tokens=10)
    readings = Readings(research)  # a resumed run: src-old was read before it

    readings.record("src-new", PageRecord(passages=4, runs=[(0, 1)], tokens=10), None, "first")
    readings.record("src-new", PageRecord(passages=4, runs=[(3, 3)], tokens=5), None, "more")
    readings.record("src-old", PageRecord(passages=4, runs=[(2, 2)], tokens=5), None, "later")

    # The fact-checker matches src-new against both readings' text; src-old whole, as this run
    # does not know what its earlier reading sent.
    assert research.pages_sent() == {"src-new": ["first", "more"]}
    readings.forget(["src-new"])
    assert research.pages_sent() == {}
