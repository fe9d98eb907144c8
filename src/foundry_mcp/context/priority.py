"""Priority of content items and their tiers: who keeps fidelity when the budget is tight.

``priority = 0.4 relevance + 0.3 recency + 0.2 quality + 0.1 user priority``, each in [0, 1].
Items fall into three tiers, allocated in order:

1. **protected**: what the user supplied or restored; never below a headline (10%);
2. **priority**: the five highest-priority sources (never below 30% fidelity, i.e. at least
   compressed) and high-confidence findings;
3. **regular**: the rest; below a headline only by being dropped, which needs
   ``allow_content_dropping``;
4. **speculative**: low-confidence and speculative findings, which get room only after every
   better-supported item had its chance.

Within a tier, findings are ordered by confidence before priority. Ties break on the item id, so an allocation never depends on input order.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum

from foundry_mcp.context.levels import ContentLevel, lowest_level_keeping

WEIGHT_RELEVANCE = 0.4
WEIGHT_RECENCY = 0.3
WEIGHT_QUALITY = 0.2
WEIGHT_USER = 0.1

TOP_SOURCES = 5
TOP_SOURCE_MIN_FIDELITY = 0.3
PROTECTED_MIN_LEVEL = ContentLevel.HEADLINE


class Tier(IntEnum):
    PROTECTED = 0
    PRIORITY = 1
    REGULAR = 2
    SPECULATIVE = 3  # low-confidence and speculative findings: room only after the rest


SPECULATIVE_RANK = 1  # confidence ranks at or below this are speculative (low, speculation)


def priority_score(relevance: float, recency: float, quality: float, user: float) -> float:
    """The weighted priority of an item, each signal clamped to [0, 1]."""

    def clamp(value: float) -> float:
        return min(1.0, max(0.0, value))

    return (
        WEIGHT_RELEVANCE * clamp(relevance)
        + WEIGHT_RECENCY * clamp(recency)
        + WEIGHT_QUALITY * clamp(quality)
        + WEIGHT_USER * clamp(user)
    )


@dataclass(frozen=True)
class ContentItem:
    """One thing competing for a budget: its size, its signals and its guardrails.

    ``tokens`` is the original size; ``overhead`` the tokens its frame costs whenever it is
    present (a ``<source>`` tag, a title line); ``floor`` the smallest useful degraded size.
    """

    item_id: str
    item_type: str  # "source" or "finding"
    tokens: int
    overhead: int = 0
    relevance: float = 0.5
    recency: float = 1.0
    quality: float = 0.5
    user_priority: float = 0.0
    protected: bool = False
    confidence_rank: int = 0  # findings: higher is more confident; sources: 0
    high_confidence: bool = False
    floor: int = 0
    min_level: ContentLevel = ContentLevel.DROPPED  # set by ``assign_tiers``
    tier: Tier = Tier.REGULAR
    levels: tuple[ContentLevel, ...] = field(default=())  # allowed levels; empty means all

    @property
    def priority(self) -> float:
        return priority_score(self.relevance, self.recency, self.quality, self.user_priority)

    def sort_key(self) -> tuple[int, int, float, str]:
        return (int(self.tier), -self.confidence_rank, -self.priority, self.item_id)


def top_sources(items: Iterable[ContentItem]) -> frozenset[str]:
    """The ids of the ``TOP_SOURCES`` highest-priority sources among ``items``."""
    sources = sorted(
        (i for i in items if i.item_type == "source"), key=lambda i: (-i.priority, i.item_id)
    )
    return frozenset(i.item_id for i in sources[:TOP_SOURCES])


def assign_tiers(
    items: Iterable[ContentItem], *, allow_dropping: bool, top: Collection[str] | None = None
) -> list[ContentItem]:
    """``items`` with tier and minimum level set by the guardrails, in allocation order.

    ``top`` names the best sources when they were chosen among more items than these (a round
    fitted call by call); by default they are the best of ``items``.
    """
    items = list(items)
    if top is None:
        top = top_sources(items)
    floor_regular = ContentLevel.DROPPED if allow_dropping else ContentLevel.HEADLINE
    result = []
    for item in items:
        minimum = floor_regular
        tier = Tier.REGULAR
        if item.item_type == "finding" and item.confidence_rank <= SPECULATIVE_RANK:
            tier = Tier.SPECULATIVE
        if item.item_id in top or item.high_confidence:
            tier = Tier.PRIORITY
        if item.item_id in top:
            minimum = _stricter(minimum, lowest_level_keeping(TOP_SOURCE_MIN_FIDELITY))
        if item.protected:
            tier = Tier.PROTECTED
            minimum = _stricter(minimum, PROTECTED_MIN_LEVEL)
        if not allow_dropping:
            minimum = _stricter(minimum, ContentLevel.HEADLINE)
        result.append(replace(item, tier=tier, min_level=minimum))
    result.sort(key=ContentItem.sort_key)
    return result


def _stricter(a: ContentLevel, b: ContentLevel) -> ContentLevel:
    return a if a.rank >= b.rank else b


def allowed_levels(item: ContentItem) -> Sequence[ContentLevel]:
    """The levels ``item`` may take, most faithful first, none below its minimum."""
    levels = item.levels or tuple(ContentLevel)
    return [
        level for level in ContentLevel if level in levels and level.rank >= item.min_level.rank
    ]
