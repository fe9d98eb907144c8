"""Whole pages, stored once: page text lives in the store's page table, not in the state.

A research is saved after every phase, sub-query and batch; its state must not carry its pages,
or every save would rewrite them. These tests run whole research against the fakes: the state
bytes a research writes do not grow with the size of its pages, and a research resumed (also
one saved by a version that kept its text inline) reads its sources' text again. The store's
side (round trips, a page written once, deletion and retention) is in the contract suite,
``test_store_contract.py``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from foundry_mcp.config import Settings
from foundry_mcp.config.research_settings import ResearchSettings
from foundry_mcp.context.tokens import content_hash
from foundry_mcp.research.models import (
    Phase,
    ResearchState,
    Source,
    Status,
    SubQuery,
    SubQueryStatus,
)
from foundry_mcp.research.runs.records import RunBranches
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.research.store.opening import open_store
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.pages import lock_for_writes, write_pages
from foundry_mcp.research.store.sqlite.database import DB_NAME
from foundry_mcp.research.store.states import Snapshot
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_tavily, long_paragraphs, slugify
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How do ice cores record past climates?"
FACT = "Bubbles trapped at the bottom of the core held air from 41,200 years ago."
page_chars = {"now": 20_000}  # the size of the pages the fake search engine serves


def _page(n: int) -> str:
    return "\n\n".join(long_paragraphs(page_chars["now"], f"{FACT} (study {n})"))


def _pages(query: str) -> list[dict[str, Any]]:
    return [
        {
            "title": f"Ice core study {n}",
            "url": f"https://cores.example/{slugify(query)}/{n}",
            "content": f"Study {n} of ice cores and climate.",
            "raw_content": _page(n),
        }
        for n in range(2)
    ]


@pytest.fixture
def tavily_server() -> Iterator[FakeHTTPServer]:
    """The search engine of every test here: two pages per query, ``page_chars`` long."""
    page_chars["now"] = 20_000
    with fake_tavily(_pages) as server:
        yield server


def _count_state_bytes(service: ResearchService) -> dict[str, list[int]]:
    """Wrap the store so that the bytes of every state JSON it writes are recorded, by id."""
    written: dict[str, list[int]] = defaultdict(list)
    store = service.store

    def counting(save: Callable[..., None]) -> Callable[..., None]:
        def saving(state: ResearchState | Snapshot, *args: Any, **kwargs: Any) -> None:
            save(state, *args, **kwargs)
            stored = state if isinstance(state, Snapshot) else Snapshot.of(state)
            written[state.id].append(len(stored.json.encode()))

        return saving

    for name in ("save", "save_branch", "create"):
        setattr(store, name, counting(getattr(store, name)))
    return written


def _raw_state(settings: Settings, research_id: str) -> str:
    db = sqlite3.connect(settings.research.research_dir / DB_NAME)
    try:
        (row,) = db.execute("SELECT state FROM research WHERE id = ?", (research_id,))
        return str(row[0])
    finally:
        db.close()


async def test_state_bytes_written_per_research_do_not_grow_with_page_size(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    # The smallest reading budget: both page sizes are read in part, the same way.
    limits: dict[str, Any] = {
        "max_iterations": 1,
        "max_sub_queries": 2,
        "max_sources_per_query": 2,
        "reading_budget": 2_000,
    }
    largest: dict[int, int] = {}
    async with research_runtime(settings, warm=False) as service:
        written = _count_state_bytes(service)
        for chars in (20_000, 400_000):
            page_chars["now"] = chars
            research_id = (await service.start(QUESTION, **limits))["research_id"]
            status = await wait_until(service, research_id, TERMINAL, timeout=60)
            assert status["status"] == "completed", status["error"]
            largest[chars] = max(written[research_id])
            page = _page(0)
            assert page[len(page) // 2 :][:2_000] not in _raw_state(settings, research_id)
            with capsys.disabled():
                print(
                    f"\n{chars // 1000} KB pages: {len(written[research_id])} states written, "
                    f"{sum(written[research_id]):,} bytes, the largest {largest[chars]:,}"
                )
    # How many saves a run writes depends on how many of its checkpoints join a save still
    # queued; the state each holds does not grow with the page text.
    assert largest[400_000] < 400_000  # not even one page
    # Twenty times the page text, the same state: what differs is what the pages say (a few
    # more findings and claims to check), not their text (one page per save would be 12 MB).
    assert largest[400_000] <= largest[20_000] * 1.5


def _interrupted_in_analysis(service: ResearchService, text: str) -> ResearchState:
    """A research stopped before it analysed the one source it found (whose text is ``text``)."""
    provider, model = service.providers.resolve_llm(None, None)
    search, _ = service.providers.search_providers()
    source = Source(
        title="Ice core study", url="https://cores.example/a", snippet="Ice cores.", content=text
    )
    sub_query = SubQuery(
        query="ice core climate records",
        status=SubQueryStatus.COMPLETED,
        source_ids=[source.id],
        providers=search,
    )
    state = ResearchState(
        query=QUESTION,
        llm_provider=provider,
        llm_model=model,
        search_providers=search,
        status=Status.INTERRUPTED,
        phase=Phase.ANALYSIS,
        research_brief="How ice cores keep the air and snow of past climates.",
        sub_queries=[sub_query],
        sources=[source],
    )
    state.limits.max_iterations = 1
    return state


# A short page whose last sentence (the analyst restates the first ones) is read only from it.
SHORT_PAGE = (
    "Ice cores hold snow layers year by year. Each layer keeps dust and ash of its year. "
    "Isotope ratios in the ice track the temperature of the past. Volcanic ash dates a few "
    f"layers exactly. {FACT}"
)


def _analysed_texts(brain: ResearchBrain) -> str:
    return "\n".join(user for agent, _, user in brain.history if agent == "analyzer")


async def test_a_resumed_research_reads_its_sources_text(
    settings: Settings, brain: ResearchBrain
) -> None:
    async with research_runtime(settings, warm=False) as service:
        state = _interrupted_in_analysis(service, SHORT_PAGE)
        service.store.save(state)
        assert SHORT_PAGE not in _raw_state(settings, state.id)
        assert service.store.load(state.id).sources[0].content is None  # what status reads

        await service.resume(state.id)
        status = await wait_until(service, state.id, TERMINAL)
    assert status["status"] == "completed", status["error"]
    assert FACT in _analysed_texts(brain)  # the page, not the snippet, was analysed


async def test_a_state_with_its_text_inline_resumes_and_moves_the_text_out(
    settings: Settings, brain: ResearchBrain
) -> None:
    """A state saved before pages had their own table (schema 5, text inline) still runs."""
    async with research_runtime(settings, warm=False) as service:
        state = _interrupted_in_analysis(service, SHORT_PAGE)
        data = json.loads(state.model_dump_json())
        data["sources"][0]["content"] = SHORT_PAGE  # as the previous version wrote it
        del data["sources"][0]["content_hash"]
        db = sqlite3.connect(settings.research.research_dir / DB_NAME)
        with db:
            db.execute(
                "INSERT INTO research (id, status, phase, iteration, query, created_at, "
                "updated_at, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    state.id,
                    "interrupted",
                    "analysis",
                    1,
                    QUESTION,
                    state.created_at.isoformat(),
                    state.updated_at.isoformat(),
                    json.dumps(data),
                ),
            )
        db.close()
        assert service.store.load(state.id).sources[0].content == SHORT_PAGE  # read inline

        await service.resume(state.id)
        status = await wait_until(service, state.id, TERMINAL)
        assert status["status"] == "completed", status["error"]
        assert FACT in _analysed_texts(brain)
        assert SHORT_PAGE not in _raw_state(settings, state.id)  # moved out at the first save
        loaded = service.store.load(state.id)
        service.store.load_pages(loaded)
        assert loaded.sources[0].content == SHORT_PAGE


async def test_the_researchers_of_a_research_get_their_sources_text(settings: Settings) -> None:
    """Hierarchical research reads its researchers' states back (``load_branches``): with text."""
    async with research_runtime(settings, warm=False) as service:
        owner = Owner()
        research = _interrupted_in_analysis(service, "unused")
        service.store.create(research, owner, lease_seconds=30)
        texts = {"sq-1": f"First researcher's page. {FACT}", "sq-2": "Second researcher's page."}
        for branch_id, text in texts.items():
            branch = research.model_copy(
                update={"branch": branch_id, "sources": [Source(title=branch_id, content=text)]}
            )
            service.store.save_branch(branch, owner)
        branches = await RunBranches(service.io, owner, research.id, set()).load()
    assert {key: b.sources[0].content for key, b in branches.items()} == texts


def test_a_deletion_waits_for_a_save_linking_one_of_its_pages(
    postgres_url: str, tmp_path: Path
) -> None:
    """PostgreSQL, several servers: a deletion must not remove a page whose new link another
    server's save has not committed yet (it would see no other research using it)."""
    store = open_store(ResearchSettings(research_dir=tmp_path, store_url=postgres_url))
    try:
        page = "a page two research read"
        other = ResearchState(
            query="q",
            llm_provider="openai",
            llm_model="m",
            sources=[Source(title="p", content=page)],
        )
        kept = ResearchState(query="q", llm_provider="openai", llm_model="m")
        store.save(other)
        store.save(kept)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            with conn.transaction():  # a save of ``kept`` by another server, half done
                lock_for_writes(conn)
                write_pages(conn, kept.id, {content_hash(page): page})
                deleting = threading.Thread(target=store.delete, args=(other.id,))
                deleting.start()
                deleting.join(0.5)
                assert deleting.is_alive()  # it waits for the save
            deleting.join(10)
        kept.sources = [Source(title="p", content_hash=content_hash(page))]
        store.load_pages(kept)
        assert kept.sources[0].content == page
    finally:
        store.close()
