"""The chaos of a run of ``benchmarks/team/load.py``: worker A SIGKILLed midway
(``kill_midway``), with what the store held of its researches right after; PostgreSQL stopped
and started again mid-run (``restart_postgres``), with what the store held once it was back.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

import anyio

from benchmarks.team.shared import ACTIVE, Answer, Bench, Research, Snapshot

if TYPE_CHECKING:
    from foundry_mcp.research.store.postgres.store import PostgresStore

SNAPSHOT_DELAY = 0.25  # after the kill, before reading the store: a write A sent lands first
KILL_CHECK_SECONDS = 0.5  # how often the store is read for the kill's condition
HELD_DELAY = 3.5  # from PostgreSQL accepting connections again to reading what the store holds


# ----------------------------------------------------------------------------- the kill


def searched(store: PostgresStore, research_ids: Iterable[str]) -> set[str]:
    """Those of these researches that have at least one completed sub-query."""
    return {rid for rid in research_ids if store.load(rid).completed_sub_queries()}


def snapshot(store: PostgresStore, research: Research) -> Snapshot:
    """The research's status, phase and completed sub-queries, as stored now."""
    state = store.load(research.research_id)
    return Snapshot(
        state.status.value, state.phase.value, {q.query for q in state.completed_sub_queries()}
    )


def journal_of(url: str, research_ids: list[str]) -> dict[str, set[Answer]]:
    """The answers each research's journal holds now (read with a connection of its own)."""
    import psycopg

    found: dict[str, set[Answer]] = {rid: set() for rid in research_ids}
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT research_id, answer, record FROM llm_journal WHERE research_id = ANY(%s)",
            (research_ids,),
        ).fetchall()
    for research_id, answer, record in rows:
        tokens = (int(record.get("input_tokens") or 0), int(record.get("output_tokens") or 0))
        found[research_id].add(Answer(answer, *tokens))
    return found


async def kill_midway(bench: Bench) -> None:
    """SIGKILL worker A once every research has started and half of A's have a completed
    search; then read each of A's from the store, with its journal."""
    worker = bench.workers["A"]
    done: set[str] = set()
    while time.monotonic() < bench.deadline:
        if all(r.research_id for r in bench.researches):
            mine = bench.of("A")
            ids = [r.research_id for r in mine if r.research_id not in done]
            done |= await anyio.to_thread.run_sync(searched, bench.store, ids)
            if len(done) >= math.ceil(len(mine) / 2):
                break
        await anyio.sleep(KILL_CHECK_SECONDS)
    else:
        return
    bench.cpu.sample_worker(worker)
    worker.kill()
    bench.killed_at = time.time()
    await anyio.to_thread.run_sync(worker.server.process.wait)
    await anyio.sleep(SNAPSHOT_DELAY)
    mine = bench.of("A")
    for research in mine:
        research.snapshot = await anyio.to_thread.run_sync(snapshot, bench.store, research)
    bench.journaled = await anyio.to_thread.run_sync(
        journal_of, bench.store_url, [r.research_id for r in mine]
    )
    bench.snapshot_taken.set()
    at_kill = [r.snapshot for r in mine if r.snapshot]
    phases = Counter(s.phase if s.status in ACTIVE else s.status for s in at_kill)
    print(
        f"SIGKILLed worker A (pid {worker.pid}) {bench.killed_at - bench.began:.1f} s after the "
        f"start; A's {len(mine)} researches: {sum(1 for s in at_kill if s.completed)} with a "
        "completed search, " + ", ".join(f"{n} {phase}" for phase, n in phases.most_common()),
        flush=True,
    )


def first_takeover(url: str, after: float) -> float | None:
    """When the first ``taken_over`` event since ``after`` (time.time()) was recorded (None:
    none yet)."""
    import psycopg

    with psycopg.connect(url, connect_timeout=5) as conn:
        row = conn.execute(
            "SELECT min(at) FROM events WHERE kind = 'taken_over' AND at > to_timestamp(%s)",
            (after,),
        ).fetchone()
    return row[0].timestamp() if row and row[0] is not None else None


def held_now(
    store: PostgresStore, url: str, research_ids: list[str]
) -> dict[str, tuple[set[str], set[Answer]]]:
    """Each research's completed sub-queries and journal answers, as stored now."""
    journals = journal_of(url, research_ids)
    return {
        rid: ({q.query for q in store.load(rid).completed_sub_queries()}, journals[rid])
        for rid in research_ids
    }


async def restart_postgres(bench: Bench) -> None:
    """Stop PostgreSQL and start it again mid-run: once A's research has been snapshotted
    (``--pg-restart kill``) or once the first of it was taken over (``takeover``)."""
    pg, args, restart = bench.postgres, bench.args, bench.restart
    if pg is None or args.pg_restart == "none":
        return
    await bench.snapshot_taken.wait()
    if args.pg_restart == "takeover":
        killed = bench.killed_at or 0.0
        while await anyio.to_thread.run_sync(first_takeover, bench.store_url, killed) is None:
            await anyio.sleep(0.2)
        await anyio.sleep(args.pg_restart_delay)
    killed_at = bench.killed_at or 0.0
    restart.stopped_at = stopped = time.time()
    try:
        with anyio.CancelScope(shield=True):  # never left stopped
            stop_seconds = await anyio.to_thread.run_sync(pg.stop)
            restart.down_at = time.time()
            await anyio.sleep(args.pg_down)
            pg.start()  # on this thread (the main one): the server dies with it
            restart.started_at = time.time()
            ready_seconds = await anyio.to_thread.run_sync(pg.wait_ready)
            restart.ready_at = time.time()
    except RuntimeError as exc:
        restart.error = str(exc)
        print(f"PostgreSQL restart failed: {exc}", flush=True)
        return
    # What the store holds once the runs that crash on the restart have crashed (their store
    # fails fast for 3 s after it found the database gone) and before their leases run out.
    await anyio.sleep(HELD_DELAY)
    ids = [r.research_id for r in bench.researches]
    restart.held = await anyio.to_thread.run_sync(held_now, bench.store, bench.store_url, ids)
    restart.held_at = time.time()
    print(
        f"restarted PostgreSQL {stopped - killed_at:.1f} s after the kill: stopped in "
        f"{stop_seconds:.2f} s, down {args.pg_down:g} s, accepting connections "
        f"{ready_seconds:.2f} s after its start",
        flush=True,
    )
