"""Which search providers serve a sub-query, and in which order: its target (the user's
documents, the web, or both), its kinds of sources, and the priority and all strategies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from foundry_mcp.errors import ProviderError
from foundry_mcp.providers.search.base import SearchResult, SourceType
from foundry_mcp.research.models import SearchTarget, SubQuery
from foundry_mcp.research.workflow.agents.search_lanes import (
    Attempt,
    SearchLane,
    search_lane,
    search_lanes,
)


@dataclass
class Named:
    """A provider that declares no kinds (it serves the web) unless given some."""

    name: str
    source_types: tuple[str, ...] | None = None

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        return []

    async def aclose(self) -> None:
        return None


TAVILY = Named("tavily", ("web", "news"))
GOOGLE = Named("google", ("web",))
SCHOLAR = Named("semantic_scholar", ("academic",))
NOTES = Named("notes")  # named in local_providers
PROVIDERS = [TAVILY, NOTES, GOOGLE, SCHOLAR]
LOCAL = frozenset({"notes"})


def _lanes(
    target: SearchTarget = SearchTarget.BOTH,
    research: tuple[str, ...] = (),
    own: tuple[str, ...] = (),
    providers: list[Named] = PROVIDERS,
    local: frozenset[str] = LOCAL,
) -> list[tuple[str | None, list[str]]]:
    sub_query = SubQuery(query="q", target=target, source_types=list(own))
    lanes = search_lanes(sub_query, providers, local, research)  # type: ignore[arg-type]
    return [(lane.source_type, [p.name for p in lane.providers]) for lane in lanes]


# --------------------------------------------------------------------------- lanes


@pytest.mark.parametrize(
    ("target", "lanes"),
    [
        (
            SearchTarget.BOTH,
            [(None, ["tavily", "google", "semantic_scholar"]), ("local", ["notes"])],
        ),
        (SearchTarget.LOCAL, [("local", ["notes"])]),
        (SearchTarget.WEB, [(None, ["tavily", "google", "semantic_scholar"])]),
    ],
)
def test_without_kinds_every_outside_provider_is_one_lane_beside_the_documents(
    target: SearchTarget, lanes: list[tuple[str | None, list[str]]]
) -> None:
    assert _lanes(target) == lanes


def test_a_target_nobody_serves_falls_back_to_every_lane() -> None:
    web_only = [Named("tavily")]
    assert _lanes(SearchTarget.LOCAL, providers=web_only, local=frozenset()) == [(None, ["tavily"])]


def test_each_kind_asked_for_is_a_lane_of_the_providers_serving_it() -> None:
    assert _lanes(research=("academic",)) == [("academic", ["semantic_scholar"])]
    assert _lanes(research=("web", "news", "local")) == [
        ("web", ["tavily", "google"]),
        ("news", ["tavily"]),
        ("local", ["notes"]),
    ]


def test_the_planner_narrows_a_sub_query_to_some_of_the_research_kinds() -> None:
    research = ("web", "academic")
    assert _lanes(research=research, own=("academic",)) == [("academic", ["semantic_scholar"])]
    # A kind the research does not search is ignored: the research's kinds apply.
    assert _lanes(research=research, own=("news",)) == [
        ("web", ["tavily", "google"]),
        ("academic", ["semantic_scholar"]),
    ]


def test_a_target_picks_among_the_kinds() -> None:
    research = ("web", "local")
    assert _lanes(SearchTarget.LOCAL, research) == [("local", ["notes"])]
    assert _lanes(SearchTarget.WEB, research) == [("web", ["tavily", "google"])]


# --------------------------------------------------------------------------- strategies


@dataclass
class Script:
    """What each provider answers: results, an error, or nothing; and who was asked."""

    answers: dict[str, list[SearchResult] | ProviderError] = field(default_factory=dict)
    asked: list[tuple[str, SourceType | None]] = field(default_factory=list)

    async def ask(self, provider: Named, kind: SourceType | None) -> Attempt:
        self.asked.append((provider.name, kind))
        answer = self.answers.get(provider.name, [])
        if isinstance(answer, ProviderError):
            return Attempt(provider.name, error=answer)
        return Attempt(provider.name, results=answer)


def _hit(provider: str, n: int = 1) -> SearchResult:
    return SearchResult(title=f"{provider} {n}", url=f"https://{provider}.example/{n}")


def _error(kind: str, retryable: bool = False) -> ProviderError:
    return ProviderError("it failed", provider="x", kind=kind, retryable=retryable)


WEB_LANE = SearchLane("web", (TAVILY, GOOGLE))  # type: ignore[arg-type]
GENERAL = SearchLane(None, (TAVILY, GOOGLE, SCHOLAR))  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_priority_asks_only_the_first_provider_when_it_answers() -> None:
    script = Script({"tavily": [_hit("tavily")], "google": [_hit("google")]})
    answer = await search_lane(GENERAL, script.ask, LOCAL)  # type: ignore[arg-type]
    assert [name for name, _ in script.asked] == ["tavily"]
    assert [r.title for r in answer.results] == ["tavily 1"] and not answer.failed


@pytest.mark.anyio
@pytest.mark.parametrize(
    "failure",
    [
        _error("transient", retryable=True),
        _error("rate_limit", retryable=True),
        _error("auth"),
        _error("circuit_open"),
    ],
)
async def test_priority_falls_back_in_order_on_failure(failure: ProviderError) -> None:
    script = Script({"tavily": failure, "google": failure, "semantic_scholar": [_hit("s2")]})
    answer = await search_lane(GENERAL, script.ask, LOCAL)  # type: ignore[arg-type]
    assert [name for name, _ in script.asked] == ["tavily", "google", "semantic_scholar"]
    assert [r.title for r in answer.results] == ["s2 1"] and not answer.failed


@pytest.mark.anyio
async def test_priority_falls_back_when_a_provider_finds_nothing() -> None:
    script = Script({"tavily": [], "google": [_hit("google")]})
    answer = await search_lane(GENERAL, script.ask, LOCAL)  # type: ignore[arg-type]
    assert [name for name, _ in script.asked] == ["tavily", "google"]
    assert [r.title for r in answer.results] == ["google 1"]


@pytest.mark.anyio
async def test_a_lane_fails_only_when_every_provider_failed() -> None:
    every = Script({name: _error("transient") for name in ("tavily", "google", "semantic_scholar")})
    assert (await search_lane(GENERAL, every.ask, LOCAL)).failed  # type: ignore[arg-type]
    empty = Script({"tavily": _error("transient")})  # the others find nothing
    assert not (await search_lane(GENERAL, empty.ask, LOCAL)).failed  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_spent_key_or_quota_is_passed_over_for_the_rest_of_the_round() -> None:
    spent: set[str] = set()
    script = Script({"tavily": _error("rate_limit", retryable=False), "google": [_hit("g")]})
    await search_lane(GENERAL, script.ask, LOCAL, spent=spent)  # type: ignore[arg-type]
    await search_lane(GENERAL, script.ask, LOCAL, spent=spent)  # type: ignore[arg-type]
    assert [name for name, _ in script.asked] == ["tavily", "google", "google"]
    assert spent == {"tavily"}
    # A passing failure (the retries gave up on a timeout) is tried again next time.
    again = Script({"tavily": _error("transient", retryable=True), "google": [_hit("g")]})
    spent = set()
    await search_lane(GENERAL, again.ask, LOCAL, spent=spent)  # type: ignore[arg-type]
    await search_lane(GENERAL, again.ask, LOCAL, spent=spent)  # type: ignore[arg-type]
    assert [name for name, _ in again.asked] == ["tavily", "google"] * 2 and not spent


@pytest.mark.anyio
async def test_a_lane_whose_every_provider_is_spent_still_tries_them() -> None:
    script = Script({"tavily": [_hit("tavily")]})
    spent = {"tavily", "google"}
    answer = await search_lane(WEB_LANE, script.ask, LOCAL, spent=spent)  # type: ignore[arg-type]
    assert [name for name, _ in script.asked] == ["tavily"] and answer.results


@pytest.mark.anyio
async def test_all_asks_every_provider_and_merges_rank_by_rank() -> None:
    script = Script(
        {
            "tavily": [_hit("tavily", 1), _hit("tavily", 2)],
            "google": _error("transient"),
            "semantic_scholar": [_hit("s2", 1)],
        }
    )
    answer = await search_lane(GENERAL, script.ask, LOCAL, strategy="all")  # type: ignore[arg-type]
    assert sorted(name for name, _ in script.asked) == ["google", "semantic_scholar", "tavily"]
    assert [a.provider for a in answer.attempts] == ["tavily", "google", "semantic_scholar"]
    assert [r.title for r in answer.results] == ["tavily 1", "s2 1", "tavily 2"]


@pytest.mark.anyio
async def test_only_a_provider_serving_several_kinds_is_told_which() -> None:
    script = Script({"tavily": [], "google": []})
    await search_lane(WEB_LANE, script.ask, LOCAL)  # type: ignore[arg-type]
    await search_lane(SearchLane("news", (TAVILY,)), script.ask, LOCAL)  # type: ignore[arg-type]
    await search_lane(GENERAL, script.ask, LOCAL)  # type: ignore[arg-type]
    assert script.asked[:3] == [("tavily", "web"), ("google", None), ("tavily", "news")]
    assert script.asked[3] == ("tavily", None)  # no kind asked for: the provider's main one


def test_the_planner_names_which_of_the_users_sources_a_sub_query_searches() -> None:
    providers = [TAVILY, NOTES, Named("mcp.wiki"), Named("mcp.repo")]
    local = frozenset({"notes", "mcp.wiki", "mcp.repo"})

    def lanes(sources: list[str], target: SearchTarget = SearchTarget.BOTH) -> list[Any]:
        sub_query = SubQuery(query="q", target=target, sources=sources)
        found = search_lanes(sub_query, providers, local)  # type: ignore[arg-type]
        return [(lane.source_type, [p.name for p in lane.providers]) for lane in found]

    assert lanes([]) == [(None, ["tavily"]), ("local", ["notes", "mcp.wiki", "mcp.repo"])]
    assert lanes(["mcp.wiki"]) == [(None, ["tavily"]), ("local", ["mcp.wiki"])]
    assert lanes(["mcp.repo", "notes"], SearchTarget.LOCAL) == [("local", ["notes", "mcp.repo"])]
    # A name the research does not have leaves the user's sources as they were.
    assert lanes(["mcp.gone"], SearchTarget.LOCAL) == [("local", ["notes", "mcp.wiki", "mcp.repo"])]
