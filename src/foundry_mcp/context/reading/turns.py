"""Whose reading goes next when every reading process is busy: turns by reader.

A reading waits for a process (:mod:`.elsewhere`). When every process is busy, the readings
waiting take turns by reader (a research): the one whose reader has had the fewest readings by
the time a process frees goes first, then the shortest (so the research waits on the quickest of
its first readings), then the earliest. A research's first reading is what its first analysis
call waits for; so when researches start together, each has its first reading before any has
its second, even when all their readings came at once.

A reading whose pages a busy process holds parsed (researches of one topic, started together,
read the same pages) waits for that process while readings any process will do for take the
free ones: parsed again elsewhere, its pages would cost the CPU of their first parse. It does
not wait on an idle process: a free process no other waiting reading wants is its own.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar


class _Locked(Protocol):
    """A process with the lock that gives it one reading at a time."""

    lock: threading.Lock


Held = TypeVar("Held", bound=_Locked)


class Turns(Generic[Held]):
    """Who reads next when every process is busy (see the module): the waiting reading whose
    reader has had the fewest readings by now, then the shortest, then the earliest; a process
    that holds a waiting reading's pages parsed goes to the first such reading."""

    READERS_KEPT = 1024  # readers whose count of readings is kept (the most recent)

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._waiting: list[_Waiting] = []
        self._arrivals = itertools.count()
        self._had: OrderedDict[str, int] = OrderedDict()

    def take(
        self,
        held: Sequence[Held],
        order: Sequence[int],
        reader: str,
        size: int = 0,
        holders: frozenset[int] = frozenset(),
    ) -> Held:
        """A process for a reading of ``size`` characters, its lock taken, in turn.

        ``order``: the processes (indexes into ``held``) the reading would rather have, best
        first. ``holders``: those holding most of its pages parsed, worth waiting for while
        they are busy (empty: any will do). A free process goes to the first reading in turn
        that it holds the pages of, or that any will do for; when there is none, to the first
        in turn all the same: no process stays idle while a reading waits.
        """
        ranked = [*order, *(i for i in range(len(held)) if i not in order)]
        with self._changed:
            mine = _Waiting(reader, size, next(self._arrivals), holders)
            self._waiting.append(mine)
            while True:
                free = [i for i in ranked if not held[i].lock.locked()]
                in_turn = self._in_turn() if free else []  # all busy: nothing to share out
                for index in free:
                    process = held[index]
                    if _claimant(in_turn, index) is not mine:
                        continue
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

    def _in_turn(self) -> list[_Waiting]:
        """The waiting readings in turn (call holding ``_changed``). A reader's count is read
        now, not when its reading came: a research's readings that came together go one at a
        time among the other researches'."""
        had = self._had
        return sorted(self._waiting, key=lambda w: (had.get(w.reader, 0), w.size, w.arrival))

    def give_back(self, process: Held) -> None:
        """The reading on ``process`` is done: the next in line may take it."""
        process.lock.release()
        with self._changed:
            self._changed.notify_all()


@dataclass(frozen=True, eq=False)
class _Waiting:
    """A reading waiting for a process (compared by identity)."""

    reader: str
    size: int  # characters to read
    arrival: int
    holders: frozenset[int]  # the processes worth waiting for (empty: any will do)


def _claimant(in_turn: Sequence[_Waiting], index: int) -> _Waiting:
    """Who gets process ``index`` once free: the first in turn that it holds the pages of or
    that any process will do for, else the first in turn."""
    for waiting in in_turn:
        if not waiting.holders or index in waiting.holders:
            return waiting
    return in_turn[0]
