"""Each page is read once per research, for every part of the question it serves.

The corpus: a comparison of three caches whose every search, whichever cache it names, finds the
same three survey pages, each holding facts about all three among long stretches of prose. So
in a hierarchical research the three sub-questions' researchers find the same pages: one of
them reads each page, for the whole question, and files each fact under the part it answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.research.models import Phase, ResearchState
from foundry_mcp.research.workflow.supervisor import SupervisorHooks
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_tavily
from tests.fakes.planted import ItemCorpus, fact_analyst, facts_in, names
from tests.fakes.sent import page_text_sent
from tests.support import TERMINAL, wait_until

ITEMS = ("Valkey", "Memcached", "Hazelcast")
QUESTION = "Compare Valkey, Memcached and Hazelcast for eviction latency"
PROSE = (
    "Caching systems differ in how they organise memory, how they expose statistics and how "
    "their client libraries reconnect after a network partition; operators of {item} tune "
    "these settings for section {n}, which the survey describes in general terms only."
)


class SharedSurveys(ItemCorpus):
    """Three survey pages that every query naming a cache finds (see the module)."""

    def __init__(self) -> None:
        super().__init__(ITEMS)
        self.survey = [self._page(number) for number in range(1, 4)]
        self.pages = {item: self.survey for item in ITEMS}

    def _page(self, number: int) -> dict[str, Any]:
        paragraphs: list[str] = []
        tags: list[str] = []
        for n in range(1, 31):
            item = ITEMS[n % 3]
            paragraphs.append(PROSE.format(item=item, n=f"{number}.{n}"))
            if n % 10 == 5:  # three facts a page, one about each cache, far apart
                tag = f"FACT-{item}-{number}{n}"
                tags.append(tag)
                paragraphs.append(
                    f"{tag}: {item} evicted a key in {number}{n} microseconds at the 99th "
                    f"percentile in survey {number}'s eviction latency test."
                )
        return {
            "title": f"Cache survey {number}",
            "url": f"https://surveys.example.org/caches/{number}",
            "content": f"A survey of cache eviction latency, part {number}.",
            "raw_content": "\n\n".join(paragraphs),
            "facts": tags,
        }

    def __call__(self, query: str) -> list[dict[str, Any]]:
        if not any(names(query, item) for item in ITEMS):
            return []
        return [
            {key: page[key] for key in self.RESULT_KEYS} | {"score": 0.9 - 0.1 * rank}
            for rank, page in enumerate(self.survey)
        ]


@pytest.fixture
def tavily_server() -> Iterator[FakeHTTPServer]:
    with fake_tavily(SharedSurveys()) as server:
        yield server


@pytest.fixture
def careful(brain: ResearchBrain) -> ResearchBrain:
    """The analyst makes a finding of every fact it reads, filed under the part it names."""
    brain.overrides["analyzer"] = fact_analyst(brain)
    return brain


def analyst_prompts(brain: ResearchBrain) -> list[str]:
    return [user for agent, _, user in brain.history if agent == "analyzer"]


def pages_of(state: ResearchState) -> dict[str, str]:
    """The survey page each source of ``state`` is, by source id."""
    texts = {page["url"]: page["raw_content"] for page in SharedSurveys().survey}
    return {s.id: texts[s.url] for s in state.sources if s.url in texts}


async def research(settings: Settings, **options: Any) -> ResearchState:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, **options)
        status = await wait_until(service, started["research_id"], TERMINAL, timeout=60)
        assert status["status"] == "completed", status["error"]
        return service.store.load(started["research_id"])


@pytest.mark.anyio
async def test_a_page_three_parts_found_is_read_once_and_serves_each_part(
    settings: Settings, careful: ResearchBrain
) -> None:
    state = await research(settings, mode="hierarchical", max_iterations=1)
    prompts = analyst_prompts(careful)
    sent, distinct = page_text_sent(prompts, pages_of(state))
    assert distinct > 0 and sent <= 1.05 * distinct, (sent, distinct)
    # Each survey page was read by one researcher, whichever (in one call, or in two when the
    # first call's share of the round did not hold the three pages and the rest was read after).
    readers = [re.findall(r"asked for part \[(\S+)\]", prompt) for prompt in prompts]
    for number in range(1, 4):
        url = f"https://surveys.example.org/caches/{number}"
        read_by = {
            part
            for prompt, parts in zip(prompts, readers, strict=True)
            if url in prompt
            for part in parts
        }
        assert len(read_by) == 1, (url, readers)
    # Its facts reached the parts they answer, though two of the three researchers never read
    # the page: each sub-question's findings hold its own cache's facts.
    by_part = {sq.id: sq for sq in state.sub_questions}
    assert len(by_part) == 3
    for finding in state.findings:
        if facts_in(finding.content):
            item = next(i for i in ITEMS if i in finding.content)
            part = by_part[finding.sub_question_id or ""]
            assert item in part.question, (finding, readers, state.sub_questions)
    planted = {tag for page in SharedSurveys().survey for tag in page["facts"]}
    assert facts_in(state.report) == planted
    answered = {
        item: facts_in(" ".join(f.content for f in state.findings if item in f.content))
        for item in ITEMS
    }
    # (A finding may name another cache beside its own, as a comparison does: which finding
    # holds which depends on the order the researchers ran in; every cache's own three facts
    # reach findings naming it, whatever that order.)
    own = {
        item: {tag for tag in tags if tag.startswith(f"FACT-{item}-")}
        for item, tags in answered.items()
    }
    assert all(len(tags) == 3 for tags in own.values()), answered
    # The analyst saw the user's question and the part a reading was for.
    assert all(
        QUESTION in prompt and "This reading was asked for part" in prompt for prompt in prompts
    )


@pytest.mark.anyio
async def test_a_later_round_reads_only_what_was_not_read(
    settings: Settings, careful: ResearchBrain
) -> None:
    """A budget smaller than the pages: round one reads the passages worth most, round two
    (and the further reading of pages read in part) only passages not read before."""
    state = await research(settings, mode="simple", max_iterations=2, reading_budget=2_000)
    sent, distinct = page_text_sent(analyst_prompts(careful), pages_of(state))
    assert distinct > 0 and sent <= 1.05 * distinct, (sent, distinct)
    # Each round read within its budget, the second only what the first left unread.
    assert sorted(state.read_by_round) == [1, 2]
    assert all(0 < tokens <= 2_000 for tokens in state.read_by_round.values())
    assert sum(r.tokens for r in state.readings.values()) == sum(state.read_by_round.values())
    assert any(not r.whole for r in state.readings.values())


class CancelAtSecondRound(SupervisorHooks):
    """Cancels the research when its second round's gathering starts."""

    def __init__(self) -> None:
        self.reached = anyio.Event()

    async def on_phase_start(self, state: ResearchState, phase: Phase) -> None:
        if phase is Phase.GATHERING and state.iteration == 2:
            self.reached.set()
            await anyio.sleep_forever()


@pytest.mark.anyio
async def test_a_resumed_research_does_not_read_again_what_it_read(
    settings: Settings, careful: ResearchBrain
) -> None:
    hooks = CancelAtSecondRound()
    async with research_runtime(settings, hooks, warm=False) as service:
        started = await service.start(
            QUESTION, mode="simple", max_iterations=2, reading_budget=2_000
        )
        research_id = started["research_id"]
        with anyio.fail_after(30):
            await hooks.reached.wait()
        await service.cancel(research_id)
        await wait_until(service, research_id, TERMINAL)
    read_before = len(analyst_prompts(careful))
    assert read_before >= 1
    async with research_runtime(settings, warm=False) as service:
        await service.resume(research_id)
        status = await wait_until(service, research_id, TERMINAL, timeout=60)
        assert status["status"] == "completed", status["error"]
        state = service.store.load(research_id)
    prompts = analyst_prompts(careful)
    assert len(prompts) > read_before  # the resumed run read more
    sent, distinct = page_text_sent(prompts, pages_of(state))
    assert sent <= 1.05 * distinct, (sent, distinct)
