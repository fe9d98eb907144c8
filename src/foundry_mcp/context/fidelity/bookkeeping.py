"""Fidelity: how much of each item reached the model, and the research-wide picture.

Every allocation records, per item, its original and current tokens, its level and the ratio
(``ContentFidelity``), and per phase the tokens used of the budget (``PhaseAllocation``). The
research fidelity is the mean of the items' latest ratios (a dropped item counts 0), read in
bands: full (>= 0.9), condensed (>= 0.6), compressed (>= 0.3), minimal. Below 0.5 the research
carries a warning that names what cut the text (:func:`low_fidelity_warning`): the reading
budget, which chose the most relevant passages of each page (``method="budget"``), or the
model's window, which forced selections, summaries, truncations or drops; and the setting that
reads more. An item whose level falls from one iteration to the next, or a research whose
fidelity falls, is reported as a warning: fidelity never regresses silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from foundry_mcp.context.fidelity.records import (
    ContentAllocationMetadata,
    ContentFidelity,
    PhaseAllocation,
)
from foundry_mcp.context.levels import LOW_FIDELITY, ContentLevel, fidelity_band

REGRESSION_TOLERANCE = 0.05
# The method of a page whose most relevant passages the reading budget chose: a choice, not a
# lack of room (a page cut to fit the model's window is a ``selection``).
READ_BY_BUDGET = "budget"
LOW_FIDELITY_SAID = "Content fidelity is "  # how the low-fidelity warning begins


class Ledger(Protocol):
    """What fidelity bookkeeping reads and writes of a research (its state keeps them)."""

    iteration: int
    content_fidelity: dict[str, ContentFidelity]
    content_allocation_metadata: ContentAllocationMetadata | None
    warnings: list[str]

    def warn(self, message: str) -> None: ...


def record_item(
    state: Ledger, item_id: str, record: ContentFidelity, regressions: list[str]
) -> None:
    """Store ``record`` for ``item_id``; note it in ``regressions`` if an earlier iteration
    gave the item a higher level."""
    previous = state.content_fidelity.get(item_id)
    if (
        previous is not None
        and previous.iteration < record.iteration
        and previous.phase == record.phase
        and record.current_level.rank < previous.current_level.rank
    ):
        regressions.append(
            f"{item_id} ({previous.current_level.value} -> {record.current_level.value})"
        )
    state.content_fidelity[item_id] = record


def make_record(
    *,
    item_type: str,
    original_tokens: int,
    current_tokens: int,
    level: ContentLevel,
    method: str,
    phase: str,
    iteration: int,
    content_hash: str | None = None,
    summarizer: str | None = None,
    relevant_tokens: int | None = None,
) -> ContentFidelity:
    """The record of one item; its ratio is measured against its relevant text when given."""
    reference = original_tokens if relevant_tokens is None else relevant_tokens
    ratio = 1.0 if reference <= 0 else min(1.0, current_tokens / reference)
    if level is ContentLevel.DROPPED:
        ratio = 0.0
    return ContentFidelity(
        item_type=item_type,
        original_tokens=original_tokens,
        relevant_tokens=relevant_tokens,
        current_tokens=current_tokens,
        current_level=level,
        compression_ratio=round(ratio, 4),
        content_hash=content_hash,
        method=method,
        summarizer=summarizer,
        phase=phase,
        iteration=iteration,
    )


def finish_phase(
    state: Ledger,
    phase: str,
    item_ids: list[str],
    tokens_used: int,
    tokens_available: int,
    regressions: list[str],
    *,
    accumulate: bool = False,
) -> None:
    """Update the phase's and the research's allocation metadata; warn about losses.

    With ``accumulate``, a phase made of several calls (analysis batches) adds this call's
    items and tokens to what its earlier calls of the same iteration recorded.
    """
    records = [state.content_fidelity[i] for i in item_ids if i in state.content_fidelity]
    metadata = state.content_allocation_metadata or ContentAllocationMetadata()
    allocation = PhaseAllocation(
        iteration=state.iteration,
        tokens_used=tokens_used,
        tokens_available=tokens_available,
        items=len(records),
        items_dropped=sum(1 for r in records if r.current_level is ContentLevel.DROPPED),
        items_summarized=sum(1 for r in records if r.method == "summary"),
        items_degraded=sum(1 for r in records if r.current_level is not ContentLevel.FULL),
        fidelity=_mean([r.compression_ratio for r in records]),
    )
    earlier_calls = metadata.phases.get(phase)
    if accumulate and earlier_calls is not None and earlier_calls.iteration == state.iteration:
        allocation = _combined(earlier_calls, allocation)
    allocation.utilization = (
        round(allocation.tokens_used / allocation.tokens_available, 4)
        if allocation.tokens_available
        else 0.0
    )
    allocation.fidelity = round(allocation.fidelity, 4)
    metadata.phases[phase] = allocation
    _refresh_totals(state, metadata)
    state.content_allocation_metadata = metadata
    if regressions:
        shown = ", ".join(regressions[:5]) + (" ..." if len(regressions) > 5 else "")
        state.warn(
            f"Fidelity fell in iteration {state.iteration} for {len(regressions)} item(s) of "
            f"{phase}: {shown}. More content now competes for the same budget."
        )
    key = str(state.iteration)
    earlier = [v for k, v in metadata.fidelity_by_iteration.items() if k != key]
    metadata.fidelity_by_iteration[key] = metadata.fidelity
    if earlier and metadata.fidelity < earlier[-1] - REGRESSION_TOLERANCE:
        state.warn(
            f"Research fidelity fell from {earlier[-1]:.2f} to {metadata.fidelity:.2f} in "
            f"iteration {state.iteration}."
        )
    _warn_low_fidelity(state, metadata)


def _warn_low_fidelity(state: Ledger, metadata: ContentAllocationMetadata) -> None:
    """One warning of low fidelity, for the research as it is now: an earlier one (another
    figure, another cause) is replaced, and none is left once the fidelity is back up."""
    message = None
    if metadata.items_total and metadata.fidelity < LOW_FIDELITY:
        message = low_fidelity_warning(metadata.fidelity, state.content_fidelity.values())
    state.warnings[:] = [
        w for w in state.warnings if not w.startswith(LOW_FIDELITY_SAID) or w == message
    ]
    if message is not None:
        state.warn(message)


def _combined(first: PhaseAllocation, second: PhaseAllocation) -> PhaseAllocation:
    """Two calls' allocations of one phase as one (fidelity weighted by items)."""
    items = first.items + second.items
    fidelity = (
        (first.fidelity * first.items + second.fidelity * second.items) / items if items else 1.0
    )
    return PhaseAllocation(
        iteration=second.iteration,
        tokens_used=first.tokens_used + second.tokens_used,
        tokens_available=first.tokens_available + second.tokens_available,
        items=items,
        items_dropped=first.items_dropped + second.items_dropped,
        items_summarized=first.items_summarized + second.items_summarized,
        items_degraded=first.items_degraded + second.items_degraded,
        fidelity=fidelity,
    )


def low_fidelity_warning(score: float, records: Iterable[ContentFidelity]) -> str:
    """The warning of a research whose fidelity is ``score``: what cut its text among
    ``records`` (the cause that lost more first) and the settings that read more."""
    budget = window = 0.0
    pages = items = 0
    for record in records:
        loss = 1.0 - record.compression_ratio
        if loss > 0 and record.method == READ_BY_BUDGET:
            budget, pages = budget + loss, pages + 1
        elif loss > 0:
            window, items = window + loss, items + 1
    said = f"{LOW_FIDELITY_SAID}{score:.2f} ({fidelity_band(score)}): "
    if not pages:
        return (
            f"{said}much of the gathered text was shortened to fit the model's context window. "
            "Reduce deep_research_max_sources or use a model with a larger context window for "
            "a more complete analysis."
        )
    by_budget = f"the reading budget read the most relevant part of {pages} page(s)"
    raise_budget = (
        "raise reading_budget (deep_research_reading_budget in the configuration) or use "
        "effort='deep'"
    )
    if not items:
        return (
            f"{said}{by_budget} and left the rest, by design. To read more of each page, "
            f"{raise_budget}."
        )
    by_window = f"{items} item(s) were shortened to fit the model's context window"
    causes = [by_budget, by_window] if budget >= window else [by_window, by_budget]
    return (
        f"{said}{causes[0]}, and {causes[1]}. To read more of each page, {raise_budget}; to fit "
        "more, reduce deep_research_max_sources or use a model with a larger context window."
    )


def _refresh_totals(state: Ledger, metadata: ContentAllocationMetadata) -> None:
    records = list(state.content_fidelity.values())
    metadata.items_total = len(records)
    metadata.fidelity = round(_mean([r.compression_ratio for r in records]), 4)
    metadata.items_dropped = sum(1 for r in records if r.current_level is ContentLevel.DROPPED)
    metadata.items_summarized = sum(1 for r in records if r.method == "summary")
    metadata.items_degraded = sum(1 for r in records if r.current_level is not ContentLevel.FULL)
    metadata.tokens_used = sum(p.tokens_used for p in metadata.phases.values())
    metadata.tokens_available = sum(p.tokens_available for p in metadata.phases.values())
    metadata.utilization = (
        round(metadata.tokens_used / metadata.tokens_available, 4)
        if metadata.tokens_available
        else 0.0
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 1.0
