"""Which search providers serve a sub-query aimed at the user's documents, the web, or both."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from foundry_mcp.providers.search.base import SearchResult
from foundry_mcp.research.models import SearchTarget
from foundry_mcp.research.workflow.gatherer import providers_for


@dataclass
class Named:
    name: str

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        return []

    async def aclose(self) -> None:
        return None


PROVIDERS = [Named("tavily"), Named("notes"), Named("semantic_scholar")]


@pytest.mark.parametrize(
    ("target", "names"),
    [
        (SearchTarget.BOTH, ["tavily", "notes", "semantic_scholar"]),
        (SearchTarget.LOCAL, ["notes"]),
        (SearchTarget.WEB, ["tavily", "semantic_scholar"]),
    ],
)
def test_a_target_picks_its_providers(target: SearchTarget, names: list[str]) -> None:
    chosen = providers_for(target, PROVIDERS, frozenset({"notes"}))  # type: ignore[arg-type]
    assert [p.name for p in chosen] == names


def test_a_target_nobody_serves_falls_back_to_every_provider() -> None:
    web_only = [Named("tavily")]
    chosen = providers_for(SearchTarget.LOCAL, web_only, frozenset())  # type: ignore[arg-type]
    assert [p.name for p in chosen] == ["tavily"]
