"""Reading pages in processes of their own: the same reading as in the server's threads, and
never lost to a process that dies."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from foundry_mcp.context.reading import elsewhere
from foundry_mcp.context.reading.across import Page, read_in_order, read_within
from foundry_mcp.context.reading.elsewhere import (
    READ_HERE_BELOW_CHARS,
    ReadingProcesses,
    answer_deadline,
    counter_named,
    prepare_reading,
)
from foundry_mcp.context.reading.focus import focus_terms
from foundry_mcp.context.reading.turns import Turns
from foundry_mcp.context.tokens import EstimateCounter, counter_for_model

TERMS = focus_terms("Compare lmdb and leveldb for write throughput")


def pages(seed: int, count: int = 3) -> list[Page]:
    """Long pages of prose naming the subject, a figure somewhere in each (100-220 KB in all:
    enough to be read in a process)."""
    rng = random.Random(seed)
    made = []
    for number in range(count):
        paragraphs = [
            f"Section {n} of the {['lmdb', 'leveldb'][n % 2]} guide covers logging, releases and "
            f"the layout of its files ({rng.randint(1, 999)} lines in all)."
            for n in range(rng.randint(300, 600))
        ]
        at = rng.randrange(len(paragraphs))
        paragraphs.insert(at, f"FACT-{seed}-{number}: lmdb wrote 91,500 keys a second.")
        made.append(Page(f"page-{seed}-{number}", "\n\n".join(paragraphs)))
    return made


@pytest.fixture
def readers():
    made = ReadingProcesses(1)
    yield made
    made.close()


def texts(selections) -> list[str]:
    return [s.text for s in selections]


def test_a_process_reads_what_the_thread_would(readers: ReadingProcesses) -> None:
    counter = counter_for_model("gpt-4o")  # tiktoken's when it loads, else the estimate
    for seed in range(3):
        read = pages(seed)
        there = readers.read_within(read, TERMS, 1_500, counter, known={"x"}, page_cap=900)
        here = read_within(read, TERMS, 1_500, counter, known={"x"}, page_cap=900)
        assert texts(there) == texts(here)
        assert [s.chosen for s in there] == [s.chosen for s in here]
    assert readers.sent == 3 and readers.here == 0


def test_a_counter_no_process_can_rebuild_reads_in_the_thread(readers: ReadingProcesses) -> None:
    class Words:
        name = "words"

        def count(self, text: str) -> int:
            return len(text.split())

    chosen = readers.read_within(pages(0), TERMS, 300, Words())
    assert texts(chosen) == texts(read_within(pages(0), TERMS, 300, Words()))
    assert readers.sent == 0 and readers.here == 1
    assert counter_named("words") is None
    assert isinstance(counter_named("estimate"), EstimateCounter)


def test_no_processes_reads_in_the_thread() -> None:
    readers = ReadingProcesses(0)
    assert texts(readers.read_within(pages(1), TERMS, 800, EstimateCounter()))
    assert readers.here == 1 and readers.sent == 0


def test_a_short_reading_is_read_in_the_thread(readers: ReadingProcesses) -> None:
    short = [Page(p.id, p.text[: READ_HERE_BELOW_CHARS // 4]) for p in pages(2)]
    assert sum(len(p.text) for p in short) < READ_HERE_BELOW_CHARS
    assert texts(readers.read_within(short, TERMS, 800, EstimateCounter()))
    assert readers.here == 1 and readers.sent == 0 and _worker_pids(readers) == []


def _worker_pids(readers: ReadingProcesses) -> list[int]:
    return [held.process.pid for held in readers._held if held.process is not None]


def test_readings_from_many_threads_survive_a_reading_process_killed_among_them() -> None:
    """Sixteen readings at once from eight threads, at random moments, over two processes; one
    process is killed while they run. Every reading returns what the thread would read."""
    readers = ReadingProcesses(2)
    counter = EstimateCounter()
    try:
        rng = random.Random(7)
        jobs = [(seed, rng.uniform(0, 0.3)) for seed in range(16)]

        def one(job: tuple[int, float]) -> list[str]:
            seed, pause = job
            time.sleep(pause)
            return texts(readers.read_within(pages(seed), TERMS, 1_000, counter))

        with ThreadPoolExecutor(8) as threads:
            running = [threads.submit(one, job) for job in jobs]
            deadline = time.monotonic() + 10
            while not _worker_pids(readers) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)
            os.kill(_worker_pids(readers)[0], signal.SIGKILL)
            got = [future.result(timeout=60) for future in running]
        for (seed, _), chosen in zip(jobs, got, strict=True):
            assert chosen == texts(read_within(pages(seed), TERMS, 1_000, counter))
        assert readers.sent + readers.here == 16
        # The next reading after the kill starts a new process and is read there again.
        before = readers.sent
        readers.read_within(pages(99), TERMS, 1_000, counter)
        readers.read_within(pages(98), TERMS, 1_000, counter)
        assert readers.sent > before
    finally:
        readers.close()


def test_a_reading_goes_to_a_free_process_when_the_one_its_page_names_is_busy() -> None:
    """Two parts of a research are read side by side: the process a reading's first page names
    is busy, so a free one reads it (and the named one reads it when all are free)."""
    readers = ReadingProcesses(2)
    counter = EstimateCounter()
    try:
        read = pages(5)
        readers.read_within(read, TERMS, 1_000, counter)
        (named,) = [i for i, held in enumerate(readers._held) if held.process is not None]
        other = readers._held[1 - named]
        assert other.process is None
        with readers._held[named].lock:  # busy with another reading
            chosen = readers.read_within(read, TERMS, 1_000, counter)
        assert other.process is not None and other.process.poll() is None
        assert texts(chosen) == texts(read_within(read, TERMS, 1_000, counter))
        # Both free again: the named process reads it (it holds the page's parse).
        with other.lock, ThreadPoolExecutor(1) as thread:  # it does not wait on the other
            thread.submit(readers.read_within, read, TERMS, 1_000, counter).result(timeout=30)
        assert readers.sent == 3 and readers.here == 0
    finally:
        readers.close()


def test_a_reading_goes_to_the_process_holding_its_pages_whatever_their_ids() -> None:
    """Researches of one topic read the same pages under ids of their own: a reading goes to
    the process holding most of its pages parsed, whichever process its first page names."""
    readers = ReadingProcesses(2)
    counter = EstimateCounter()
    try:
        shared = pages(6)
        readers.read_within(shared, TERMS, 1_000, counter)
        (holder,) = [i for i, held in enumerate(readers._held) if held.process is not None]
        for seed in range(8):  # a new page first: it names either process
            (new,) = pages(100 + seed, 1)
            again = [Page(f"another-{page.id}", page.text) for page in shared]
            readers.read_within([Page(new.id, new.text[:5_000]), *again], TERMS, 1_000, counter)
        assert readers._held[1 - holder].process is None  # never needed
        assert readers.sent == 9
    finally:
        readers.close()


def test_a_reading_waits_for_the_busy_process_holding_its_pages_while_others_take_the_free() -> (
    None
):
    turns: Turns[_Busy] = Turns()
    processes = [_Busy(), _Busy()]
    processes[0].lock.acquire()  # busy: it holds the pages of the first reading
    processes[1].lock.acquire()
    taken: dict[str, _Busy] = {}

    def read(reader: str, holders: frozenset[int]) -> None:
        taken[reader] = turns.take(processes, [0, 1], reader, 1, holders)

    def waiting(count: int) -> None:
        deadline = time.monotonic() + 10
        while len(turns._waiting) < count and time.monotonic() < deadline:
            time.sleep(0.001)
        assert len(turns._waiting) == count

    with ThreadPoolExecutor(2) as threads:
        first = threads.submit(read, "holder's", frozenset({0}))
        waiting(1)
        other = threads.submit(read, "any", frozenset())
        waiting(2)
        turns.give_back(processes[1])  # the free process goes to the reading any will do for
        other.result(timeout=10)
        assert taken == {"any": processes[1]} and not first.done()
        turns.give_back(processes[0])
        first.result(timeout=10)
    assert taken["holder's"] is processes[0]
    # Alone, a reading does not wait on a busy holder while a process is idle.
    turns.give_back(processes[1])
    assert turns.take(processes, [0, 1], "alone", 1, frozenset({0})) is processes[1]


Reading = tuple[str, int, int]  # (reader, seed, pages)


def _served_in_turn(before: list[Reading], queued: list[Reading]) -> list[str]:
    """The readers in the order one reading process served them: ``before`` read one after
    the other, then ``queued`` each waiting in turn while the process is busy."""
    readers = ReadingProcesses(1)
    counter = EstimateCounter()
    served: list[str] = []

    def read(reader: str, seed: int, count: int) -> None:
        readers.read_within(pages(seed, count), TERMS, 1_000, counter, reader=reader)
        served.append(reader)

    def waiting(count: int) -> None:
        deadline = time.monotonic() + 10
        while len(readers._turns._waiting) < count and time.monotonic() < deadline:
            time.sleep(0.005)
        assert len(readers._turns._waiting) == count

    try:
        for reading in before:
            read(*reading)
        with ThreadPoolExecutor(len(queued)) as threads:
            futures = []
            with readers._held[0].lock:  # the only process is busy
                for reading in queued:
                    futures.append(threads.submit(read, *reading))
                    waiting(len(futures))
            for future in futures:
                future.result(timeout=60)
        return served
    finally:
        readers.close()


def test_when_every_process_is_busy_the_reader_with_fewest_readings_goes_first() -> None:
    """Researches starting together each get their first reading before any gets its third: a
    reading of a research that has had none goes before one of a research that has had two,
    though it came later."""
    served = _served_in_turn([("early", 1, 3), ("early", 2, 3)], [("early", 3, 3), ("new", 4, 3)])
    assert served == ["early", "early", "new", "early"]


def test_among_readers_with_as_many_readings_the_shortest_reading_goes_first() -> None:
    """Two researches waiting for their first reading: the one with less to read goes first,
    though it came later (its first analysis call waits the least); a reader that has had a
    reading still waits for both."""
    served = _served_in_turn(
        [("had one", 3, 3)], [("had one", 3, 3), ("long", 6, 6), ("short", 3, 3)]
    )
    assert served == ["had one", "short", "long", "had one"]


def test_a_readers_count_is_read_when_a_process_frees_not_when_its_reading_came() -> None:
    """A research whose readings all came at once has them one at a time among the others':
    once its first is taken, another research's reading goes before its second, though that
    one is longer and came later."""
    served = _served_in_turn([], [("together", 3, 3), ("together", 3, 3), ("other", 6, 6)])
    assert served == ["together", "other", "together"]


class _Busy:
    """Stands for a reading process: only its lock matters to the turns."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


def _served_by_one_process(
    rng: random.Random, readings: list[tuple[str, int]]
) -> list[tuple[int, int]]:
    """``readings`` (reader, length) all waiting on one busy process, then served: for each,
    in the order served, how many readings its reader had before, and its length."""
    turns = Turns()
    process = _Busy()
    process.lock.acquire()
    served: list[tuple[int, int]] = []
    had: Counter[str] = Counter()

    def read(reader: str, size: int) -> None:
        taken = turns.take([process], [0], reader, size)
        served.append((had[reader], size))  # one process: nothing else runs meanwhile
        had[reader] += 1
        time.sleep(rng.uniform(0, 0.002))
        turns.give_back(taken)

    with ThreadPoolExecutor(len(readings)) as threads:
        futures = [threads.submit(read, *reading) for reading in readings]
        deadline = time.monotonic() + 10
        while len(turns._waiting) < len(readings) and time.monotonic() < deadline:
            time.sleep(0.001)
        turns.give_back(process)  # the process frees
        for future in futures:
            future.result(timeout=30)
    return served


def test_turns_under_random_readers_and_lengths_go_round_by_round_shortest_first() -> None:
    """Random readers and lengths, all waiting on one busy process, in random arrival order:
    once it frees, they are served round by round (every waiting reader's first, then every
    one's second, ...) and, within a round, shortest first."""
    rng = random.Random(11)
    for _ in range(30):
        readings = [
            (f"reader {rng.randrange(5)}", rng.randrange(1, 8) * 1_000)
            for _ in range(rng.randint(3, 12))
        ]
        served = _served_by_one_process(rng, readings)
        assert served == sorted(served)
        assert sorted(size for _, size in served) == sorted(size for _, size in readings)


def test_turns_under_random_arrivals_and_hold_times_serve_every_reading_once() -> None:
    """Readings arrive at random moments over three processes held for random times, one of
    them let go outside the turns now and then (a process closed), half of the readings
    waiting for the process holding their pages: every reading is served, once, and never two
    on one process at a time."""
    rng = random.Random(5)
    turns = Turns()
    processes = [_Busy() for _ in range(3)]
    using: Counter[int] = Counter()
    served: list[int] = []
    guard = threading.Lock()

    def read(number: int, pause: float, hold: float) -> None:
        time.sleep(pause)
        # Half of them hold out for a process holding their pages: served all the same.
        holders = frozenset({number % 3}) if number % 2 else frozenset()
        taken = turns.take(processes, [number % 3], f"reader {number % 4}", number, holders)
        with guard:
            using[id(taken)] += 1
            assert using[id(taken)] == 1
            served.append(number)
        time.sleep(hold)
        with guard:
            using[id(taken)] -= 1
        if number % 7 == 0:
            taken.lock.release()  # outside the turns: no one is told
        else:
            turns.give_back(taken)

    jobs = [(n, rng.uniform(0, 0.05), rng.uniform(0, 0.01)) for n in range(60)]
    with ThreadPoolExecutor(16) as threads:
        for future in [threads.submit(read, *job) for job in jobs]:
            future.result(timeout=60)
    assert sorted(served) == list(range(60))
    assert not turns._waiting
    # The last process let go outside the turns, with a reading waiting: it is taken all
    # the same, without anyone being told.
    for process in processes:
        process.lock.acquire()
    taken: list[object] = []
    late = threading.Thread(
        target=lambda: taken.append(turns.take(processes, [0], "late", 1)), daemon=True
    )  # a daemon: were it never served, the test would fail, not hang
    late.start()
    deadline = time.monotonic() + 10
    while not turns._waiting and time.monotonic() < deadline:
        time.sleep(0.001)
    processes[1].lock.release()
    late.join(timeout=2)
    assert taken == [processes[1]]


def test_a_process_that_does_not_answer_by_the_deadline_is_killed_and_the_pages_read_in_order() -> (
    None
):
    """A stuck reading process (stopped here) holds its reading no longer than the deadline:
    it is killed, the pages are read from their beginnings, and the next reading starts a new
    process."""
    # A second for the stuck reading; a minute for the others, whose process may be starting
    # on a loaded machine.
    seconds = [60.0]
    readers = ReadingProcesses(1, deadline=lambda characters: seconds[0])
    counter = EstimateCounter()
    try:
        readers.read_within(pages(3), TERMS, 1_000, counter)
        (stuck,) = _worker_pids(readers)
        os.kill(stuck, signal.SIGSTOP)
        seconds[0] = 1.0
        began = time.monotonic()
        got = readers.read_within(pages(4), TERMS, 1_000, counter)
        seconds[0] = 60.0
        assert time.monotonic() - began < 5
        assert texts(got) == texts(read_in_order(pages(4), 1_000, counter))
        assert readers.in_order == 1 and readers.sent == 1
        with pytest.raises(ProcessLookupError):
            os.kill(stuck, 0)  # killed and reaped
        again = readers.read_within(pages(5), TERMS, 1_000, counter)
        assert texts(again) == texts(read_within(pages(5), TERMS, 1_000, counter))
        assert readers.sent == 2 and _worker_pids(readers) != [stuck]
    finally:
        readers.close()


def test_a_reading_deadline_grows_with_the_text_and_leaves_room_for_a_loaded_machine() -> None:
    assert answer_deadline(0) >= 5
    # About 0.5 microseconds a character on a quiet machine: forty times that, at least.
    assert answer_deadline(1_000_000) - answer_deadline(0) >= 40 * 0.5e-6 * 1_000_000


def test_prepared_processes_are_running_with_the_counter_loaded_and_a_busy_one_is_left_alone() -> (
    None
):
    readers = ReadingProcesses(2)
    try:
        busy = readers._held[1]
        assert busy.lock.acquire(blocking=False)  # a reading holds it
        readers.prepare("estimate")
        assert readers._held[0].ready == "estimate" and readers._held[0].process is not None
        assert busy.ready == "" and busy.process is None  # left alone
        busy.lock.release()
        first = readers._held[0].process.pid
        readers.prepare("estimate")  # ready: nothing restarted
        assert readers._held[0].process.pid == first and busy.ready == "estimate"
        # The first reading finds its process running.
        readers.read_within(pages(6), TERMS, 1_000, EstimateCounter())
        assert readers.sent == 1 and readers._held[0].process.pid == first
        readers.prepare("words")  # a counter no process can rebuild: nothing to prepare
        assert {held.ready for held in readers._held} == {"estimate"}
    finally:
        readers.close()
    readers.prepare("estimate")  # closed: nothing starts again
    assert _worker_pids(readers) == []


def test_a_research_starting_prepares_the_reading_processes_for_its_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readers = ReadingProcesses(1)
    monkeypatch.setattr(elsewhere, "_shared", readers)
    monkeypatch.setattr(elsewhere, "PREPARE_AFTER_SECONDS", 0.0)
    try:
        prepare_reading("claude-sonnet-4-5")  # no public tokenizer: the estimate
        deadline = time.monotonic() + 30
        while readers._held[0].ready != "estimate" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert readers._held[0].ready == "estimate" and _worker_pids(readers)
    finally:
        readers.close()


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no process priorities here")
def test_a_reading_process_runs_at_a_lower_priority_than_its_server(
    readers: ReadingProcesses,
) -> None:
    """On busy cores the event loop gets a core before the readings: each reading process is
    niced below the server that started it."""
    readers.read_within(pages(7), TERMS, 1_000, EstimateCounter())
    (pid,) = _worker_pids(readers)
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    expected = min(19, ours + elsewhere.READING_NICENESS)
    assert elsewhere.READING_NICENESS > 0
    assert os.getpriority(os.PRIO_PROCESS, pid) == expected


def test_the_server_forgets_a_process_s_parses_as_its_cache_drops_them() -> None:
    from foundry_mcp.context.reading.held import ParsesHeld

    held = ParsesHeld(limit=100)
    first, second, third = "a" * 40, "b" * 40, "c" * 40
    held.add([first, second])
    assert held.chars_of([first, second, third]) == 80
    held.add(["".join(["a"] * 40)])  # an equal text read again: the most recent now
    held.add([third])  # past the limit: the least recently read goes
    assert held.chars_of([first, second, third]) == 80 and held.chars_of([second]) == 0
    held.add(["d" * 101])  # longer than the whole cache: never kept
    assert held.chars_of(["d" * 101]) == 0
    held.clear()
    assert held.chars_of([first, third]) == 0
