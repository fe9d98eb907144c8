"""Reading pages in processes of their own, so that it holds neither the server nor its CPU.

Choosing what to read of long pages (:func:`~.across.read_within`: parse, value, take) is the
most CPU a research spends in the server: about a second of a three-part question over long
documentation pages. In a thread it holds the interpreter's lock, so the event loop stalls
behind it: every other research's calls, a status answer, a start. In a process of its own it
stalls nothing, and on a machine with more than one core it runs beside the loop.

:class:`ReadingProcesses` keeps ``processes`` reading processes (``python -m`` this module: it
imports this package only), each reading one request at a time. They start, and load the
research's token counter, half a second after a research starts (:func:`prepare_reading`), once
its first call is out and seconds before its first reading, which would otherwise wait a quarter
of a second for them; or with the first reading that needs one. A reading of less than
:data:`READ_HERE_BELOW_CHARS` of page text is read in the calling thread. The processes run
at a lower priority than the server (:data:`READING_NICENESS`), so that on busy cores the event
loop is not the one kept waiting.

A reading goes to the free process that holds most of its pages parsed (:mod:`.held`): a page
read again, later in the research or by another research of the topic, goes back to the
process that keeps its parse (:mod:`.parsed`). Among those holding as much (a reading of new
pages), the process its first page's text names comes first, so that researches finding the
same page first send it to the same process; a busy one is passed over for a free one, so
that the parts of a research are read side by side. When every process is busy, the
readings waiting take turns by reader (:mod:`.turns`).

The counter is rebuilt there by its name (:func:`counter_named`); a counter with no name a
process can rebuild (a test's own) reads in the calling thread, and so does any reading whose
process cannot start or dies: a reading is never lost to its process. A process that has not
answered by its reading's deadline (:func:`answer_deadline`, many times what the reading takes
on a loaded machine) is killed, and the pages are read from their beginnings instead
(:func:`~.across.read_in_order`, which values nothing): a stuck process never holds a research.
Requests and answers are pickled frames on the process's stdin and stdout, between this
package's two ends only. Called from a worker thread: it waits on the process. A process ends
when its server closes it or its stdin closes (its server died).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import IO, Any

from foundry_mcp.context.reading.across import Page, PageSelection, read_in_order, read_within
from foundry_mcp.context.reading.held import ParsesHeld
from foundry_mcp.context.reading.turns import Turns
from foundry_mcp.context.tokens import (
    EstimateCounter,
    TokenCounter,
    counter_for_encoding,
    counter_name,
    encoding_for_model,
)

log = logging.getLogger(__name__)

READING_PROCESSES_DEFAULT = 2
MAX_READING_PROCESSES = 16
# A reading of less page text than this is read in the calling thread: it holds the loop for
# a few milliseconds, and a process would cost more to start than it saves.
READ_HERE_BELOW_CHARS = 100_000
# A reading's deadline: a process's start and counter load, then about forty times what a
# character of page text takes on a quiet machine (0.5 microseconds).
DEADLINE_SECONDS = 10.0
DEADLINE_SECONDS_PER_CHAR = 20e-6
# A research's reading processes are prepared this long after it starts: its first LLM call is
# out by then (the processes' start-up would hold the two cores the start needs), and its first
# reading is seconds away.
PREPARE_AFTER_SECONDS = 0.5
# A reading process runs at a lower priority than its server (Unix niceness): when the cores
# are all busy, the event loop, which every research's calls go through and which can use only
# one core, gets one first, and the readings take what is left. A reading waits a little
# longer; a crowd's searches and calls do not wait behind readings for a core.
READING_NICENESS = 10
_FRAME = struct.Struct(">Q")  # the length of the pickle that follows


class ProcessFailed(Exception):
    """A reading process could not start, or died, or answered with an error."""


class ProcessTooSlow(ProcessFailed):
    """A reading process did not answer by its reading's deadline, and was killed."""


def answer_deadline(characters: int) -> float:
    """The seconds a reading process has to answer a reading of ``characters`` of page text."""
    return DEADLINE_SECONDS + characters * DEADLINE_SECONDS_PER_CHAR


def counter_named(name: str) -> TokenCounter | None:
    """The counter called ``name`` (``estimate`` or ``tiktoken:<encoding>``), None for another."""
    if name == "estimate":
        return EstimateCounter()
    if name.startswith("tiktoken:"):
        return counter_for_encoding(name.removeprefix("tiktoken:"))
    return None


class _ReadingProcess:
    """One reading process and the lock that gives it one request at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.ready = ""  # the counter this process has loaded for its readings ("": none yet)
        self.parses = ParsesHeld()  # the pages it holds parsed

    def ensure(self) -> subprocess.Popen[bytes]:
        """The running process, started when there is none (call holding ``lock``)."""
        if self.process is not None and self.process.poll() is None:
            return self.process
        self.ready = ""  # a new process has loaded nothing yet
        self.parses.clear()
        package_root = str(Path(__file__).resolve().parents[3])  # the same code runs there
        path = os.environ.get("PYTHONPATH")
        environment = {
            **os.environ,
            "PYTHONPATH": package_root + (os.pathsep + path if path else ""),
        }
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-P", "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=environment,
                close_fds=True,
            )
        except OSError as exc:
            raise ProcessFailed(f"it could not start: {exc}") from None
        return self.process

    def ask(self, request: tuple[Any, ...], deadline: float) -> Any:
        """The process's answer to ``request`` within ``deadline`` seconds, after which the
        process is killed (call holding ``lock``)."""
        process = self.ensure()
        assert process.stdin is not None and process.stdout is not None
        late = threading.Event()

        def kill() -> None:
            late.set()
            process.kill()  # its pipe ends: the read below returns

        timer = threading.Timer(deadline, kill)
        timer.daemon = True
        timer.start()
        try:
            _write(process.stdin, request)
            outcome, value = _read(process.stdout)
        except (OSError, EOFError, pickle.PickleError, struct.error) as exc:
            self.stop()
            if late.is_set():
                raise ProcessTooSlow(f"it did not answer within {deadline:.0f} s") from None
            raise ProcessFailed(f"it stopped answering: {exc!r}") from None
        finally:
            timer.cancel()
        if outcome != "ok":
            raise ProcessFailed(f"it failed: {value}")
        return value

    def stop(self) -> None:
        """End the process (its stdin closed; killed if it does not end at once)."""
        process, self.process = self.process, None
        self.ready = ""
        self.parses.clear()
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _write(stream: IO[bytes], value: Any) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_FRAME.pack(len(payload)) + payload)
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    header = stream.read(_FRAME.size)
    if len(header) < _FRAME.size:
        raise EOFError("the stream ended")
    (size,) = _FRAME.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("the stream ended inside a frame")
    return pickle.loads(payload)


class ReadingProcesses:
    """Readings sent to processes of their own (see the module); ``processes`` 0: none."""

    def __init__(
        self,
        processes: int = READING_PROCESSES_DEFAULT,
        *,
        deadline: Callable[[int], float] = answer_deadline,
    ) -> None:
        self.processes = max(0, min(MAX_READING_PROCESSES, processes))
        self._held = [_ReadingProcess() for _ in range(self.processes)]
        self._deadline = deadline  # seconds for a reading of so many characters
        self.sent = 0  # readings a process did
        self.here = 0  # readings done in the calling thread
        self.in_order = 0  # readings a process did not answer in time, read in order here
        self._counting = threading.Lock()  # readings come from several threads at once
        self._turns: Turns[_ReadingProcess] = Turns()
        self._closed = False

    def read_within(
        self,
        pages: Sequence[Page],
        terms: Sequence[str],
        budget: int,
        counter: TokenCounter,
        *,
        known: Collection[str] = frozenset(),
        page_cap: int | None = None,
        reader: str = "",
    ) -> list[PageSelection]:
        """:func:`~.across.read_within`, in a reading process when one can do it; ``reader``:
        who reads (a research's id), for the turns taken when every process is busy."""
        size = sum(len(page.text) for page in pages)
        if self._held and size >= READ_HERE_BELOW_CHARS and counter_named(counter.name) is not None:
            request = (list(pages), list(terms), budget, counter.name, frozenset(known), page_cap)
            order, holders = self._preferred(pages)
            held = self._turns.take(self._held, order, reader, size, holders)
            try:
                held.ensure()  # a process started now holds nothing yet
                held.parses.add(page.text for page in pages)  # held there from now on
                chosen: list[PageSelection] = held.ask(request, self._deadline(size))
            except ProcessTooSlow as exc:
                # Read here, the same way, it might hold the server as long: read in order.
                log.warning("a reading process was stopped (%s); reading in order here", exc)
                slow = True
            except ProcessFailed as exc:
                log.warning("a reading process failed (%s); reading here instead", exc)
                slow = False
            else:
                held.ready = counter.name  # it has loaded this counter: nothing to prepare
                with self._counting:
                    self.sent += 1
                return chosen
            finally:
                self._turns.give_back(held)
            if slow:
                with self._counting:
                    self.in_order += 1
                return read_in_order(pages, budget, counter, page_cap=page_cap)
        with self._counting:
            self.here += 1
        return read_within(pages, terms, budget, counter, known=known, page_cap=page_cap)

    def _preferred(self, pages: Sequence[Page]) -> tuple[list[int], frozenset[int]]:
        """The processes for a reading of ``pages``, best first (those holding most of their
        text parsed, then round from the one the first page's text names), and those worth
        waiting for: holding at least half of the text parsed."""
        named = hash(pages[0].text) % len(self._held)
        ring = [*range(named, len(self._held)), *range(named)]
        texts = [page.text for page in pages]
        held = {i: self._held[i].parses.chars_of(texts) for i in ring}
        most = max(held.values())
        worth = most > 0 and 2 * most >= sum(len(text) for text in texts)
        holders = frozenset(i for i in ring if held[i] == most) if worth else frozenset()
        return sorted(ring, key=lambda i: -held[i]), holders  # stable: ties keep the ring

    def prepare(self, counter_name: str) -> None:
        """Start each process not running and have it load the counter ``counter_name``, so
        that the first readings of a research find them ready (a start and a counter's load
        are about a quarter of a second); a process busy reading is left alone. Call it from a
        worker thread when a research starts: it waits on the processes."""
        if self._closed or counter_named(counter_name) is None:
            return
        for held in self._held:
            if held.ready == counter_name or not held.lock.acquire(blocking=False):
                continue
            try:
                held.ask(([], [], 0, counter_name, frozenset(), None), DEADLINE_SECONDS)
                held.ready = counter_name
            except ProcessFailed as exc:
                log.debug("a reading process could not be prepared (%s)", exc)
            finally:
                self._turns.give_back(held)

    def prepared(self, counter_name: str) -> bool:
        """Whether every process has loaded the counter ``counter_name`` (none to prepare)."""
        return all(held.ready == counter_name for held in self._held)

    def close(self) -> None:
        """Stop the reading processes (a reading in progress finishes first); a
        :meth:`prepare` after this starts none."""
        self._closed = True
        for held in self._held:
            with held.lock:
                held.stop()


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """The reading process: answer each request until ``requests`` ends."""
    while True:
        try:
            pages, terms, budget, counter_name, known, page_cap = _read(requests)
        except EOFError:
            return
        try:
            counter = counter_named(counter_name) or EstimateCounter()
            chosen = read_within(pages, terms, budget, counter, known=known, page_cap=page_cap)
            _write(answers, ("ok", chosen))
        except Exception as exc:  # told to the server, which reads the pages itself
            _write(answers, ("error", f"{type(exc).__name__}: {exc}"))


_shared = ReadingProcesses(READING_PROCESSES_DEFAULT)


def reading_processes() -> ReadingProcesses:
    """This process's reading processes (see :func:`use_reading_processes`)."""
    return _shared


def prepare_reading(model: str) -> None:
    """Prepare this process's reading processes (:meth:`ReadingProcesses.prepare`) for a
    research whose pages are counted for ``model``, in a daemon thread of its own; nothing
    when they are ready."""
    name = counter_name(encoding_for_model(model))
    readers = _shared

    def prepare() -> None:
        time.sleep(PREPARE_AFTER_SECONDS)
        readers.prepare(name)

    if not readers.prepared(name):
        threading.Thread(target=prepare, name="foundry-mcp-reading", daemon=True).start()


def use_reading_processes(processes: int) -> ReadingProcesses:
    """Read with ``processes`` processes from now on (``[research] reading_processes``; 0:
    in the server's own threads); the processes of the earlier setting are stopped."""
    global _shared
    if processes != _shared.processes:
        old, _shared = _shared, ReadingProcesses(processes)
        old.close()
    return _shared


def _yield_to_the_server() -> None:
    """Lower this process's scheduling priority (:data:`READING_NICENESS`), where the system
    has one."""
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):  # not allowed here: read at the priority given
            os.nice(READING_NICENESS)


if __name__ == "__main__":
    _yield_to_the_server()
    channel_in, channel_out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the answers' pipe
    serve(channel_in, channel_out)
