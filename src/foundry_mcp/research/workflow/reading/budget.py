"""How much page text a reading may send: the reading budget and each reading's allowance.

A research reads at most ``ResearchLimits.reading_budget`` tokens of page text a round, its most
relevant passages across its pages first
(:func:`~foundry_mcp.context.reading.across.read_within`). In hierarchical mode the researchers
of its sub-questions share it evenly (:func:`branch_budget`, each at least
:data:`MIN_BRANCH_BUDGET`). A researcher's round (a simple research's iteration, or one of a
sub-question's researcher) reads its pages in several analyses (in simple mode each
sub-query's sources are analysed as their search returns), so each reading's allowance
(:func:`round_allowance`) is the share of what is left that its pages are of the pages still
expected this round: the pages of the sub-queries whose search has not returned count
``max_sources_per_query`` each. The last reading of a round takes all that is left; a round
that finds fewer pages than expected reads what it found, no more; what is left, when it is
worth a call (:func:`further_allowance`), is a further reading of the pages the round read in
part (the analysis phase's last step). What each reading sends is counted in the round
(:func:`count_read`, ``ResearchState.read_by_round``).
"""

from __future__ import annotations

from collections.abc import Sequence

from foundry_mcp.research.models import ResearchState, Source, SubQueryStatus

FURTHER_AT_LEAST = 2_000  # tokens: less is not worth a further reading
MIN_BRANCH_BUDGET = 2_000  # tokens of page text a sub-question's researcher reads, at least


def branch_budget(research: ResearchState) -> int | None:
    """A sub-question's researcher's reading budget per round: its share of the research's
    (the sub-questions share it evenly; None: whole pages)."""
    budget = research.limits.reading_budget
    if budget is None:
        return None
    return max(MIN_BRANCH_BUDGET, budget // max(1, len(research.sub_questions)))


def round_allowance(state: ResearchState, pending: Sequence[Source]) -> int | None:
    """The tokens of page text the reading of ``pending`` may send now (None: whole pages)."""
    budget = state.limits.reading_budget
    if budget is None:
        return None
    left = max(0, budget - state.read_by_round.get(state.iteration, 0))
    mine = {s.id for s in pending}
    waiting = sum(
        state.limits.max_sources_per_query
        for sq in state.sub_queries
        if sq.iteration == state.iteration and sq.status is SubQueryStatus.PENDING
    )
    others = sum(1 for s in state.sources if not s.analyzed and s.id not in mine)
    expected = len(mine) + waiting + others
    return left * len(mine) // max(1, expected)


def further_allowance(state: ResearchState) -> int | None:
    """What is left of this round's budget when it is worth a further reading (at least
    :data:`FURTHER_AT_LEAST` tokens and a tenth of the budget); else None."""
    budget = state.limits.reading_budget
    if budget is None:
        return None
    left = budget - state.read_by_round.get(state.iteration, 0)
    return left if left >= max(FURTHER_AT_LEAST, budget // 10) else None


def count_read(state: ResearchState, tokens: int) -> None:
    """Count ``tokens`` of page text sent in this researcher's round."""
    state.read_by_round[state.iteration] = state.read_by_round.get(state.iteration, 0) + tokens
