"""Fitting items into a budget: every item gets a level of the ladder, in priority order.

The allocation starts every item at its guardrail minimum; if even that does not fit, it raises
``ContextExceededError``. Then, tier by tier (protected, priority, regular, speculative) and
rung by rung (headline up to full), each item in priority order is raised to the rung if the
tokens it adds still fit. Raising whole tiers first gives protected and priority items the room they can
use; raising a tier rung by rung spreads the rest evenly instead of spending it all on the
first item. The result is deterministic: it depends on the items, not on their order.

Cost of an item at a level: 0 when dropped, otherwise ``overhead + level_tokens``, where
``level_tokens`` is the original size at FULL and ``max(ceil(ratio * tokens), floor)`` (never
more than the original) below it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from foundry_mcp.context.errors import ContextExceededError, context_remediation
from foundry_mcp.context.levels import LADDER, ContentLevel
from foundry_mcp.context.priority import ContentItem, Tier, allowed_levels, assign_tiers


def level_tokens(item: ContentItem, level: ContentLevel) -> int:
    """The content tokens ``item`` takes at ``level`` (without its overhead)."""
    if level is ContentLevel.DROPPED:
        return 0
    if level is ContentLevel.FULL or item.tokens <= 0:
        return max(0, item.tokens)
    return min(item.tokens, max(math.ceil(level.ratio * item.tokens), item.floor))


def level_cost(item: ContentItem, level: ContentLevel) -> int:
    """The budget tokens ``item`` takes at ``level`` (overhead included)."""
    if level is ContentLevel.DROPPED:
        return 0
    return item.overhead + level_tokens(item, level)


@dataclass
class Allocation:
    """The level and cost of every item, and the totals."""

    budget: int
    items: list[ContentItem]  # in allocation order (tier, confidence, priority, id)
    levels: dict[str, ContentLevel] = field(default_factory=dict)
    costs: dict[str, int] = field(default_factory=dict)
    _by_id: dict[str, ContentItem] = field(default_factory=dict, repr=False)

    @property
    def used(self) -> int:
        return sum(self.costs.values())

    @property
    def remaining(self) -> int:
        return self.budget - self.used

    @property
    def dropped(self) -> list[str]:
        return [i.item_id for i in self.items if self.levels[i.item_id] is ContentLevel.DROPPED]

    def item(self, item_id: str) -> ContentItem:
        if len(self._by_id) != len(self.items):
            self._by_id = {i.item_id: i for i in self.items}
        return self._by_id[item_id]

    def target_tokens(self, item_id: str) -> int:
        """The content tokens the item was given (its level's size)."""
        return level_tokens(self.item(item_id), self.levels[item_id])


def minimum_cost(items: Iterable[ContentItem]) -> int:
    """Tokens needed with every item at its guardrail minimum (tiers already assigned)."""
    return sum(level_cost(item, allowed_levels(item)[-1]) for item in items)


def allocate(
    items: Iterable[ContentItem],
    budget: int,
    *,
    allow_dropping: bool,
    what: str = "content",
    top: Collection[str] | None = None,
) -> Allocation:
    """Give each item a level so that the total cost stays within ``budget``.

    ``top`` names the best sources when they were ranked among more items (see
    :func:`~foundry_mcp.context.priority.assign_tiers`). Raises ``ContextExceededError`` when
    the guardrail minimums alone exceed the budget.
    """
    ordered = assign_tiers(items, allow_dropping=allow_dropping, top=top)
    allocation = Allocation(budget=budget, items=ordered)
    options = {item.item_id: allowed_levels(item) for item in ordered}
    for item in ordered:
        lowest = options[item.item_id][-1]
        allocation.levels[item.item_id] = lowest
        allocation.costs[item.item_id] = level_cost(item, lowest)
    needed = allocation.used
    if needed > budget:
        protected = sum(1 for i in ordered if i.tier is Tier.PROTECTED)
        raise ContextExceededError(
            f"The {what} does not fit its budget: even at the most compressed levels the "
            f"guardrails allow ({len(ordered)} item(s), {protected} protected, the top sources "
            f"kept at 30% or more) it needs {needed:,} tokens and the budget is {budget:,}.",
            remediation=context_remediation(allow_dropping),
            details={"budget": budget, "minimum_needed": needed, "items": len(ordered)},
        )
    remaining = budget - needed
    ascending = [level for level in reversed(LADDER) if level is not ContentLevel.DROPPED]
    for tier in Tier:
        members = [item for item in ordered if item.tier is tier]
        for rung in ascending:
            for item in members:
                current = allocation.levels[item.item_id]
                if current.rank >= rung.rank or rung not in options[item.item_id]:
                    continue
                added = level_cost(item, rung) - allocation.costs[item.item_id]
                if added <= remaining:
                    remaining -= added
                    allocation.levels[item.item_id] = rung
                    allocation.costs[item.item_id] += added
    return allocation
