"""How much page text one analysis call of a round may read (``ResearchLimits.reading_budget``).

A researcher's round (a simple research's iteration, or one of a sub-question's researcher) reads
at most ``reading_budget`` tokens of page text, its most relevant passages across its pages first
(:func:`~foundry_mcp.context.reading.across.read_within`). Its pages arrive in several calls (in
simple mode each sub-query's sources are analysed as their search returns), so each call takes
the share of what is left that its pages are of the pages still expected this round: the pages
of the sub-queries whose search has not returned count ``max_sources_per_query`` each. The last
call of a round takes all that is left; a round that finds fewer pages than expected reads what
it found, no more; what is left, when it is worth a call, reads more of the pages the round
read in part (:func:`more_to_read`, the analysis phase's last step).
"""

from __future__ import annotations

from collections.abc import Sequence

from foundry_mcp.research.models import ResearchState, Source, SubQueryStatus

MORE_AT_LEAST = 2_000  # tokens: less is not worth a further analysis call


def round_allowance(state: ResearchState, pending: Sequence[Source]) -> int | None:
    """The tokens of page text the analysis of ``pending`` may read now (None: whole pages)."""
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


def more_to_read(state: ResearchState) -> int | None:
    """What is left of this round's budget when it is worth a further reading (at least
    :data:`MORE_AT_LEAST` tokens and a tenth of the budget); else None."""
    budget = state.limits.reading_budget
    if budget is None:
        return None
    left = budget - state.read_by_round.get(state.iteration, 0)
    return left if left >= max(MORE_AT_LEAST, budget // 10) else None


def spend(state: ResearchState, tokens: int) -> None:
    """Count ``tokens`` of page text read in this researcher's round."""
    state.read_by_round[state.iteration] = state.read_by_round.get(state.iteration, 0) + tokens
