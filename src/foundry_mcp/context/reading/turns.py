"""Whose reading goes next when every reading process is busy: turns by reader.

A reading waits for a process (:mod:`.elsewhere`). When every process is busy, the readings
waiting take turns by reader (a research): the one whose reader has had the fewest readings by
the time a process frees goes first, then the shortest (so the research waits on the quickest of
its first readings), then the earliest. A research's first reading is what its first analysis
call waits for; so when researches start together, each has its first reading before any has
its second, even when all their readings came at once.
"""

from __future__ import annotations

import itertools
import threading
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar


class _Locked(Protocol):
    """A process with the lock that gives it one reading at a time."""

    lock: threading.Lock


Held = TypeVar("Held", bound=_Locked)


class Turns(Generic[Held]):
    """Who reads next when every process is busy (see the module): the waiting reading whose
    reader has had the fewest readings by now, then the shortest, then the earliest."""

    READERS_KEPT = 1024  # readers whose count of readings is kept (the most recent)

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._waiting: list[tuple[str, int, int]] = []  # (reader, characters to read, arrival)
        self._arrivals = itertools.count()
        self._had: OrderedDict[str, int] = OrderedDict()

    def take(self, held: Sequence[Held], page_id: str, reader: str, size: int = 0) -> Held:
        """A process for a reading of ``size`` characters whose first page is ``page_id``, its
        lock taken, in turn: the one the id names when it is free (it may hold the page's
        parse), else any free one (started if need be)."""
        named = zlib.crc32(page_id.encode("utf-8", "surrogatepass")) % len(held)
        with self._changed:
            mine = (reader, size, next(self._arrivals))
            self._waiting.append(mine)
            while True:
                if self._next() == mine:
                    for process in [*held[named:], *held[:named]]:
                        if process.lock.acquire(blocking=False):
                            self._waiting.remove(mine)
                            self._had[reader] = self._had.pop(reader, 0) + 1
                            if len(self._had) > self.READERS_KEPT:
                                self._had.popitem(last=False)
                            self._changed.notify_all()  # the next in line may take another
                            return process
                # A lock is also let go outside these turns (a process closed): look again
                # now and then, not only when told.
                self._changed.wait(timeout=0.05)

    def _next(self) -> tuple[str, int, int]:
        """The waiting reading whose turn it is (call holding ``_changed``). Its reader's count
        is read now, not when it came: a research's readings that came together go one at a
        time among the other researches'."""
        had = self._had
        return min(self._waiting, key=lambda waiting: (had.get(waiting[0], 0), *waiting[1:]))

    def give_back(self, process: Held) -> None:
        """The reading on ``process`` is done: the next in line may take it."""
        process.lock.release()
        with self._changed:
            self._changed.notify_all()
