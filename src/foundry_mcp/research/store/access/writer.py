"""The store's writer thread: writes one at a time in the order asked, a few asked first.

Every write of a process goes through one thread, so a research's events, journal entries and
saves reach the store in the order its run made them. A write a user is waiting on and that no
queued write can precede (a new research's creation: nothing else names it yet) is asked
``first``: it goes before the writes queued by the researches already running, so four starts
arriving while other researches save their work are each answered in milliseconds.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

_FIRST, _IN_TURN, _STOP = 0, 1, 2


class OrderedWriter:
    """One thread running the calls submitted to it: ``first`` ones before the others, each
    kind in the order submitted. ``submit`` after ``shutdown`` raises ``RuntimeError``, as an
    executor's does."""

    def __init__(self, name: str) -> None:
        self._queue: queue.PriorityQueue[tuple[int, int, Any]] = queue.PriorityQueue()
        self._order = itertools.count()
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, call: Callable[..., Any], *args: Any, first: bool = False) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule a write after shutdown")
            self._queue.put(
                (_FIRST if first else _IN_TURN, next(self._order), (future, call, args))
            )
        return future

    def shutdown(self, wait: bool = True) -> None:
        """Run what is queued, then stop the thread."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put((_STOP, next(self._order), None))
        if wait:
            self._thread.join()

    def _work(self) -> None:
        while True:
            _, _, work = self._queue.get()
            if work is None:
                return
            future, call, args = work
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = call(*args)
            except BaseException as exc:  # handed to whoever waits on the write
                future.set_exception(exc)
            else:
                future.set_result(result)
