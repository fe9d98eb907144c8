"""Kinds of sources: the caller's input, the providers a research takes part with, and the
planner's choice of kinds per sub-query."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_mcp.config import load_settings
from foundry_mcp.errors import InputError, ProviderNotConfiguredError
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.providers.search.base import SOURCE_TYPES, served_types
from foundry_mcp.providers.search.google import GoogleSearch
from foundry_mcp.providers.search.local import LocalDocuments
from foundry_mcp.providers.search.semantic_scholar import SemanticScholarSearch
from foundry_mcp.providers.search.tavily import TavilySearch
from foundry_mcp.research.models import (
    PlannerOutput,
    ResearchOptions,
    ResearchState,
    SearchOptions,
)
from foundry_mcp.research.prompts.planner import planner_prompts, strategist_prompts
from foundry_mcp.research.service.inputs import check_source_types
from foundry_mcp.research.workflow.agents.planner import offered_source_types

KEYS = {"TAVILY_API_KEY": "t", "GOOGLE_API_KEY": "g", "GOOGLE_CSE_ID": "cx"}


def _registry(tmp_path: Path, env: dict[str, str], toml: str = "") -> ProviderRegistry:
    if toml:  # the user's own file: every key of it applies
        (tmp_path / ".foundry-mcp.toml").write_text(toml)
    return ProviderRegistry(load_settings(env=env, cwd=tmp_path, home=tmp_path))


# --------------------------------------------------------------------------- the adapters


def test_each_adapter_says_which_kinds_it_serves() -> None:
    assert served_types(TavilySearch) == ("web", "news")
    assert served_types(GoogleSearch) == ("web",)
    assert served_types(SemanticScholarSearch) == ("academic",)
    assert served_types(LocalDocuments) == ("local",)
    assert served_types(object()) == ("web",)  # an adapter that says nothing serves the web
    covered = {kind for cls in (TavilySearch, GoogleSearch, SemanticScholarSearch, LocalDocuments)
               for kind in served_types(cls)}  # fmt: skip
    assert covered == set(SOURCE_TYPES)


# --------------------------------------------------------------------------- the input


@pytest.mark.parametrize(
    ("given", "kinds"),
    [
        (None, []),
        ([], []),
        (["academic"], ["academic"]),
        (" Web, NEWS ,web", ["web", "news"]),
        (("local", "academic"), ["local", "academic"]),
    ],
)
def test_source_types_are_read_as_a_list_or_a_comma_separated_text(
    given: object, kinds: list[str]
) -> None:
    assert check_source_types(given) == kinds


@pytest.mark.parametrize("given", [["papers"], "web,blogs", 3, ["web", 3]])
def test_a_wrong_kind_names_the_field_and_every_allowed_kind(given: object) -> None:
    with pytest.raises(InputError) as caught:
        check_source_types(given)
    assert caught.value.details["field"] == "source_types"
    assert all(kind in (caught.value.remediation or "") for kind in SOURCE_TYPES)


# --------------------------------------------------------------------------- who takes part


def test_by_default_each_provider_takes_part_once_it_has_its_keys(tmp_path: Path) -> None:
    assert _registry(tmp_path, KEYS).search_providers() == (["tavily", "google"], [])
    only_tavily = _registry(tmp_path, {"TAVILY_API_KEY": "t"})
    assert only_tavily.search_providers() == (["tavily"], [])  # Google is left out quietly
    with_s2_key = _registry(tmp_path, {"TAVILY_API_KEY": "t", "SEMANTIC_SCHOLAR_API_KEY": "s"})
    assert with_s2_key.search_providers()[0] == ["tavily", "semantic_scholar"]


def test_by_default_keyless_semantic_scholar_serves_only_academic_requests(
    tmp_path: Path,
) -> None:
    registry = _registry(tmp_path, {"TAVILY_API_KEY": "t"})
    assert registry.search_providers(["academic"]) == (["semantic_scholar"], [])
    assert registry.search_providers(["web", "academic"])[0] == ["tavily", "semantic_scholar"]


def test_a_listed_provider_takes_part_and_an_unusable_one_is_warned_about(
    tmp_path: Path,
) -> None:
    toml = '[research]\ndeep_research_providers = ["google", "semantic_scholar", "tavily"]\n'
    registry = _registry(tmp_path, {"TAVILY_API_KEY": "t"}, toml)
    usable, warnings = registry.search_providers()
    assert usable == ["semantic_scholar", "tavily"]  # the listed order is the priority order
    (warning,) = warnings
    assert "'google'" in warning and "GOOGLE_CSE_ID" in warning


def test_with_no_key_the_web_search_with_no_key_joins_the_documents(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    registry = _registry(tmp_path, {}, f'[research.local]\npaths = ["{docs}"]\n')
    usable, warnings = registry.search_providers(announce=False)  # the keyless notice apart
    assert usable == ["ddgs", "local"]
    assert warnings == []  # an outside provider takes part: the skipped ones go unnamed


def test_with_no_provider_at_all_the_start_says_every_way_to_get_one(tmp_path: Path) -> None:
    toml = '[research]\ndeep_research_providers = ["tavily", "google"]\n'
    with pytest.raises(ProviderNotConfiguredError) as caught:
        _registry(tmp_path, {}, toml).search_providers()
    assert "TAVILY_API_KEY" in caught.value.message
    assert "Semantic Scholar" in caught.value.remediation
    assert "web search with no key (ddgs)" in caught.value.remediation


def test_only_providers_serving_a_requested_kind_take_part(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    toml = f'[research.local]\npaths = ["{docs}"]\n'
    registry = _registry(tmp_path, {**KEYS, "SEMANTIC_SCHOLAR_API_KEY": "s"}, toml)
    assert registry.search_providers()[0] == ["tavily", "google", "semantic_scholar", "local"]
    assert registry.search_providers(["news"])[0] == ["tavily"]
    assert registry.search_providers(["web"])[0] == ["tavily", "google"]
    assert registry.search_providers(["local", "academic"])[0] == ["semantic_scholar", "local"]


@pytest.mark.parametrize(
    ("env", "toml", "kind", "says", "fix"),
    [
        # With a key anywhere, the web search with no key sits out (and says how to use it).
        ({"SEMANTIC_SCHOLAR_API_KEY": "s"}, "", "news", "'tavily' has no API key", "list ddgs"),
        (
            {"SEMANTIC_SCHOLAR_API_KEY": "s"},
            "",
            "web",
            "'ddgs' (web search with no key)",
            "GOOGLE_CSE_ID",
        ),
        (
            {"TAVILY_API_KEY": "t"},
            '[research]\ndeep_research_providers = ["tavily"]\n',
            "academic",
            "no usable search provider serves",
            "list semantic_scholar",
        ),
        ({"TAVILY_API_KEY": "t"}, "", "local", "local sources", "[research.local] paths"),
    ],
)
def test_a_kind_nobody_serves_says_what_is_missing_and_how_to_get_it(
    tmp_path: Path, env: dict[str, str], toml: str, kind: str, says: str, fix: str
) -> None:
    registry = _registry(tmp_path, env, toml)
    with pytest.raises(ProviderNotConfiguredError) as caught:
        registry.search_providers([kind])
    assert f"{kind} sources" in caught.value.message and says in caught.value.message
    assert fix in caught.value.remediation
    assert f"leave '{kind}' out of source_types" in caught.value.remediation


# --------------------------------------------------------------------------- the planner


def _state(kinds: list[str]) -> ResearchState:
    options = ResearchOptions(search=SearchOptions(source_types=kinds))
    return ResearchState(query="q", llm_provider="openai", llm_model="m", options=options)


@pytest.mark.parametrize(
    ("kinds", "offered"),
    [
        ([], []),
        (["academic"], []),
        (["academic", "local"], []),  # the documents are aimed at with the target
        (["web", "academic", "local"], ["web", "academic"]),
        (["news", "web"], ["news", "web"]),
    ],
)
def test_the_planner_chooses_kinds_only_among_several_outside_ones(
    kinds: list[str], offered: list[str]
) -> None:
    assert offered_source_types(_state(kinds)) == offered


def test_the_prompts_describe_the_kinds_only_when_offered() -> None:
    for system, _ in (
        planner_prompts("Q?", 4, None, None, (), ["web", "academic"]),
        strategist_prompts("Q?", 4, (2, 5), None, None, require_decomposition=False,
                           source_types=["web", "academic"]),
    ):  # fmt: skip
        assert '"source_types"' in system
        assert '"academic": academic papers' in system and '"web": web pages' in system
        assert '"news"' not in system
    system, _ = planner_prompts("Q?", 4, None, None)
    assert "source_types" not in system


def test_a_planned_kind_is_read_leniently() -> None:
    output = PlannerOutput.model_validate(
        {
            "sub_queries": [
                {"query": "a b c", "source_types": "Academic, web"},
                {"query": "d e f", "source_types": ["NEWS", 3, "news", ""]},
                {"query": "g h i", "source_types": {"kind": "web"}},
            ]
        }
    )
    kinds = [sq.source_types for sq in output.sub_queries]
    assert kinds == [["academic", "web"], ["news"], []]
