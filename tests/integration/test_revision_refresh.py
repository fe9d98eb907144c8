"""Refreshing a completed research: its searches asked again for what was published since, its
cited pages read again, and a section saying what changed (or that nothing did, with no model
asked).

The world is a fake web of pages (read by the research's own page fetcher) and a fake search
engine that lists them; between the research and its refresh, the test changes the world: a
page's figure changes and it gains a sentence, a new page appears, a page is taken down, one
redirects elsewhere, and one's server is stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.research.models import ResearchState, RevisionKind
from foundry_mcp.research.revision.changes import REFRESH_HEADING
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, FakeResponse, ResearchBrain, article_html, fake_tavily
from tests.fakes.brain import SOURCE_TEXT_RE
from tests.fakes.planted import fact_analyst, facts_in
from tests.fakes.search_apis import html_page, redirect
from tests.research_env import research_environment
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How fast does Valkey evict keys under memory pressure?"
FILLER = (
    "The benchmark harness replays a production trace against a single node, measuring the "
    "latency of every eviction the node performs while memory stays at its configured limit."
)


class World:
    """Pages by path (their paragraphs; None: taken down) and what the search engine lists."""

    def __init__(self) -> None:
        self.pages: dict[str, list[str] | None] = {
            "/eviction": [
                "FACT-Valkey-1: Valkey evicted a key in 15 microseconds at the 99th percentile "
                "in the replay test.",
                FILLER,
            ],
            "/threads": [
                "FACT-Valkey-2: Valkey ran its evictions on one thread in the replay test of "
                "the small node.",
                FILLER,
            ],
        }
        self.listed = ["/eviction", "/threads"]
        self.moved: dict[str, str] = {}
        self.web = FakeHTTPServer()

    def _serve(self, path: str) -> FakeResponse:
        if path in self.moved:
            return redirect(self.moved[path], 301)
        paragraphs = self.pages.get(path)
        if paragraphs is None:
            return FakeResponse(404, body="not found")
        return html_page(article_html(f"Valkey notes {path.strip('/')}", paragraphs))

    def route(self, path: str) -> None:
        self.web.route("GET", path, lambda _request: self._serve(path))

    def results(self, query: str) -> list[dict[str, Any]]:
        """Every listed page (a path of the world's web, or another address as it is)."""
        return [
            {
                "title": f"Valkey eviction report: {path.rsplit('/', 1)[-1]} measurements",
                "url": path if path.startswith("http") else self.web.base_url + path,
                "content": "A report on Valkey evictions.",
                "score": 0.9 - 0.1 * rank,
            }
            for rank, path in enumerate(self.listed)
        ]


@pytest.fixture
def world() -> Iterator[World]:
    world = World()
    for path in ("/eviction", "/threads", "/latest", "/moved-here"):
        world.route(path)
    world.web.start()
    try:
        yield world
    finally:
        world.web.stop()


@pytest.fixture
def tavily_server(world: World) -> Iterator[FakeHTTPServer]:
    with fake_tavily(world.results) as server:
        yield server


@pytest.fixture
def settings(
    tmp_path: Path, openai_server: FakeHTTPServer, tavily_server: FakeHTTPServer
) -> Settings:
    """The suite's settings, with the pages read by the research's fetcher (from loopback)."""
    env = research_environment(tmp_path, openai_server, tavily_server)
    config = Path(env["FOUNDRY_MCP_CONFIG"])
    config.write_text(
        config.read_text().replace(
            "[research.fetch]\nenabled = false\n",
            "[research.fetch]\nenabled = true\nallow_private_networks = true\n",
        )
    )
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


@pytest.fixture
def careful(brain: ResearchBrain) -> ResearchBrain:
    """The analyst makes a finding of every fact it reads; the fact-checker checks figures."""
    brain.overrides["analyzer"] = fact_analyst(brain)
    brain.check_figures = True
    return brain


async def researched(service: ResearchService) -> str:
    started = await service.start(QUESTION, mode="simple", max_iterations=1)
    status = await wait_until(service, started["research_id"], TERMINAL, timeout=60)
    assert status["status"] == "completed", status["error"]
    return str(started["research_id"])


async def refreshed(service: ResearchService, research_id: str) -> ResearchState:
    await service.revise(research_id, {"kind": "refresh"})
    status = await wait_until(service, research_id, TERMINAL, timeout=60)
    assert status["status"] == "completed", status["error"]
    state = service.store.load(research_id)
    service.store.load_pages(state)
    return state


def by_path(state: ResearchState, world: World) -> dict[str, Any]:
    return {s.url.removeprefix(world.web.base_url): s for s in state.sources if s.url}


async def test_a_changed_page_and_a_new_one_are_both_in_what_changed(
    settings: Settings, careful: ResearchBrain, world: World, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        research_id = await researched(service)
        before = service.store.load(research_id)
        assert facts_in(before.report) == {"FACT-Valkey-1", "FACT-Valkey-2"}
        # The world moves on: a figure changes and a sentence is added; a page appears.
        world.pages["/eviction"] = [
            "FACT-Valkey-1: Valkey evicted a key in 40 microseconds at the 99th percentile "
            "in the replay test.",
            FILLER,
            "FACT-Valkey-3: Valkey's new eviction pool cut the evictions' memory overhead by "
            "a third in the replay test.",
        ]
        world.pages["/latest"] = [
            "FACT-Valkey-4: Valkey 9 evicts keys on two threads, halving the p99 under memory "
            "pressure in the replay test.",
            FILLER,
        ]
        world.listed.append("/latest")
        searched = len(tavily_server.requests_to("/search"))
        asked_before = len(careful.history)
        state = await refreshed(service, research_id)

    pages = by_path(state, world)
    changes = state.versions[-1].changes
    assert state.versions[-1].kind is RevisionKind.REFRESH and changes is not None
    assert changes.new_source_ids == [pages["/latest"].id]
    assert changes.changed_source_ids == [pages["/eviction"].id]
    assert not changes.moved_source_ids
    # The searches were asked again, bounded to what was published since the report.
    again = [r.json for r in tavily_server.requests_to("/search")[searched:]]
    assert again and all(body["start_date"] == f"{before.completed_at:%Y-%m-%d}" for body in again)
    # The analyst read the new page and what the changed one added, nothing else.
    analysts = [user for agent, _, user in careful.history[asked_before:] if agent == "analyzer"]
    sent = " ".join(text for user in analysts for _, text in SOURCE_TEXT_RE.findall(user))
    assert facts_in(sent) == {"FACT-Valkey-1", "FACT-Valkey-3", "FACT-Valkey-4"}
    assert "15 microseconds" not in sent and "one thread" not in sent
    assert sent.count(FILLER) == 1  # the new page's: the changed page's stayed as it was
    # The finding the changed page no longer supports is gone, and said to be.
    assert [f.content for f in changes.dropped_findings] == [
        f.content for f in before.findings if "15 microseconds" in f.content
    ]
    assert not any("15 microseconds" in f.content for f in state.findings)
    new_facts = facts_in(
        " ".join(f.content for f in state.findings if f.id in changes.new_finding_ids)
    )
    assert new_facts == {"FACT-Valkey-1", "FACT-Valkey-3", "FACT-Valkey-4"}
    report = state.report or ""
    assert REFRESH_HEADING in report
    section = report.split(REFRESH_HEADING, 1)[1].split("\n## ", 1)[0]
    # The new page's facts and the changed page's, and the changed page named.
    assert "/eviction" in section
    assert "15 microseconds" in section  # what no longer holds
    assert {"FACT-Valkey-3", "FACT-Valkey-4"} <= facts_in(section)


async def test_a_refresh_that_finds_nothing_asks_no_model_and_says_so(
    settings: Settings, careful: ResearchBrain, world: World, tavily_server: FakeHTTPServer
) -> None:
    async with research_runtime(settings, warm=False) as service:
        research_id = await researched(service)
        before = service.store.load(research_id)
        asked_before = len(careful.history)
        fetched_before = len(world.web.requests_to("/eviction"))
        state = await refreshed(service, research_id)

    assert careful.history[asked_before:] == []  # not one call to a model
    assert len(world.web.requests_to("/eviction")) == fetched_before + 1  # read again
    version = state.versions[-1]
    assert version.kind is RevisionKind.REFRESH and version.changes is not None
    assert version.changes.nothing_new and version.cost.total.calls == 0
    assert [f.id for f in state.findings] == [f.id for f in before.findings]
    report = state.report or ""
    assert REFRESH_HEADING in report and "Nothing was found" in report


async def test_pages_gone_or_moved_are_recorded_and_a_page_not_read_is_no_change(
    settings: Settings, careful: ResearchBrain, world: World, tavily_server: FakeHTTPServer
) -> None:
    elsewhere = FakeHTTPServer()
    elsewhere.route(
        "GET", "/gauges", lambda _r: html_page(article_html("Gauges", ["FACT-Valkey-5: " + FILLER]))
    )
    elsewhere.start()
    world.listed.append(elsewhere.base_url + "/gauges")
    async with research_runtime(settings, warm=False) as service:
        research_id = await researched(service)
        world.pages["/threads"] = None  # taken down
        world.moved["/eviction"] = world.web.base_url + "/moved-here"
        world.pages["/moved-here"] = world.pages["/eviction"]
        elsewhere.stop()  # its server is down: nothing can be said of its page
        state = await refreshed(service, research_id)

    pages = by_path(state, world)
    changes = state.versions[-1].changes
    assert changes is not None
    assert sorted(changes.moved_source_ids) == sorted([pages["/threads"].id, pages["/eviction"].id])
    assert changes.moved_to == {pages["/eviction"].id: world.web.base_url + "/moved-here"}
    gauges = next(s for s in state.sources if s.url and s.url.endswith("/gauges"))
    assert gauges.id not in changes.moved_source_ids + changes.changed_source_ids
    assert any("could not read 1 cited page" in w for w in state.warnings)
    # Every source stays, with the text it had.
    assert {s.id for s in state.sources} >= {pages["/threads"].id, pages["/eviction"].id}
    assert pages["/threads"].content and "FACT-Valkey-2" in pages["/threads"].content
