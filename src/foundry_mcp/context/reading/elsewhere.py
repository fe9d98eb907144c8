"""Reading pages in processes of their own, so that it holds neither the server nor its CPU.

Choosing what to read of long pages (:func:`~.across.read_within`: parse, value, take) is the
most CPU a research spends in the server: about a second of a three-part question over long
documentation pages. In a thread it holds the interpreter's lock, so the event loop stalls
behind it: every other research's calls, a status answer, a start. In a process of its own it
stalls nothing, and on a machine with more than one core it runs beside the loop.

:class:`ReadingProcesses` keeps ``processes`` single-process pools, started on first use (a
process starts in about 0.2 s and imports only this package). A reading goes to the pool its
first page's id names, so a page read again later in the research, whose parse its process
keeps (:mod:`.parsed`), goes back to the same process. The counter is rebuilt there by its name
(:func:`counter_named`); a counter with no name a process can rebuild (a test's own) reads in
the calling thread, and so does any reading whose process cannot be started or has died: a
reading is never lost to its process. Called from a worker thread: it waits on the process.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import zlib
from collections.abc import Collection, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from foundry_mcp.context.reading.across import Page, PageSelection, read_within
from foundry_mcp.context.tokens import EstimateCounter, TokenCounter, counter_for_encoding

log = logging.getLogger(__name__)

READING_PROCESSES_DEFAULT = 1
MAX_READING_PROCESSES = 16


def counter_named(name: str) -> TokenCounter | None:
    """The counter called ``name`` (``estimate`` or ``tiktoken:<encoding>``), None for another."""
    if name == "estimate":
        return EstimateCounter()
    if name.startswith("tiktoken:"):
        return counter_for_encoding(name.removeprefix("tiktoken:"))
    return None


def _read_there(
    pages: Sequence[Page],
    terms: Sequence[str],
    budget: int,
    counter_name: str,
    known: frozenset[str],
    page_cap: int | None,
) -> list[PageSelection]:
    """In the reading process: :func:`~.across.read_within` with the counter rebuilt."""
    counter = counter_named(counter_name) or EstimateCounter()
    return read_within(pages, terms, budget, counter, known=known, page_cap=page_cap)


def _ready() -> None:
    """Nothing: a process that ran it has started and imported this module."""


class ReadingProcesses:
    """Readings sent to processes of their own (see the module); ``processes`` 0: none."""

    def __init__(self, processes: int = READING_PROCESSES_DEFAULT) -> None:
        self.processes = max(0, min(MAX_READING_PROCESSES, processes))
        self._pools: dict[int, ProcessPoolExecutor] = {}
        self._lock = threading.Lock()
        self.sent = 0  # readings a process did
        self.here = 0  # readings done in the calling thread

    def read_within(
        self,
        pages: Sequence[Page],
        terms: Sequence[str],
        budget: int,
        counter: TokenCounter,
        *,
        known: Collection[str] = frozenset(),
        page_cap: int | None = None,
    ) -> list[PageSelection]:
        """:func:`~.across.read_within`, in a reading process when one can do it."""
        pool = self._pool_for(pages) if counter_named(counter.name) is not None else None
        if pool is not None:
            try:
                arguments = (list(pages), list(terms), budget, counter.name, frozenset(known))
                chosen = pool.submit(_read_there, *arguments, page_cap).result()
            except (BrokenProcessPool, OSError, RuntimeError) as exc:
                log.warning("a reading process failed (%s); reading here instead", exc)
                self._drop(pool)
            else:
                self.sent += 1
                return chosen
        self.here += 1
        return read_within(pages, terms, budget, counter, known=known, page_cap=page_cap)

    def start(self) -> None:
        """Start the processes now (in the background), not on the first reading."""
        for number in range(self.processes):
            pool = self._pool(number)
            if pool is not None:
                pool.submit(_ready)

    def _pool_for(self, pages: Sequence[Page]) -> ProcessPoolExecutor | None:
        if not self.processes or not pages:
            return None
        return self._pool(zlib.crc32(pages[0].id.encode("utf-8", "surrogatepass")) % self.processes)

    def _pool(self, number: int) -> ProcessPoolExecutor | None:
        with self._lock:
            pool = self._pools.get(number)
            if pool is None:
                try:
                    context = multiprocessing.get_context("spawn")
                    pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
                except (OSError, ValueError) as exc:
                    log.warning("no reading process could start (%s); reading here", exc)
                    self.processes = 0
                    return None
                self._pools[number] = pool
            return pool

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        """Forget a pool that failed: the next reading of its pages starts a new process."""
        with self._lock:
            for number, held in list(self._pools.items()):
                if held is pool:
                    del self._pools[number]
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the reading processes (a reading in progress finishes first)."""
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)


_shared = ReadingProcesses(READING_PROCESSES_DEFAULT)


def reading_processes() -> ReadingProcesses:
    """This process's reading processes (see :func:`use_reading_processes`)."""
    return _shared


def use_reading_processes(processes: int) -> ReadingProcesses:
    """Read with ``processes`` processes from now on (``[research] reading_processes``; 0:
    in the server's own threads); the processes of the earlier setting are stopped."""
    global _shared
    if processes != _shared.processes:
        old, _shared = _shared, ReadingProcesses(processes)
        old.close()
    return _shared
