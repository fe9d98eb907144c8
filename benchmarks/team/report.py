"""What a run of ``benchmarks/team/load.py`` prints: its settings, every figure and check
(``report``: outcomes, takeovers, runs twice at once, repeats, latency and load), the workers'
logs, the acceptance items of issue 31 and the verdict line.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import foundry_mcp
from benchmarks.crash_resume import prompts
from benchmarks.team.judge import (
    RunEnds,
    attribute,
    cut_by_kill,
    cuts_of,
    peak_in_flight,
    query_of,
    repeats,
    run_ends,
    time_status_reads,
    twice_at_once,
)
from benchmarks.team.shared import (
    ACTIVE,
    LLM_PATH,
    OPTIONS,
    POLL_SECONDS,
    SEARCH_PATH,
    Bench,
    ProviderCall,
    StatusCall,
    host_name,
)
from benchmarks.team.status_probe import INTERVAL as PROBE_INTERVAL
from foundry_mcp.research.store.url import redact_url
from tests.fakes import ResearchBrain

# ----------------------------------------------------------------------------- printing


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def latency_line(label: str, calls: list[StatusCall]) -> str:
    """The percentiles of the calls answered; how many answered an error or not at all."""
    timings = [c.seconds * 1000 for c in calls if c.outcome == "ok"]
    outcomes = Counter(c.outcome for c in calls)
    codes = Counter(c.code or "?" for c in calls if c.outcome == "error")
    counts = f"{len(timings)} answered, {outcomes['error']} errors" + (
        " (" + ", ".join(f"{n} {code}" for code, n in codes.most_common()) + ")" if codes else ""
    )
    counts += f", {outcomes['broken']} broken"
    if not timings:
        return f"  {label:16s} no answered call; {counts}"
    return (
        f"  {label:16s} p50 {percentile(timings, 0.5):6.0f} ms   p99 "
        f"{percentile(timings, 0.99):6.0f} ms   max {max(timings):6.0f} ms   {counts}"
    )


def status_p99(calls: list[StatusCall]) -> float | None:
    """The p99 of the answered calls, in ms (None: none answered)."""
    timings = [c.seconds * 1000 for c in calls if c.outcome == "ok"]
    return percentile(timings, 0.99) if timings else None


def print_settings(bench: Bench, url: str) -> None:
    """What runs: the researches, the workers and their lease, the store, the latencies."""
    args = bench.args
    principals = Counter(r.principal for r in bench.researches)
    slots = f"{args.llm_slots}" if args.llm_slots else "the team default ([server] 32)"
    print(
        f"researches: {len(bench.researches)} ("
        + ", ".join(f"{p} {n}" for p, n in sorted(principals.items()))
        + "), "
        + ", ".join(f"{k}={v}" for k, v in OPTIONS.items())
    )
    print(
        f"workers: A (host {host_name('A')}, pid {bench.workers['A'].pid}) and B (host "
        f"{host_name('B')}, pid {bench.workers['B'].pid}), [server] stateless, behind a "
        "round-robin balancer (each request to the next worker; one that refuses the "
        f"connection is passed over); LLM calls in flight per worker: {slots}; "
        f"lease_seconds={args.lease:g} (renewed every {min(5.0, args.lease / 4):g} s), "
        "take_over_interval=5 s (default, jittered ±50%)"
    )
    print(f"store: {redact_url(url)}; foundry_mcp from {Path(foundry_mcp.__file__).parent}")
    restart = {
        "none": "no PostgreSQL restart",
        "kill": f"PostgreSQL stopped right after the kill, started again {args.pg_down:g} s later",
        "takeover": f"PostgreSQL stopped {args.pg_restart_delay:g} s after the first takeover, "
        f"started again {args.pg_down:g} s later",
    }[args.pg_restart if bench.postgres is not None else "none"]
    print(
        "latency: LLM 0.4 s + 5 ms per output token, search 0.3 s; status polled every "
        f"{POLL_SECONDS:g} s per research (no wait); kill: SIGKILL A once every research has "
        f"started and half of A's have a completed search; {restart}; seed {args.seed}"
    )
    clients = (
        "the SDK's (--sdk-clients)"
        if args.sdk_clients
        else "requests the SDK's client sends, sent directly (benchmarks/team/raw.py)"
    )
    print(
        f"load clients: one per research, in this process: {clients}; the status probe: the "
        "SDK's client in a process of its own"
    )


def report(bench: Bench) -> tuple[list[str], list[Acceptance]]:
    """Print every figure; the names of the checks that failed, and the acceptance items."""
    print()
    on = Counter(r.home or "?" for r in bench.researches)
    print(
        "started on (the worker that answered the start): "
        + ", ".join(f"{w} {n}" for w, n in sorted(on.items()))
    )
    failed = [] if bench.killed_at is not None else ["no kill"]
    if bench.killed_at is None:
        print("worker A was never killed: its researches never reached a completed search")
    wanted = bench.postgres is not None and bench.args.pg_restart != "none"
    if wanted and bench.restart.ready_at is None:
        failed.append("no PostgreSQL restart")
        print(f"PostgreSQL was not restarted {bench.restart.error}".strip())
    llm = attribute(bench, bench.llm, LLM_PATH)
    searches = attribute(bench, bench.search, SEARCH_PATH)
    failed += report_outcomes(bench)
    failed += report_takeovers(bench)
    ends = run_ends(bench)
    twice = report_twice(bench, llm + searches, ends)
    again = report_repeats(bench, searches, llm, ends)
    failed += twice + again
    failed += report_load(bench, llm, searches)
    return failed, acceptance(bench, failed, again)


@dataclass(frozen=True)
class Acceptance:
    """One acceptance item of issue 31 and whether this run met it."""

    item: str
    passed: bool
    figures: str


def acceptance(bench: Bench, failed: list[str], again: list[str]) -> list[Acceptance]:
    """The acceptance items, judged from the checks and figures of this run."""
    completed = sum(1 for r in bench.researches if r.final_status == "completed")
    calm = [c for c in bench.probe_calls if not bench.in_restart(c)]
    p99, p99_all = status_p99(calm), status_p99(bench.probe_calls)
    restarted = bench.restart.ready_at is not None
    chaos = bench.killed_at is not None and (restarted or bench.args.pg_restart == "none")
    return [
        Acceptance(
            "one worker SIGKILLed and PostgreSQL restarted mid-run",
            chaos and bench.postgres is not None,
            f"kill: {'yes' if bench.killed_at else 'no'}, PostgreSQL restart: "
            + ("yes" if restarted else "no"),
        ),
        Acceptance(
            "none lost",
            "lost" not in failed and "isolation" not in failed,
            f"{completed}/{len(bench.researches)} completed",
        ),
        Acceptance("none run twice at once", "run twice" not in failed, "see 'run twice'"),
        Acceptance(
            "no completed search repeated",
            "completed search repeated" not in again,
            "see 'completed searches repeated'",
        ),
        Acceptance(
            "no answered LLM call repeated",
            "answered LLM call repeated" not in again,
            "see 'LLM calls asked again'",
        ),
        Acceptance(
            "status p99 under load < 50 ms",
            p99 is not None and p99 < 50,
            f"p99 {fmt_ms(p99)} outside the PostgreSQL restart ({len(calm)} calls of the "
            f"status probe), {fmt_ms(p99_all)} with it ({len(bench.probe_calls)} calls)",
        ),
    ]


def fmt_ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} ms"


def report_outcomes(bench: Bench) -> list[str]:
    """Completed, lost (not completed, or not listed to its principal), listed to another."""
    researches = bench.researches
    lost = [
        r
        for r in researches
        if r.final_status != "completed" or r.research_id not in bench.listed.get(r.principal, ())
    ]
    elsewhere = [
        r.research_id
        for r in researches
        for other, ids in bench.listed.items()
        if other != r.principal and r.research_id in ids
    ]
    completed = sum(1 for r in researches if r.final_status == "completed")
    print(f"completed: {completed}/{len(researches)}; lost: {len(lost)}")
    for r in lost:
        listed = r.research_id in bench.listed.get(r.principal, ())
        print(
            f"  {r.research_id or '(never started)'} on {r.home} for {r.principal}: "
            f"{r.final_status}, {'listed' if listed else 'NOT listed'}; its client saw "
            f"{' > '.join(r.seen) or 'nothing'}; {'; '.join(r.errors[-2:])}"
            + (f"; its error: {r.final_error[:300]}" if r.final_error else "")
        )
    if elsewhere:
        print(f"  listed to another principal: {elsewhere}")
    for line in bench.list_errors:
        print(f"  {line}")
    return (["lost"] if lost else []) + (["isolation"] if elsewhere else [])


def report_takeovers(bench: Bench) -> list[str]:
    """A's researches taken over, when, and what their clients saw."""
    killed_at = bench.killed_at or 0.0
    mine = bench.of("A")
    active = {r.research_id for r in mine if r.snapshot and r.snapshot.status in ACTIVE}
    taken: dict[str, float] = {}
    for research in mine:
        for event in research.events:
            if event.kind == "taken_over":
                taken.setdefault(research.research_id, event.at - killed_at)
    print(
        f"taken over: {len(active & set(taken))} of A's {len(active)} researches active at the "
        "kill"
        + (
            f"; kill to first takeover {min(taken.values()):.1f} s, to last "
            f"{max(taken.values()):.1f} s"
            if taken
            else ""
        )
    )
    ends = [r.completed_at for r in bench.researches if r.completed_at]
    if bench.killed_at and ends:
        print(f"kill to the last completion: {max(ends) - killed_at:.1f} s")
    interrupted = sum(1 for r in bench.researches if "interrupted" in r.seen)
    failovers = [r.failover_at - killed_at for r in bench.researches if r.failover_at]
    print(
        f"clients that saw 'interrupted': {interrupted} (none resumed: the benchmark's clients "
        f"never do); clients whose call broke on A at the kill (a new session, the balancer "
        f"sends it to B): {len(failovers)}"
        + (f", the last {max(failovers):.2f} s after the kill" if failovers else "")
    )
    stuck = [r.research_id for r in bench.researches if r.final_status == "interrupted"]
    if stuck:
        print(f"  left interrupted (a client would have had to resume): {stuck}")
    return ["not taken over"] if not active <= set(taken) else []


def report_twice(bench: Bench, calls: list[ProviderCall], ends: RunEnds) -> list[str]:
    """Events and requests by a worker that did not hold the research; runs that crashed and
    were taken over; unattributed requests."""
    takeovers = twice_at_once(bench, calls, ends)
    violations = takeovers.violations
    print(f"run twice at once: {len(violations)}")
    for line in violations[:10]:
        print(f"  {line}")
    crashed = ends.crashed
    restart = bench.restart
    by_restart = [c for c in crashed if restart.stopped_at is not None and bench.restarting(c[2])]
    print(
        f"runs that crashed (an exception out of the run, worker log): {len(crashed)}, "
        f"{len(by_restart)} of them during the PostgreSQL restart; taken over from a live "
        f"worker that no longer ran them (once the lease ran out): {len(takeovers.after_crash)}"
    )
    for line in takeovers.after_crash[:3]:
        print(f"  {line}")
    cut = [c for c in calls if cut_by_kill(bench, c)]
    unattributed = [c for c in calls if (c.research is None or c.worker is None) and c not in cut]
    if cut:
        print(
            f"  requests of A cut short by the kill (body unreadable, not attributed): {len(cut)}"
        )
    if unattributed:
        print(f"  provider requests not attributed to a research and worker: {len(unattributed)}")
    for call in unattributed[:3]:
        system, user = prompts(call.request)
        text = query_of(call.request) or f"{ResearchBrain.identify(system)}: {user}"
        print(f"    {call.request.path} by {call.worker or '?'}: {text[:300]!r}")
    return (
        (["run twice"] if violations else [])
        + (["runs stopped by the restart"] if crashed or takeovers.after_crash else [])
        + (["unattributed requests"] if unattributed else [])
    )


def report_repeats(
    bench: Bench, searches: list[ProviderCall], llm: list[ProviderCall], ends: RunEnds
) -> list[str]:
    """Completed searches and answered LLM calls made again after the kill or a crash
    (``Repeats``)."""
    cuts, unjudged = cuts_of(bench, ends)
    again = repeats(bench, searches, llm, cuts)
    judged = ", ".join(f"{n} at the {why}" for why, n in sorted(again.cuts.items())) or "none"
    print(
        f"runs stopped unfinished and judged for repeats: {judged}"
        + (f"; {unjudged} crashed runs not judged (store read too late)" if unjudged else "")
    )
    print(
        f"completed searches repeated: {len(again.searches_completed)}; searches in flight "
        f"at the cut made again: {again.searches_in_flight}"
    )
    for line in again.searches_completed[:10]:
        print(f"  {line}")
    late = again.llm_unjournaled
    print(
        f"LLM calls asked again: {len(again.llm_journaled)} answered and journaled before the "
        f"cut (must be 0); {len(late)} answered but not journaled at the cut"
        + (f" (answers sent {min(late):.3f}-{max(late):.3f} s before it)" if late else "")
        + f"; {again.llm_in_flight} in flight at the cut"
    )
    print(
        f"  before the cuts: {again.llm_answered_before} LLM calls answered, "
        f"{again.llm_journaled_before} of them in the journal at the cut; replayed from the "
        f"journal after: {again.llm_replayed}"
    )
    for line in again.llm_journaled[:10]:
        print(f"  {line}")
    return (["completed search repeated"] if again.searches_completed else []) + (
        ["answered LLM call repeated"] if again.llm_journaled else []
    )


def print_latency(bench: Bench, calls: list[StatusCall], indent: str = "") -> None:
    """The latency lines of ``calls``: overall, outside and during the restart, before and
    after the kill, by worker."""
    killed_at = bench.killed_at
    print(indent + latency_line("overall", calls))
    calm = [c for c in calls if not bench.in_restart(c)]
    if bench.restart.stopped_at is not None:
        print(indent + latency_line("outside restart", calm))
        print(indent + latency_line("during restart", [c for c in calls if bench.in_restart(c)]))
    if killed_at:
        print(indent + latency_line("before kill", [c for c in calm if c.sent < killed_at]))
        print(indent + latency_line("after kill", [c for c in calm if c.sent >= killed_at]))
    for worker in bench.workers:
        print(indent + latency_line(f"on {worker}", [c for c in calm if c.worker == worker]))


def report_load(bench: Bench, llm: list[ProviderCall], searches: list[ProviderCall]) -> list[str]:
    """Status latency, start latency, client errors, wall time, CPU, provider requests."""
    print(
        "status latency under load (deep-research-status, no wait, through the balancer), "
        f"from a client process of its own (benchmarks/team/status_probe.py, a call every "
        f"{PROBE_INTERVAL * 1000:.0f} ms to the research in turn):"
    )
    print_latency(bench, bench.probe_calls)
    print(
        f"  as the benchmark's {len(bench.researches)} clients saw it (they share this process "
        "with the fake providers: its own queueing is in these figures):"
    )
    print_latency(bench, bench.calls, indent="  ")
    reads = time_status_reads(bench)
    if reads:
        print(
            "  one status read alone, after the run, in this process (Store.load_status: the "
            f"statement and decoding the state, what a worker does per status call): p50 "
            f"{percentile(reads, 0.5):.1f} ms, max {max(reads):.1f} ms, state "
            f"{bench.state_bytes // 1024} KB on average"
        )
    starts = [r.start_seconds * 1000 for r in bench.researches if r.start_seconds is not None]
    alone = [
        r.start_call_seconds * 1000 for r in bench.researches if r.start_call_seconds is not None
    ]
    if starts:
        print(
            f"  deep-research starts: the call p50 {percentile(alone, 0.5):.0f} ms, max "
            f"{max(alone):.0f} ms; with opening the session p50 {percentile(starts, 0.5):.0f} "
            f"ms, max {max(starts):.0f} ms"
        )
    errors = [f"{r.research_id}: {e}" for r in bench.researches for e in r.errors]
    during = Counter(e for r in bench.researches for e in r.restart_errors)
    print(
        f"client errors (not counting the calls broken by the kill): {len(errors)}; status "
        "errors during the PostgreSQL restart: "
        + (", ".join(f"{n} {code}" for code, n in during.most_common()) or "0")
    )
    for line in errors[:5]:
        print(f"  {line}")
    late = [x * 1000 for x in bench.lateness]
    if late:
        print(
            "  this process's event loop (the clients' own delay in the figures above): late "
            f"p50 {percentile(late, 0.5):.0f} ms, p99 {percentile(late, 0.99):.0f} ms, max "
            f"{max(late):.0f} ms"
        )
    print(f"wall time: {bench.ended - bench.began:.1f} s from the starts to the last end")
    print(bench.cpu.line())
    balancer = bench.balancer
    print(
        "balancer: requests sent "
        + ", ".join(f"{w} {n}" for w, n in sorted(balancer.sent.items()))
        + "; connections refused "
        + (", ".join(f"{w} {n}" for w, n in sorted(balancer.refused.items())) or "0")
    )
    for label, provider_calls in (("LLM", llm), ("search", searches)):
        by = Counter(c.worker or "?" for c in provider_calls)
        print(
            f"provider requests, {label}: {len(provider_calls)} ("
            + ", ".join(
                f"{w} {n}, at most "
                f"{peak_in_flight(c for c in provider_calls if c.worker == w)} at once"
                for w, n in sorted(by.items())
            )
            + ")"
        )
    return ["client errors"] if errors else []


def worker_logs(bench: Bench, folder: Path | None) -> None:
    """Count the workers' error lines (print the first few); keep the logs in ``folder``."""
    for worker in bench.workers.values():
        lines = worker.server.log
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"worker-{worker.name.lower()}.log").write_text("\n".join(lines) + "\n")
        levels: Counter[str] = Counter()
        errors = []
        for line in lines:
            try:
                level = str(json.loads(line).get("level"))
            except ValueError:
                level = "text"
            levels[level] += 1
            if level in ("ERROR", "CRITICAL"):
                errors.append(line)
        print(
            f"worker {worker.name} log: {len(lines)} lines ("
            + ", ".join(f"{n} {level}" for level, n in levels.most_common())
            + ")"
        )
        for line in errors[:5]:
            print(f"  {line[:400]}")


def verdict(bench: Bench, failed: list[str]) -> str:
    """One line: PASS or the checks that failed, with the main figures."""
    completed = sum(1 for r in bench.researches if r.final_status == "completed")
    taken = sum(1 for r in bench.researches if any(e.kind == "taken_over" for e in r.events))
    calm = [c for c in bench.probe_calls if not bench.in_restart(c)]
    clients = [c for c in bench.calls if not bench.in_restart(c)]
    figures = (
        f"{completed}/{len(bench.researches)} completed, {taken} taken over, status p99 "
        f"{fmt_ms(status_p99(calm))} (the probe; the benchmark's clients "
        f"{fmt_ms(status_p99(clients))}), outside the PostgreSQL restart"
    )
    return f"verdict: {'PASS' if not failed else 'FAIL (' + ', '.join(failed) + ')'}: {figures}"
