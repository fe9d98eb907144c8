"""The research's shared readings under stress: many researchers, overlapping pages, random
latencies, cancellations, resumes and retried analyses. Every research finishes and each passage
of a page goes to the analyst once.

Every search that names a cache finds the same six pages, each in an order of its own (as
different searches rank pages differently): the three researchers of a comparison claim the same
pages in different orders, the shape in which a researcher that waits while holding pages
deadlocks (A holds P and waits for Q; B holds Q and waits for P). Each provider request is held
back a random 0-0.2 s, so the researchers interleave differently on every run.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_google, fake_tavily
from tests.fakes.planted import ItemCorpus, fact_analyst, facts_in, names
from tests.fakes.sent import page_text_sent
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

ITEMS = ("Valkey", "Memcached", "Hazelcast")
PAGES = 6
MAX_DELAY = 0.2


def question(number: int) -> str:
    return f"Compare Valkey, Memcached and Hazelcast for eviction latency in study {number}"


def _sentence(page: int, n: int) -> str:
    item = ITEMS[n % 3]
    if n % 4 == 1:
        return (
            f"FACT-{item}-{page}{n}: {item} evicted a key in {page}{n} microseconds at the 99th "
            f"percentile in survey {page}'s eviction latency test."
        )
    return (
        f"Operators of {item} tune memory layout {page}.{n} and statistics export, which survey "
        f"{page} covers in section {n} in general terms only."
    )


class OverlappingPages(ItemCorpus):
    """Six pages that every query naming a cache finds, in an order that depends on the query."""

    def __init__(self) -> None:
        super().__init__(ITEMS)
        self.survey = [self._page(number) for number in range(1, PAGES + 1)]
        self.pages = {item: self.survey for item in ITEMS}

    def _page(self, number: int) -> dict[str, Any]:
        sentences = [_sentence(number, n) for n in range(1, 13)]
        return {
            "title": f"Cache survey {number}",
            "url": f"https://surveys.example.org/caches/{number}",
            "content": sentences[0],
            "raw_content": "\n\n".join(sentences),
            "facts": sorted(facts_in(" ".join(sentences))),
        }

    def ranked(self, query: str) -> list[dict[str, Any]]:
        if not any(names(query, item) for item in ITEMS):
            return []
        seed = int(hashlib.sha256(query.lower().encode()).hexdigest()[:8], 16)
        order = list(self.survey)
        random.Random(seed).shuffle(order)
        return order

    def __call__(self, query: str) -> list[dict[str, Any]]:
        return [
            {key: page[key] for key in self.RESULT_KEYS} | {"score": 0.9 - 0.05 * rank}
            for rank, page in enumerate(self.ranked(query))
        ]

    def google_items(self, query: str) -> list[dict[str, Any]]:
        """Google's answer: titles, links and two-sentence snippets (pages are not fetched)."""
        return [
            {
                "title": page["title"],
                "link": page["url"],
                "snippet": " ".join(page["raw_content"].split("\n\n")[:2]),
            }
            for page in self.ranked(query)
        ]


def _jitter(seed: int) -> Any:
    rng = random.Random(seed)

    def delay(request: Any, response: Any) -> float:
        return rng.uniform(0.0, MAX_DELAY)

    return delay


@pytest.fixture
def corpus() -> OverlappingPages:
    return OverlappingPages()


@pytest.fixture
def tavily_server(corpus: OverlappingPages) -> Iterator[FakeHTTPServer]:
    with fake_tavily(corpus) as server:
        server.delay = _jitter(1)
        yield server


@pytest.fixture
def google_server(corpus: OverlappingPages) -> Iterator[FakeHTTPServer]:
    with fake_google(corpus.google_items, api_key="g-key", cse_id="cx") as server:
        server.delay = _jitter(2)
        yield server


@pytest.fixture
def jittery(brain: ResearchBrain, openai_server: FakeHTTPServer) -> ResearchBrain:
    """The analyst makes a finding of every fact it reads; every LLM answer comes late."""
    brain.overrides["analyzer"] = fact_analyst(brain)
    openai_server.delay = _jitter(3)
    return brain


def google_settings(
    research_env: dict[str, str], tmp_path: Path, google_server: FakeHTTPServer
) -> Settings:
    """Google with snippets only; its pages are fetched, and every fetch is refused (no
    address outside the machine can be reached here)."""
    config = tmp_path / "google.toml"
    config.write_text(
        '[research]\ndeep_research_providers = ["google"]\n\n'
        "[research.fetch]\nenabled = true\n\n"
        "[providers.openai]\nmax_retries = 0\n\n[providers.google]\nmax_retries = 0\n"
    )
    env = {
        **research_env,
        "FOUNDRY_MCP_CONFIG": str(config),
        "GOOGLE_API_KEY": "g-key",
        "GOOGLE_CSE_ID": "cx",
        "GOOGLE_CSE_BASE_URL": google_server.base_url,
    }
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


def analyst_prompts(brain: ResearchBrain, asked: str) -> list[str]:
    return [user for agent, _, user in brain.history if agent == "analyzer" and asked in user]


def pages_of(state: ResearchState, corpus: OverlappingPages) -> dict[str, str]:
    texts = {page["url"]: page["raw_content"] for page in corpus.survey}
    return {s.id: texts[s.url] for s in state.sources if s.url in texts}


async def start_all(service: ResearchService, count: int, **options: Any) -> list[str]:
    ids = []
    for number in range(count):
        started = await service.start(
            question(number), mode="hierarchical", max_iterations=1, **options
        )
        ids.append(started["research_id"])
    return ids


async def finish_all(service: ResearchService, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each research's final status; fails if any does not end within the bound."""
    ended: dict[str, dict[str, Any]] = {}

    async def one(research_id: str) -> None:
        ended[research_id] = await wait_until(service, research_id, TERMINAL, timeout=150)

    async with anyio.create_task_group() as group:
        for research_id in ids:
            group.start_soon(one, research_id)
    return ended


async def research_all(
    service: ResearchService, count: int
) -> tuple[dict[str, dict[str, Any]], list[ResearchState], set[str]]:
    """``count`` researches started and finished: their final statuses, their states, and
    the ids of those an analysis of which was run again."""
    ids = await start_all(service, count)
    ended = await finish_all(service, ids)
    states = [service.store.load(research_id) for research_id in ids]
    return ended, states, {state.id for state in states if retried(service, state)}


def retried(service: ResearchService, state: ResearchState) -> bool:
    """Whether an analysis of the research (or of a researcher of it) was run again."""
    states = [state, *service.store.load_branches(state.id).values()]
    return any(d.action == "retry_phase" for s in states for d in s.decisions)


def assert_read_once(
    brain: ResearchBrain, state: ResearchState, corpus: OverlappingPages, *, again: bool
) -> None:
    """No passage of a page reached the analyst twice, and no page was read by two
    researchers: unless an analysis was run ``again`` (a retry, or a reading cut short by a
    cancel), which reads what it had read again by design."""
    prompts = analyst_prompts(brain, state.query)
    sent, distinct = page_text_sent(prompts, pages_of(state, corpus))
    assert distinct > 0, state.id
    if again:
        return
    assert sent <= 1.05 * distinct, (state.id, sent, distinct)
    readers: dict[str, set[str]] = {}
    for prompt in prompts:
        parts = re.findall(r"asked for part \[(\S+)\]", prompt)
        for page in corpus.survey:
            if page["url"] in prompt:
                readers.setdefault(page["url"], set()).update(parts)
    assert all(len(parts) <= 1 for parts in readers.values()), readers


def assert_every_part_answered(state: ResearchState) -> None:
    assert len(state.sub_questions) == 3
    stopped = [sq.error for sq in state.sub_questions if sq.status.value != "completed"]
    assert not stopped, stopped


async def test_many_researchers_sharing_pages_all_finish_and_read_each_page_once(
    settings: Settings, jittery: ResearchBrain, corpus: OverlappingPages
) -> None:
    async with research_runtime(settings, warm=False) as service:
        ended, states, again = await research_all(service, 6)
    assert {status["status"] for status in ended.values()} == {"completed"}, ended
    for state in states:
        assert_every_part_answered(state)
        assert_read_once(jittery, state, corpus, again=state.id in again)
        # Every fact of the pages reached the report, whichever researcher read its page.
        assert facts_in(state.report) == {t for page in corpus.survey for t in page["facts"]}


async def test_snippet_only_search_with_every_fetch_refused_completes(
    research_env: dict[str, str],
    tmp_path: Path,
    google_server: FakeHTTPServer,
    jittery: ResearchBrain,
    corpus: OverlappingPages,
) -> None:
    settings = google_settings(research_env, tmp_path, google_server)
    async with research_runtime(settings, warm=False) as service:
        ended, states, again = await research_all(service, 4)
    assert {status["status"] for status in ended.values()} == {"completed"}, ended
    for state in states:
        assert_every_part_answered(state)
        assert state.sources and all(s.provider == "google" for s in state.sources)
        # The pages could not be fetched: each source is its snippet, read by one researcher.
        assert_read_once(jittery, state, corpus, again=state.id in again)
        assert state.report and facts_in(state.report)


async def test_cancelled_researches_resume_and_finish_beside_running_ones(
    settings: Settings, jittery: ResearchBrain, corpus: OverlappingPages
) -> None:
    rng = random.Random(7)
    async with research_runtime(settings, warm=False) as service:
        ids = await start_all(service, 5)
        cancelled = ids[1::2]
        for research_id in cancelled:
            await anyio.sleep(rng.uniform(0.2, 1.5))
            await service.cancel(research_id)
        first = await finish_all(service, ids)
        stopped = [rid for rid in cancelled if first[rid]["status"] == "cancelled"]
        for research_id in stopped:
            await service.resume(research_id)
        ended = await finish_all(service, ids)
        states = [service.store.load(research_id) for research_id in ids]
        again = {state.id for state in states if retried(service, state)} | set(stopped)
    assert stopped  # the cancels came while researches ran
    assert {status["status"] for status in ended.values()} == {"completed"}, ended
    for state in states:
        assert_every_part_answered(state)
        assert state.report and facts_in(state.report)
        assert_read_once(jittery, state, corpus, again=state.id in again)


async def test_retried_analyses_claim_again_and_file_nothing_twice(
    settings: Settings, jittery: ResearchBrain, corpus: OverlappingPages
) -> None:
    """An analyst unsure at first (no high-confidence finding) makes every researcher's
    analysis gate fail and its analysis run again (sure, once told the attempt fell short),
    claiming its pages again, in another order, while the others read theirs; what the first
    readings filed for other parts is withdrawn."""
    careful = jittery.overrides["analyzer"]

    def unsure_at_times(system: str, user: str) -> str:
        answer = careful(system, user)
        if "previous attempt fell short" not in user:
            answer = answer.replace('"confidence": "high"', '"confidence": "low"')
        return answer

    jittery.overrides["analyzer"] = unsure_at_times
    async with research_runtime(settings, warm=False) as service:
        ended, states, again = await research_all(service, 4)
    assert {status["status"] for status in ended.values()} == {"completed"}, ended
    assert again  # the analyst's doubts did make researchers read again
    assert any(filed.withdrawn for state in states for filed in state.filed)
    for state in states:
        assert_every_part_answered(state)
        # Within each part, no fact is held by two findings: a withdrawn filing is gone.
        for sub_question in state.sub_questions:
            mine = [f for f in state.findings if f.sub_question_id == sub_question.id]
            held = Counter(tag for f in mine for tag in facts_in(f.content))
            assert all(count == 1 for count in held.values()), (sub_question.question, held)
