"""Effort presets: how thorough a research is, in one word instead of five numbers.

| effort | mode | iterations | sub-queries | sources each | page text read | judgement | claims checked |
| --- | --- | --- | --- | --- | --- | --- | --- |
| quick | simple | 1 | 2 | 3 | 14,000 tokens | off | 20 |
| standard | the configuration's (`[research]`) | | | | (32,000 tokens) | | |
| deep | auto (hierarchical when the question has parts) | 4 | 6 | 8 | whole pages | on | 120 |

"Page text read" is what a research reads of its pages in one round (shared evenly by the
researchers of its sub-questions), the passages worth most to the question first
(``ResearchLimits.reading_budget``); "whole pages" reads every page whole, as far as the model's
window allows.

Limits the caller gives explicitly (``max_iterations``, ``mode``...) win over the preset;
``standard`` is the configuration as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Unpack, cast

from foundry_mcp.config.research_settings import LimitArgs
from foundry_mcp.errors import InputError


class Effort(StrEnum):
    QUICK = "quick"
    STANDARD = "standard"
    DEEP = "deep"


@dataclass(frozen=True)
class EffortPreset:
    """What an effort sets; None keeps the configuration's value."""

    mode: str | None = None
    max_iterations: int | None = None
    max_sub_queries: int | None = None
    max_sources_per_query: int | None = None
    reading_budget: int | None = None
    whole_pages: bool = False  # read pages whole, whatever the configuration's reading budget
    reflection: bool | None = None
    max_verified_claims: int | None = None

    def limits(self, **given: Unpack[LimitArgs]) -> LimitArgs:
        """The research limits: the caller's where given, else the preset's (None: the
        configuration's)."""
        preset = LimitArgs(
            max_iterations=self.max_iterations,
            max_sub_queries=self.max_sub_queries,
            max_sources_per_query=self.max_sources_per_query,
            reading_budget=self.reading_budget,
        )
        chosen = {name: value for name, value in given.items() if value is not None}
        return cast(LimitArgs, {**preset, **chosen})


PRESETS: dict[Effort, EffortPreset] = {
    Effort.QUICK: EffortPreset(
        mode="simple",
        max_iterations=1,
        max_sub_queries=2,
        max_sources_per_query=3,
        reading_budget=14_000,
        reflection=False,
        max_verified_claims=20,
    ),
    Effort.STANDARD: EffortPreset(),
    Effort.DEEP: EffortPreset(
        mode="auto",
        max_iterations=4,
        max_sub_queries=6,
        max_sources_per_query=8,
        whole_pages=True,
        reflection=True,
        max_verified_claims=120,
    ),
}


def check_effort(value: Any) -> Effort | None:
    """The effort asked for (None when not given); ``InputError`` naming the three otherwise."""
    if value is None:
        return None
    try:
        return Effort(str(value).strip().lower())
    except ValueError:
        raise InputError(
            f"effort must be quick, standard or deep (got {value!r}).",
            remediation=(
                "Pass effort='quick' for a fast answer, 'standard' (the configuration) or "
                "'deep' for a thorough research; or leave it out."
            ),
            details={"field": "effort"},
        ) from None
