"""A status read from PostgreSQL: through ``AsyncStore``'s reader threads, or through
psycopg's async pool on the event loop.

The research store runs PostgreSQL on worker threads behind ``AsyncStore`` (writes in order on
one writer thread, reads on reader threads; ``docs/architecture.md``). This measures what the
other design, psycopg's ``AsyncConnectionPool`` on the event loop, would change for the call a
team server answers most, a status: the same statement and the same decoding
(``store/postgres/status.py``), read both ways from a throwaway PostgreSQL on this machine.

The states are real: one research runs first against the fake providers (no simulated
latency), and its final state is stored under ``--research`` ids (about 30 KB each, without
page text, like those of ``benchmarks/team/load.py``). Each way then reads ``--reads``
statuses, the research in turn, twice: as a server's poll mostly is, the state unchanged since
its last read (``known``: the row's state is neither sent nor decoded), and with every state
decoded. Each round runs one call at a time (the latency of one call) and with 16 callers at
once (throughput). It prints, per way and round: the CPU of this process per read (both ways
do the same work besides the access path), p50 and p99 latency, and the reads per second.

Alone, the async pool costs less: about half the CPU of an unchanged read, and half the p99
with 16 callers. A team server under load is another matter: its event loop is what a status
waits for, and the async pool moves the driver's I/O and the decoding of changed states onto
it. With the status reads on the async pool (bf9fbfd, reverted after these runs),
``team/load.py``'s 100 research answered statuses at p99 67 and 151 ms (seeds 7 and 8) against
61 and 79 ms on the reader threads, the two versions run in turn.
Run from the repository root:

    python benchmarks/team/status_reads.py [--reads 2000] [--research 50]

It needs PostgreSQL 12+ (Debian's ``postgresql`` package; as root it runs as ``postgres``).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.simulated import research_to_end, run_settings
from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.store.access.aio import AsyncStore
from foundry_mcp.research.store.owners import Owner
from foundry_mcp.research.store.postgres.database import connection_options
from foundry_mcp.research.store.postgres.status import (
    STATUS_QUERY,
    status_parameters,
    status_read,
)
from foundry_mcp.research.store.postgres.store import PostgresStore
from foundry_mcp.research.store.records import StatusRead
from foundry_mcp.runtime import research_runtime
from tests.fakes import ResearchBrain, fake_openai, fake_tavily
from tests.postgres import running_postgres

CONCURRENT = 16
QUESTION = "How does PostgreSQL's MVCC keep readers from blocking writers?"

Read = Callable[[str, ResearchState | None], Awaitable[StatusRead]]


async def a_real_state(tmp: Path) -> ResearchState:
    """The final state of one research run against the fakes."""
    with fake_openai(ResearchBrain()) as llm, fake_tavily() as search:
        async with research_runtime(run_settings(tmp, llm, search)) as service:
            _, status, state = await research_to_end(service, QUESTION, max_iterations=1)
    if status["status"] != "completed":
        raise SystemExit(f"the research to copy ended {status['status']}: {status['error']}")
    return state


def fill(store: PostgresStore, state: ResearchState, count: int) -> list[str]:
    """``count`` copies of ``state`` under new ids, saved; their ids."""
    owner = Owner()
    ids = []
    for index in range(count):
        copy = state.model_copy(update={"id": f"deepres-{index:012x}"})
        store.create(copy, owner, 600)
        ids.append(copy.id)
    return ids


async def measure(read: Read, ids: list[str], reads: int, unchanged: bool) -> dict[str, float]:
    """CPU per read, latency and throughput of ``reads`` statuses, one at a time and
    ``CONCURRENT`` at once."""
    known: dict[str, ResearchState] = {}
    for research_id in ids:  # every state read once, as a polling server has
        known[research_id] = (await read(research_id, None)).state
    figures: dict[str, float] = {}
    for callers in (1, CONCURRENT):
        timings: list[float] = []
        turn = iter(range(reads))

        async def caller(turn: Iterator[int], timings: list[float]) -> None:
            for index in turn:
                research_id = ids[index % len(ids)]
                began = time.perf_counter()
                await read(research_id, known[research_id] if unchanged else None)
                timings.append(time.perf_counter() - began)

        cpu, wall = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(callers):
                group.start_soon(caller, turn, timings)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        timings.sort()
        figures[f"cpu{callers}"] = cpu / reads * 1000
        figures[f"p50_{callers}"] = timings[len(timings) // 2] * 1000
        figures[f"p99_{callers}"] = timings[math.ceil(0.99 * len(timings)) - 1] * 1000
        figures[f"rate{callers}"] = reads / wall
    return figures


async def compare(url: str, store: PostgresStore, ids: list[str], reads: int) -> None:
    from psycopg_pool import AsyncConnectionPool

    io = AsyncStore(store)

    async def through_threads(research_id: str, known: ResearchState | None) -> StatusRead:
        return await io.read(lambda s: s.load_status(research_id, known))

    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url, kwargs=connection_options(url), min_size=4, max_size=8, open=False
    )
    await pool.open(wait=True)

    async def through_async_pool(research_id: str, known: ResearchState | None) -> StatusRead:
        async with pool.connection() as conn:
            cursor = await conn.execute(STATUS_QUERY, status_parameters(research_id, known))
            found = await cursor.fetchone()
        return status_read(found, research_id, known)

    print(
        f"{'way':<34} {'state':<10} {'CPU/read':>9} {'p50':>8} {'p99':>8} {'reads/s':>8}"
        f"   {CONCURRENT} at once: {'CPU/read':>9} {'p50':>8} {'p99':>8} {'reads/s':>8}"
    )
    for unchanged in (True, False):
        for label, read in (
            ("AsyncStore, reader threads", through_threads),
            ("psycopg AsyncConnectionPool", through_async_pool),
        ):
            f = await measure(read, ids, reads, unchanged)
            state = "unchanged" if unchanged else "decoded"
            print(
                f"{label:<34} {state:<10} {f['cpu1']:7.3f}ms {f['p50_1']:6.3f}ms "
                f"{f['p99_1']:6.3f}ms {f['rate1']:8.0f}   {'':>11}{f['cpu16']:7.3f}ms "
                f"{f['p50_16']:6.3f}ms {f['p99_16']:6.3f}ms {f['rate16']:8.0f}"
            )
    await pool.close()
    io.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reads", type=int, default=2000, help="per way and round")
    parser.add_argument("--research", type=int, default=50, help="stored research read in turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="status-reads-") as folder, running_postgres() as pg:
        tmp = Path(folder)
        state = anyio.run(a_real_state, tmp)
        store = PostgresStore(pg.url(), tmp / "pg-research")
        ids = fill(store, state, args.research)
        size = len(state.model_dump_json()) // 1024
        print(
            f"{args.research} research of {size} KB (the state of a real run), {args.reads} reads"
        )
        anyio.run(compare, pg.url(), store, ids, args.reads)


if __name__ == "__main__":
    main()
