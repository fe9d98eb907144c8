"""The degradation ladder's rungs: how much of an item is kept, from all of it to none.

A leaf module of the models package (no project imports): the fidelity records name the levels,
and the token machinery in context/ works with them.
"""

from __future__ import annotations

from enum import StrEnum


class ContentLevel(StrEnum):
    """How far one content item was shortened to fit a budget, most faithful first."""

    FULL = "full"
    CONDENSED = "condensed"
    COMPRESSED = "compressed"
    KEY_POINTS = "key_points"
    HEADLINE = "headline"
    DROPPED = "dropped"

    @property
    def ratio(self) -> float:
        """The share of the original tokens this level aims to keep."""
        return LEVEL_RATIOS[self]

    @property
    def rank(self) -> int:
        """0 for DROPPED up to 5 for FULL: larger keeps more."""
        return len(LADDER) - 1 - LADDER.index(self)

    def below(self) -> ContentLevel | None:
        """The next rung down, or None below DROPPED."""
        index = LADDER.index(self)
        return LADDER[index + 1] if index + 1 < len(LADDER) else None


# Most faithful first.
LADDER: tuple[ContentLevel, ...] = (
    ContentLevel.FULL,
    ContentLevel.CONDENSED,
    ContentLevel.COMPRESSED,
    ContentLevel.KEY_POINTS,
    ContentLevel.HEADLINE,
    ContentLevel.DROPPED,
)

LEVEL_RATIOS: dict[ContentLevel, float] = {
    ContentLevel.FULL: 1.0,
    ContentLevel.CONDENSED: 0.7,
    ContentLevel.COMPRESSED: 0.4,
    ContentLevel.KEY_POINTS: 0.2,
    ContentLevel.HEADLINE: 0.1,
    ContentLevel.DROPPED: 0.0,
}

# Fidelity bands of a research (a mean of item fidelities), highest first.
FIDELITY_BANDS: tuple[tuple[float, str], ...] = (
    (0.9, "full"),
    (0.6, "condensed"),
    (0.3, "compressed"),
    (0.0, "minimal"),
)
LOW_FIDELITY = 0.5  # below this a research carries a warning


def fidelity_band(score: float) -> str:
    """``full``, ``condensed``, ``compressed`` or ``minimal`` for a fidelity in [0, 1]."""
    for floor, name in FIDELITY_BANDS:
        if score >= floor:
            return name
    return "minimal"


def lowest_level_keeping(fraction: float) -> ContentLevel:
    """The most compressed level whose ratio is still at least ``fraction``."""
    chosen = ContentLevel.FULL
    for level in LADDER:
        if level.ratio >= fraction:
            chosen = level
    return chosen
