"""A research bounded to some sources: the search service is sent the bounds in its own terms,
and whatever it lets through anyway is dropped before anything is read: a page outside the
bounds is never fetched (nor redirected to) and never cited; the status says which service
applied which bound itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.errors import InputError
from foundry_mcp.providers.pages.fetch import FetchResult, PageFetcher
from foundry_mcp.research.models import ResearchState
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer
from tests.fakes.providers import default_results, fake_tavily
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How do heat pumps defrost in cold climates?"
BOUNDS = {
    "include_domains": ["docs.example.org"],
    "exclude_domains": ["blog.example.net", "encyclopedia.example.org"],
    "published_after": "2024-01-01",
}


def _results(query: str) -> list[dict[str, Any]]:
    """The default pages (docs.example.org, and the shared encyclopedia page, which holds the
    same facts), one page without text on each side, a blog post and an old news item: a
    service that ignores the filters it is sent."""
    found = default_results(query, 4)
    found += [
        {"title": "Docs page to read", "url": "https://docs.example.org/to-read", "content": ""},
        {"title": "Excluded page to read", "url": "https://encyclopedia.example.org/read"},
        {
            "title": "A blog post",
            "url": "https://blog.example.net/heat-pumps",
            "content": "Heat pumps defrost by reversing the cycle for a few minutes.",
        },
        {
            "title": "An old note",
            "url": "https://docs.example.org/old-note",
            "content": "Heat pumps in cold climates defrost every hour.",
            "published_date": "2019-03-01",
        },
    ]
    return found


@pytest.fixture
def fetched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pages the research asked to read (none is reachable in the tests)."""
    asked: list[str] = []

    async def fetch(self: PageFetcher, url: str, allowed: Any = None) -> FetchResult:
        asked.append(url)
        return FetchResult(url=url, ok=False, error="not reachable in the tests")

    monkeypatch.setattr(PageFetcher, "fetch", fetch)
    return asked


@pytest.fixture
def bounded_tavily() -> Iterator[FakeHTTPServer]:
    with fake_tavily(_results) as server:
        yield server


def _settings(
    research_env: dict[str, str], tmp_path: Path, tavily: FakeHTTPServer, extra: str = ""
) -> Settings:
    config = Path(research_env["FOUNDRY_MCP_CONFIG"])
    config.write_text(config.read_text().replace("enabled = false", "enabled = true") + extra)
    env = {**research_env, "TAVILY_BASE_URL": tavily.base_url}
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


async def _research(
    settings: Settings, **options: Any
) -> tuple[dict[str, Any], ResearchState, dict[str, Any]]:
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, max_iterations=1, clarify="off", **options)
        status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        assert status.get("bounds") == started["search"].get("bounds")  # the status says so too
        state = service.store.load(started["research_id"])
        evidence, _ = await service.report(started["research_id"], evidence=True)
    return started, state, evidence


async def test_pages_outside_the_bounds_are_never_fetched_read_or_cited(
    research_env: dict[str, str],
    bounded_tavily: FakeHTTPServer,
    tmp_path: Path,
    fetched: list[str],
) -> None:
    settings = _settings(research_env, tmp_path, bounded_tavily)
    started, state, evidence = await _research(settings, bounds=BOUNDS)

    # Tavily was sent the bounds in its own terms.
    sent = [request.json for request in bounded_tavily.requests if request.path == "/search"]
    assert sent and all(body["include_domains"] == ["docs.example.org"] for body in sent)
    assert all(
        body["exclude_domains"] == ["blog.example.net", "encyclopedia.example.org"]
        and body["start_date"] == "2024-01-01"
        for body in sent
    ), sent[0]
    report = started["search"]["bounds"]
    assert report["applied_by_service"]["tavily"] == [
        "exclude_domains",
        "include_domains",
        "published_after",
    ]
    # What it let through anyway was dropped before anything was read.
    urls = {source.url for source in state.sources}
    assert urls and all(url.startswith("https://docs.example.org/") for url in urls), urls
    assert "https://docs.example.org/old-note" not in urls
    assert fetched == ["https://docs.example.org/to-read"]
    cited = {s["url"] for claim in evidence["claims"] for s in claim["sources"]}
    assert cited and not any("encyclopedia" in url or "blog" in url for url in cited)
    assert "encyclopedia.example.org" not in (state.report or "")


async def test_unbounded_the_same_research_cites_the_excluded_site(
    research_env: dict[str, str],
    bounded_tavily: FakeHTTPServer,
    tmp_path: Path,
    fetched: list[str],
) -> None:
    started, state, _ = await _research(_settings(research_env, tmp_path, bounded_tavily))
    assert "bounds" not in started["search"]
    assert "include_domains" not in bounded_tavily.requests[-1].json
    assert any("encyclopedia.example.org" in (source.url or "") for source in state.sources)


@pytest.mark.parametrize(
    ("bounds", "says"),
    [
        ({"include_domains": ["localhost"]}, "include_domains: 'localhost' is not a domain"),
        ({"published_after": "2025-01-01", "published_before": "2024-01-01"}, "later than"),
        ({"published_before": "last week"}, "published_before"),
    ],
)
async def test_bounds_that_cannot_work_are_refused_at_start(
    research_env: dict[str, str],
    bounded_tavily: FakeHTTPServer,
    tmp_path: Path,
    bounds: dict[str, Any],
    says: str,
) -> None:
    settings = _settings(research_env, tmp_path, bounded_tavily)
    async with research_runtime(settings, warm=False) as service:
        with pytest.raises(InputError) as refused:
            await service.start(QUESTION, clarify="off", bounds=bounds)
    assert says in refused.value.message and "YYYY-MM-DD" in refused.value.remediation
    assert not bounded_tavily.requests


async def test_the_configured_bounds_apply_and_a_calls_exclusions_add_to_them(
    research_env: dict[str, str],
    bounded_tavily: FakeHTTPServer,
    tmp_path: Path,
    fetched: list[str],
) -> None:
    extra = '\n[research]\nexclude_domains = ["blog.example.net"]\npublished_after = 2024-01-01\n'
    settings = _settings(research_env, tmp_path, bounded_tavily, extra)
    started, state, _ = await _research(
        settings, bounds={"exclude_domains": ["encyclopedia.example.org"]}
    )
    assert started["search"]["bounds"]["exclude_domains"] == [
        "blog.example.net",
        "encyclopedia.example.org",
    ]
    assert started["search"]["bounds"]["published_after"] == "2024-01-01"
    assert not any("blog" in (s.url or "") or "encyc" in (s.url or "") for s in state.sources)
