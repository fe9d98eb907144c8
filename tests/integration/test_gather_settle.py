"""A search's new pages wait a moment for the searches out with it, so their reading knows the
round's pages: searches that find the same pages are read in one reading, not a first one and
a further one after it."""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.providers.search.base import SearchResult
from foundry_mcp.research.llm.calls import CallLog
from foundry_mcp.research.models import (
    ResearchLimits,
    ResearchState,
    Source,
    SubQuery,
    SubQueryStatus,
)
from foundry_mcp.research.workflow.agents import gatherer
from foundry_mcp.research.workflow.reading.budget import round_allowance
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_tavily
from tests.fakes.planted import fact_analyst
from tests.integration.test_read_once import QUESTION, SharedSurveys
from tests.support import TERMINAL, wait_until

BUDGET = 3_000


class SlowQueries:
    """An in-process provider: the same page for every query, each after its own delay."""

    name = "slow"

    def __init__(self, delays: dict[str, float]) -> None:
        self.delays = delays
        self.returned: dict[str, float] = {}

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        await anyio.sleep(self.delays[query])
        self.returned[query] = time.perf_counter()
        return [SearchResult(title="Shared page", url="https://a.example/1", content="text")]

    async def aclose(self) -> None:
        pass


async def _gather(
    delays: dict[str, float],
) -> tuple[SlowQueries, list[tuple[float, list[str], int | None]]]:
    """Gather ``delays``' queries; per hand-on: when, its sources' urls, their allowance."""
    provider = SlowQueries(delays)
    state = ResearchState(
        query="q",
        llm_provider="openai",
        llm_model="m",
        limits=ResearchLimits(max_sources_per_query=3, reading_budget=BUDGET),
        sub_queries=[SubQuery(query=q) for q in delays],
    )
    handed: list[tuple[float, list[str], int | None]] = []

    async def on_sources(sources: list[Source]) -> None:
        allowance = round_allowance(state, sources)
        handed.append((time.perf_counter(), [s.url or "" for s in sources], allowance))

    async def checkpoint() -> None:
        pass

    await gatherer.gather(state, [provider], CallLog(), checkpoint, on_sources=on_sources)
    assert all(sq.status is SubQueryStatus.COMPLETED for sq in state.sub_queries)
    return provider, handed


@pytest.mark.anyio
async def test_new_pages_are_handed_on_once_the_searches_out_with_them_returned() -> None:
    provider, handed = await _gather({"first": 0.0, "second": 0.2, "third": 0.3})
    # The later searches found the same page: one hand-on, after the last search returned,
    # and its reading may spend the round's whole budget on it.
    ((at, urls, allowance),) = handed
    assert urls == ["https://a.example/1"]
    assert at >= max(provider.returned.values())
    assert allowance == BUDGET


@pytest.mark.anyio
async def test_new_pages_wait_no_longer_than_the_settling_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gatherer, "SETTLE_SECONDS", 0.1)
    started = time.perf_counter()
    provider, handed = await _gather({"first": 0.0, "late": 1.0})
    ((at, _, allowance),) = handed
    assert at - started < 0.6  # not held until the late search returned
    assert at < provider.returned["late"]
    assert allowance is not None and allowance < BUDGET  # a share: the late search may add pages


ANGLES_QUESTION = "Zephyr ring buffers"
FILLER = (
    "Section {n} of this manual lists configuration keys in alphabetical order, with their "
    "types and defaults, and says where each one is read at start-up; nothing in it concerns "
    "the matter at hand, and the section ends with a table of contents for the appendix."
)


def angles_page() -> dict[str, Any]:
    """A long manual every query finds: filler, and two facts far apart, each holding the
    words of one search's angle only (see the fake planner's angles)."""
    paragraphs = [FILLER.format(n=n) for n in range(80)]
    paragraphs[10] = "FACT-defs: The key definitions overview: a slot holds one record."
    paragraphs[70] = "FACT-risks: Its limitations, risks and criticisms: writers can starve."
    return {
        "title": "A manual",
        "url": "https://manual.example.org/zephyr",
        "content": "A manual.",
        "raw_content": "\n\n".join(paragraphs),
        "score": 0.9,
    }


class RandomPages:
    """An in-process provider: for each query a random latency and one or two pages, some
    shared with other queries."""

    name = "random"

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.began: dict[str, float] = {}
        self.returned: dict[str, float] = {}

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        self.began[query] = time.perf_counter()
        await anyio.sleep(self.rng.uniform(0, 0.05))
        self.returned[query] = time.perf_counter()
        pages = {f"https://r.example/{self.rng.randrange(6)}" for _ in range(2)}
        return [SearchResult(title=url, url=url, content="text") for url in sorted(pages)]

    async def aclose(self) -> None:
        pass


@pytest.mark.anyio
async def test_hand_ons_under_random_latencies_and_cancellation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each search's new pages are handed on once, never before the searches out with them
    returned or the settling time passed, never long after; a gathering cancelled mid-way
    ends at once, whatever was waiting."""
    settle = 0.02
    monkeypatch.setattr(gatherer, "SETTLE_SECONDS", settle)
    rng = random.Random(7)
    for trial in range(60):
        provider = RandomPages(rng)
        queries = [f"query {trial}.{n}" for n in range(rng.randint(2, 5))]
        state = ResearchState(
            query="q",
            llm_provider="openai",
            llm_model="m",
            limits=ResearchLimits(max_sources_per_query=2, max_concurrent=rng.randint(1, 5)),
            sub_queries=[SubQuery(query=q) for q in queries],
        )
        handed: list[tuple[float, set[str]]] = []
        on_sources = _recorder(handed, rng)

        async def checkpoint() -> None:
            pass

        cancel_at = rng.uniform(0, 0.05) if trial % 3 == 0 else None
        began = time.perf_counter()
        with anyio.fail_after(5):  # a wait that never ends fails here
            with anyio.move_on_after(cancel_at if cancel_at is not None else 10) as scope:
                await gatherer.gather(
                    state, [provider], CallLog(), checkpoint, on_sources=on_sources
                )
        if scope.cancelled_caught:
            assert time.perf_counter() - began < (cancel_at or 0) + 2.0  # no wait outlived it
            continue
        by_id = {sq.id: sq for sq in state.sub_queries}
        finders = [found for _, found in handed]
        assert all(len(found) == 1 for found in finders)  # one search's pages a hand-on
        found_new = {sq.id for sq in state.sub_queries if sq.source_ids}
        assert sorted(f for found in finders for f in found) == sorted(found_new)
        for at, (finder,) in ((at, tuple(found)) for at, found in handed):
            query = by_id[finder].query
            returned = provider.returned[query]
            # The searches out when it returned: begun before, returned after.
            out = [
                provider.returned[q]
                for q in provider.began
                if provider.began[q] < returned < provider.returned[q]
            ]
            waited_for = min(max(out, default=returned), returned + settle)
            assert returned <= at and at >= waited_for - 0.005
            assert at <= waited_for + 1.0  # generous: a loaded machine delays the loop


def _recorder(
    handed: list[tuple[float, set[str]]], rng: random.Random
) -> Callable[[list[Source]], Awaitable[None]]:
    """An ``on_sources`` that records when each hand-on came and which searches found it."""

    async def on_sources(sources: list[Source]) -> None:
        handed.append((time.perf_counter(), {s.sub_query_id or "" for s in sources}))
        await anyio.sleep(rng.uniform(0, 0.01))  # an analysis, for the ones after it

    return on_sources


class OneFastQuery(SharedSurveys):
    """For every query the same pages (the surveys, or the manual for a question about
    Zephyr); every query after the first takes 0.3 s."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def __call__(self, query: str) -> list[dict[str, Any]]:
        self.asked += 1
        if self.asked > 1:
            time.sleep(0.3)
        if "Zephyr" in query:
            return [angles_page()]
        return super().__call__(query)


@pytest.fixture
def tavily_server() -> Iterator[FakeHTTPServer]:
    with fake_tavily(OneFastQuery()) as server:
        yield server


@pytest.mark.anyio
async def _research(settings: Settings, brain: ResearchBrain, question: str) -> ResearchState:
    brain.overrides["analyzer"] = fact_analyst(brain)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(
            question, mode="simple", max_iterations=1, reading_budget=BUDGET
        )
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=60)
        assert status["status"] == "completed", status["error"]
        return service.store.load(started["research_id"])


def _analyst_prompts(brain: ResearchBrain) -> list[str]:
    return [user for agent, _, user in brain.history if agent == "analyzer"]


@pytest.mark.anyio
async def test_searches_that_find_the_same_pages_are_read_in_one_reading(
    settings: Settings, brain: ResearchBrain
) -> None:
    state = await _research(settings, brain, QUESTION)
    assert len(state.sub_queries) > 1 and len(state.sources) == 3
    prompts = _analyst_prompts(brain)
    # Each page went to the analyst in one call (no further reading of it), and that reading
    # spent the round's budget, not the share a first search's pages would have had.
    for source in state.sources:
        assert sum(f'<source id="{source.id}">' in p for p in prompts) == 1, source.url
    assert state.read_by_round[1] > BUDGET // 2


@pytest.mark.anyio
async def test_a_page_is_read_for_every_search_of_its_round(
    settings: Settings, brain: ResearchBrain
) -> None:
    """The manual was found first by one search, but its reading looks for what each of the
    round's searches asks (they all found it): both facts are read in its one reading."""
    state = await _research(settings, brain, ANGLES_QUESTION)
    assert len(state.sub_queries) > 1 and len(state.sources) == 1
    readings = [p for p in _analyst_prompts(brain) if "<source id=" in p]
    assert len(readings) == 1, "the manual was read in more than one reading"
    assert "FACT-defs" in readings[0] and "FACT-risks" in readings[0]


def _one_query_state() -> ResearchState:
    return ResearchState(
        query="q",
        llm_provider="openai",
        llm_model="m",
        limits=ResearchLimits(max_sources_per_query=3, reading_budget=BUDGET),
        sub_queries=[SubQuery(query="only")],
    )


@pytest.mark.anyio
async def test_new_pages_are_read_while_their_search_is_saved() -> None:
    """The reading of a search's pages does not wait for the save of what it found: the save
    is still out when they are handed on, and it writes them."""
    state = _one_query_state()
    handed = anyio.Event()
    saved: list[list[str]] = []

    async def on_sources(sources: list[Source]) -> None:
        handed.set()

    async def checkpoint() -> None:
        with anyio.fail_after(5):  # waiting for the reading that waited for this save: stuck
            await handed.wait()
        saved.append([s.url or "" for s in state.sources])

    await gatherer.gather(
        state, [SlowQueries({"only": 0.0})], CallLog(), checkpoint, on_sources=on_sources
    )
    assert saved == [["https://a.example/1"]]
    assert state.sub_queries[0].status is SubQueryStatus.COMPLETED


class SaveFailed(Exception):
    pass


@pytest.mark.anyio
async def test_a_failed_save_stops_the_reading_and_is_raised_as_itself() -> None:
    state = _one_query_state()
    reading_ended = False

    async def on_sources(sources: list[Source]) -> None:
        nonlocal reading_ended
        await anyio.sleep(10)
        reading_ended = True

    async def checkpoint() -> None:
        await anyio.sleep(0.01)
        raise SaveFailed("the disk is full")

    with anyio.fail_after(5), pytest.raises(SaveFailed, match="the disk is full"):
        await gatherer.gather(
            state, [SlowQueries({"only": 0.0})], CallLog(), checkpoint, on_sources=on_sources
        )
    assert not reading_ended
