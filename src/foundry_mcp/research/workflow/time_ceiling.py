"""A research's time ceiling: the phases before the report end in time for the report.

``max_time_s`` bounds one run of a research. Part of it is kept for writing and checking the
report; a phase before the report that would run into that part is stopped by the supervisor,
which then has the report written from what was found (and runs no further round).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import anyio


@dataclass
class TimeCeiling:
    """A research's ``max_time_s``, counted from when its run started.

    ``RESERVE_SHARE`` of it (at least ``MIN_RESERVE_S``) is kept for writing and checking the
    report: the phases before the report must end before that share begins.
    """

    deadline: float | None = None
    reserve: float = 0.0
    ended_it: bool = False

    RESERVE_SHARE: ClassVar[float] = 0.5
    MIN_RESERVE_S: ClassVar[float] = 2.0

    @classmethod
    def start(cls, max_time_s: float | None, spent: float = 0.0) -> TimeCeiling:
        """The ceiling of a run that has already spent ``spent`` seconds (queued, starting)."""
        if not max_time_s:
            return cls()
        reserve = min(max_time_s, max(cls.MIN_RESERVE_S, cls.RESERVE_SHARE * max_time_s))
        return cls(deadline=anyio.current_time() + max_time_s - spent, reserve=reserve)

    def left_before_report(self) -> float | None:
        """Seconds the phases before the report may still take (None: no ceiling)."""
        if self.deadline is None:
            return None
        return self.deadline - self.reserve - anyio.current_time()

    def reached(self) -> bool:
        left = self.left_before_report()
        return self.ended_it or (left is not None and left <= 0)
