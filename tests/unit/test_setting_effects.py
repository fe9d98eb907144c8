"""Every setting is classified by what it can do, and the docs show what an untrusted file may set."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from foundry_mcp.config import ResearchSettings, Settings
from foundry_mcp.config.effects import (
    Bound,
    Effect,
    Harmless,
    Narrows,
    Ordered,
    Protected,
    Rule,
    WithinProject,
)
from foundry_mcp.config.untrusted import every_key, without_protected_keys

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION = ROOT / "docs" / "configuration.md"
# The docs' headings and the settings tables they describe; a whole-table rule is marked on
# every row of its tables.
DOC_SECTIONS = {
    "## `[research]`": ("research",),
    "## `[research.fetch]`": ("research", "fetch"),
    "## `[research.local]`": ("research", "local"),
    "## `[providers.<name>]`": ("providers", "<name>"),
    '## `[pricing."provider:model"]`': ("pricing",),
    "## `[report]`": ("report",),
    "## `[logging]`": ("logging",),
    "## `[server]`": ("server",),
}


def unclassified(model: type[BaseModel]) -> list[str]:
    return [
        f"[{'.'.join(table)}] {key}" if table else key
        for table, key, rule in every_key(model)
        if rule is None
    ]


def test_every_setting_is_protected_or_harmless_with_a_reason() -> None:
    assert unclassified(Settings) == []
    for _, _, rule in every_key():
        if isinstance(rule, Harmless):
            assert len(rule.reason) > 20, rule
        else:
            assert isinstance(rule.effect, Effect), rule  # type: ignore[union-attr]


def test_a_new_unclassified_key_is_caught_and_needs_trust_meanwhile(tmp_path: Path) -> None:
    class Grown(ResearchSettings):
        purge_everything_after_days: float | None = None
        reasoned: Annotated[int, Harmless("a key with its reason is fine")] = 0

    class GrownSettings(Settings):
        research: Grown = Field(default_factory=Grown)

    assert unclassified(GrownSettings) == ["[research] purge_everything_after_days"]
    # Meanwhile the loader treats a key with no rule as one that needs trust.
    layer = {"research": {"purge_everything_after_days": 0.001, "reasoned": 3}}
    kept, ignored, _, _ = without_protected_keys(layer, tmp_path, model=GrownSettings)
    assert ignored == ["[research] purge_everything_after_days"]
    assert kept == {"research": {"reasoned": 3}}


@pytest.mark.parametrize(
    ("rule", "value", "applying", "kept"),
    [
        (Bound(Effect.SPENDS), 2, 3, True),
        (Bound(Effect.SPENDS), 3, 3, True),
        (Bound(Effect.SPENDS), 4, 3, False),
        (Bound(Effect.SPENDS), 4.5, None, True),  # None: no limit yet
        (Bound(Effect.SPENDS), True, 3, False),  # a bool is not a number here
        (Bound(Effect.SPENDS), "2", 3, False),
        (Bound(Effect.SPENDS, unset_is_default=True), 4, None, False),
        (Bound(Effect.SPENDS, unset_is_default=True), 4, 8, True),
        # 0 is "no limit" (whole pages): a file may lower it to a number, never raise to it.
        (Bound(Effect.SPENDS, zero_is_none=True), 0, 72_000, False),
        (Bound(Effect.SPENDS, zero_is_none=True), 24_000, 72_000, True),
        (Bound(Effect.SPENDS, zero_is_none=True), 96_000, 72_000, False),
        (Bound(Effect.SPENDS, zero_is_none=True), 24_000, 0, True),
        (Bound(Effect.SPENDS, zero_is_none=True), 0, 0, True),
        (Ordered(Effect.SPENDS, (False, True)), False, True, True),
        (Ordered(Effect.SPENDS, (False, True)), True, False, False),
        (Ordered(Effect.SPENDS, (False, True)), 0, True, False),  # 0 is not False
        (Ordered(Effect.RUNS, (False, None, True)), False, None, True),
        (Ordered(Effect.RUNS, (False, None, True)), True, None, False),
        (Ordered(Effect.SPENDS, ("basic", "advanced")), "advanced", "basic", False),
        (Narrows(Effect.SENDS), ["tavily"], ["tavily", "google"], True),
        (Narrows(Effect.SENDS), ["TAVILY"], ["tavily"], True),
        (Narrows(Effect.SENDS), ["tavily", "evil"], ["tavily"], False),
        (Narrows(Effect.READS), [".pem"], [".md"], False),
        (Protected(Effect.DELETES), 0.0001, None, False),
    ],
)
def test_what_an_untrusted_value_may_do(
    rule: Rule, value: object, applying: object, kept: bool
) -> None:
    assert not isinstance(rule, Harmless | WithinProject)
    assert rule.keeps(value, applying, Path("/project")) is kept


def test_a_limit_is_lowered_from_the_users_own_value(tmp_path: Path) -> None:
    below = {"research": {"max_cost_usd": 2.0}, "providers": {"openai": {"max_in_flight": 4}}}
    layer = {
        "research": {"max_cost_usd": 5.0, "deep_research_max_sources": 3},
        "providers": {"openai": {"max_in_flight": 2}, "tavily": {"max_in_flight": 50}},
    }
    kept, ignored, _, _ = without_protected_keys(layer, tmp_path, below)
    assert kept == {
        "research": {"deep_research_max_sources": 3},
        "providers": {"openai": {"max_in_flight": 2}, "tavily": {}},
    }
    assert ignored == ["[research] max_cost_usd", "[providers.tavily] max_in_flight"]


def documented_markers() -> dict[tuple[tuple[str, ...], str], str]:
    """``(table, key) -> the 'untrusted file' cell`` of every settings table in the docs."""
    markers: dict[tuple[tuple[str, ...], str], str] = {}
    table: tuple[str, ...] | None = None
    column: int | None = None
    for line in CONFIGURATION.read_text("utf-8").splitlines():
        if line.startswith("## "):
            table = next((t for h, t in DOC_SECTIONS.items() if line.startswith(h)), None)
        if table is None or not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0] == "key":
            column = cells.index("untrusted file") if "untrusted file" in cells else None
            continue
        if column is None or set(cells[0]) <= {"-", " "}:
            continue
        for key in re.findall(r"`(\w+)`", cells[0]):
            markers[(table, key)] = cells[column]
    return markers


def test_the_docs_mark_what_an_untrusted_file_may_set_for_every_key() -> None:
    documented = documented_markers()
    expected: dict[tuple[tuple[str, ...], str], str] = {}
    for table, key, rule in every_key():
        assert rule is not None
        if table:
            expected[(table, key)] = rule.marker
        else:  # a whole table: every key documented under it
            for doc_table, doc_key in documented:
                if doc_table == (key,):
                    expected[(doc_table, doc_key)] = rule.marker
    missing = sorted(set(expected) - set(documented))
    assert not missing, f"keys not documented in docs/configuration.md: {missing}"
    wrong = {k: (documented[k], v) for k, v in expected.items() if documented[k] != v}
    assert not wrong, f"(documented, expected) 'untrusted file' cells: {wrong}"
