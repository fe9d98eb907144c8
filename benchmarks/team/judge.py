"""Reading back and judging a run of ``benchmarks/team/load.py``: each research's final status
and events from the store, the fakes' requests and answers attributed to a worker and a
research, who held each research when, what ran twice at once (``twice_at_once``), and the
work done again after a run stopped unfinished (``Cut``, ``Repeats``).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from benchmarks.crash_resume import content_key, prompts
from benchmarks.team.shared import (
    LLM_PATH,
    Answer,
    Bench,
    Event,
    ProviderCall,
    Research,
    llm_key,
    search_key,
)
from tests.fakes import FakeHTTPServer, RecordedRequest, ResearchBrain
from tests.fakes.http import FakeResponse

KILL_CUT_SECONDS = 1.0  # a request of A's the fake finished reading this close to the kill


# ----------------------------------------------------------------------------- reading back


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def read_back(bench: Bench) -> None:
    """Each research's final status and events, from the store."""
    for research in bench.researches:
        if not research.research_id:
            continue
        state = bench.store.load(research.research_id)
        research.final_status = state.status.value
        research.final_error = f"{state.error_code or ''} {state.error or ''}".strip()
        research.completed_at = state.completed_at.timestamp() if state.completed_at else None
        after = 0
        while page := bench.store.events(research.research_id, after, 500):
            research.events += [Event(parse_time(e.at), e.kind, e.data) for e in page]
            after = page[-1].seq


def attribute(bench: Bench, server: FakeHTTPServer, path: str) -> list[ProviderCall]:
    """The requests to ``path``, each with its worker (by key) and research (by question)."""
    keys = {f"Bearer {llm_key(n)}": n for n in bench.workers}
    keys |= {f"Bearer {search_key(n)}": n for n in bench.workers}
    by_length = sorted(bench.researches, key=lambda r: -len(r.question))
    answered = {id(exchange.request): exchange.sent for exchange in list(server.exchanges)}
    calls = []
    for request in server.requests_to(path):
        text = " ".join(prompts(request)) if path == LLM_PATH else query_of(request)
        research = next((r for r in by_length if r.question in text), None)
        worker = keys.get(request.headers.get("authorization", ""))
        calls.append(
            ProviderCall(
                request,
                worker,
                research,
                answered.get(id(request)),
                bench.answers.get(id(request)),
            )
        )
    return calls


def record_answers(llm: FakeHTTPServer) -> dict[int, Answer]:
    """Keep each answer of the fake LLM (text and token counts), by id() of its request (the
    fake keeps its requests: the ids stay theirs)."""
    answers: dict[int, Answer] = {}
    answer = llm._answer

    def recorded(request: RecordedRequest) -> FakeResponse:
        response = answer(request)
        try:
            body = response.json
            usage = body["usage"]
            answers[id(request)] = Answer(
                str(body["choices"][0]["message"]["content"]),
                int(usage["prompt_tokens"]),
                int(usage["completion_tokens"]),
            )
        except (TypeError, KeyError, IndexError, ValueError):
            pass  # an error answer
        return response

    llm._answer = recorded  # type: ignore[method-assign]
    return answers


def query_of(request: RecordedRequest) -> str:
    return str((request.json or {}).get("query") or "")


def holder(bench: Bench, research: Research, at: float) -> str:
    """The worker entitled to act for ``research`` at ``at``: the one that started it until a
    takeover, then the worker the latest ``taken_over`` event before ``at`` names."""
    current = research.home
    for event in research.events:
        if event.kind == "taken_over" and event.at <= at:
            current = bench.by_pid(event)
    return current


RUN_END = re.compile(r"^research (deepres-[0-9a-f]+) (ended|crashed|is now owned)")


@dataclass
class RunEnds:
    """When each worker's runs ended, from its log: (worker, research id) -> times; and the
    runs that crashed (an exception out of the run: ``jobs.py`` logs "research R crashed")."""

    at: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    crashed: list[tuple[str, str, float]] = field(default_factory=list)


def run_ends(bench: Bench) -> RunEnds:
    found = RunEnds()
    for name, worker in bench.workers.items():
        for line in worker.server.log:
            try:
                entry = json.loads(line)
                matched = RUN_END.match(str(entry.get("message", "")))
                at = parse_time(str(entry["time"]))
            except (ValueError, KeyError, AttributeError):
                continue
            if matched:
                found.at.setdefault((name, matched[1]), []).append(at)
                if matched[2] == "crashed":
                    found.crashed.append((name, matched[1], at))
    return found


@dataclass
class Takeovers:
    """Runs by a worker that did not hold the research (``violations``: must be none), and the
    takeovers of a research whose previous run, on a live worker, had ended first (it crashed):
    resumed, not run twice."""

    violations: list[str] = field(default_factory=list)
    after_crash: list[str] = field(default_factory=list)


def ran_between(
    research: Research,
    worker: str,
    since: float,
    until: float,
    bench: Bench,
    calls: list[ProviderCall],
) -> bool:
    """Whether ``worker`` ran ``research`` between the two times: a ``run_started`` event of
    its pid, or a provider request with its key."""
    started = any(
        e.kind == "run_started" and since <= e.at <= until and bench.by_pid(e) == worker
        for e in research.events
    )
    return started or any(
        c.research is research and c.worker == worker and since <= c.at <= until for c in calls
    )


def twice_at_once(bench: Bench, calls: list[ProviderCall], ends: RunEnds) -> Takeovers:
    """Every takeover from a live worker whose run had not ended, every takeover by the killed
    worker, every ``run_started`` event or provider request by a worker that did not hold the
    research then."""
    killed_at = bench.killed_at or math.inf
    found = Takeovers()
    for research in bench.researches:
        rid = research.research_id
        previous, since = research.home, 0.0
        for event in research.events:
            if event.kind == "run_started":
                by = bench.by_pid(event)
                if by != holder(bench, research, event.at):
                    found.violations.append(f"{rid}: run started by {by} while another held it")
            if event.kind != "taken_over":
                continue
            by = bench.by_pid(event)
            when = f"{event.at - killed_at:+.2f} s from the kill"
            if by == "A":
                found.violations.append(f"{rid}: taken over by A, {when}")
            alive = previous == "B" or event.at < killed_at
            ran = ran_between(research, previous, since, event.at, bench, calls)
            ended = any(since <= t <= event.at for t in ends.at.get((previous, rid), []))
            if alive and ran and not ended:
                found.violations.append(
                    f"{rid}: taken over by {by} from {previous} (alive, its run not ended), {when}"
                )
            elif alive:
                how = "its run had crashed" if ran else "it had claimed it but never ran it"
                found.after_crash.append(f"{rid}: {previous} to {by}, {when}: {how}")
            previous, since = by, event.at
    for call in calls:
        if call.research is None or call.worker is None:
            continue
        if call.worker != holder(bench, call.research, call.at):
            found.violations.append(
                f"{call.research.research_id}: {call.request.path} by {call.worker} "
                f"{call.at - killed_at:+.2f} s from the kill, while "
                f"{holder(bench, call.research, call.at)} held it"
            )
    return found


@dataclass
class Repeats:
    """Work done again after a run stopped unfinished (a ``Cut``: A's runs at the kill, runs
    that crashed on the restart of PostgreSQL).

    A search after the cut repeats a completed one when its query was a completed sub-query in
    the store at the cut (must be none). An LLM request after the cut is "again" when its
    content (model, messages, parameters) equals a request of the same research made before
    the cut; it is then counted by what had become of that earlier request at the cut:

    - ``llm_journaled``: answered, and its answer in the research's journal at the cut (the
      worker had recorded it, and goes on only once it has: ``_Journal.put`` is awaited before
      the answer is used). Asked again, it was paid twice: must be 0.
    - ``llm_unjournaled``: the fake had sent its answer before the cut, but the journal did not
      hold it: the worker had not recorded it, so had not used it (still reading or parsing it,
      its journal write queued behind others on the worker's writer thread, or refused by the
      store during the restart). Asked again by design.
    - ``llm_in_flight``: not answered at the cut. Asked again by design.
    """

    searches_completed: list[str] = field(default_factory=list)  # must stay empty
    searches_in_flight: int = 0
    llm_journaled: list[str] = field(default_factory=list)  # must stay empty
    llm_unjournaled: list[float] = field(default_factory=list)  # seconds from answer to kill
    llm_in_flight: int = 0
    llm_answered_before: int = 0  # A's research's calls answered before the kill
    llm_journaled_before: int = 0  # of which the journal held the answer at the kill
    llm_replayed: int = 0  # journal answers the takeover runs replayed (llm_replayed events)
    cuts: dict[str, int] = field(default_factory=dict)  # runs judged, by why they stopped
    unjudged: int = 0  # crashed runs the store was not read for in time


@dataclass(frozen=True)
class Cut:
    """A run of a research that stopped unfinished: A's at the kill, or one that crashed on
    the restart of PostgreSQL; what the store held of the research then (its completed
    sub-queries and its journal's answers)."""

    research: Research
    at: float
    why: str  # "kill" or "crash"
    completed: frozenset[str]
    journal: frozenset[Answer]


def cuts_of(bench: Bench, ends: RunEnds) -> tuple[list[Cut], int]:
    """The kill's cut of each of A's researches, and a cut for each run that crashed during the
    restart (judged by the store read after it, ``Restart.held``, if that read came before the
    research was taken over again); and how many crashes could not be judged so."""
    found: list[Cut] = []
    if bench.killed_at is not None:
        for research in bench.of("A"):
            completed = research.snapshot.completed if research.snapshot else set()
            journal = bench.journaled.get(research.research_id, set())
            found.append(
                Cut(research, bench.killed_at, "kill", frozenset(completed), frozenset(journal))
            )
    by_id = {r.research_id: r for r in bench.researches}
    restart, unjudged = bench.restart, 0
    for _, research_id, at in ends.crashed:
        crashed = by_id.get(research_id)
        held = restart.held.get(research_id)
        later = [e.at for e in (crashed.events if crashed else []) if e.kind == "taken_over"]
        taken = min((t for t in later if t > at), default=math.inf)
        if crashed is None or held is None or not at < restart.held_at < taken:
            unjudged += 1
            continue
        found.append(Cut(crashed, at, "crash", frozenset(held[0]), frozenset(held[1])))
    return found, unjudged


def repeats(
    bench: Bench, searches: list[ProviderCall], llm: list[ProviderCall], cuts: list[Cut]
) -> Repeats:
    """Searches and LLM calls made again after a cut, by what the store or the fake had of
    them at the cut; each request is judged by the latest cut of its research before it."""
    found = Repeats()
    by_research: dict[int, list[Cut]] = {}
    for cut in sorted(cuts, key=lambda c: c.at):
        by_research.setdefault(id(cut.research), []).append(cut)
    for research_cuts in by_research.values():
        for n, cut in enumerate(research_cuts):
            until = research_cuts[n + 1].at if n + 1 < len(research_cuts) else math.inf
            judge_cut(found, cut, until, searches, llm)
    return found


def judge_cut(
    found: Repeats, cut: Cut, until: float, searches: list[ProviderCall], llm: list[ProviderCall]
) -> None:
    """Count in ``found`` the requests of ``cut``'s research in [cut, until) that repeat one
    made before the cut."""
    research, at = cut.research, cut.at
    rid = research.research_id
    mine = [c for c in searches if c.research is research]
    before = {query_of(c.request) for c in mine if c.at < at}
    for call in (c for c in mine if at <= c.at < until):
        query = query_of(call.request)
        if query in cut.completed:
            found.searches_completed.append(f"{rid}: {query!r} (after the {cut.why})")
        elif query in before:
            found.searches_in_flight += 1
    asked = [c for c in llm if c.research is research]
    answered = [c for c in asked if c.answered is not None and c.answered < at]
    found.llm_answered_before += len(answered)
    found.llm_journaled_before += sum(1 for c in answered if c.answer in cut.journal)
    journaled = {content_key(c.request) for c in answered if c.answer in cut.journal}
    unjournaled = {
        content_key(c.request): at - (c.answered or at)
        for c in answered
        if c.answer not in cut.journal
    }
    earlier = {content_key(c.request) for c in asked if c.at < at}
    for call in (c for c in asked if at <= c.at < until):
        key = content_key(call.request)
        if key in journaled:
            system, _ = prompts(call.request)
            agent = ResearchBrain.identify(system)
            found.llm_journaled.append(f"{rid}: a {agent} call (after the {cut.why})")
        elif key in unjournaled:
            found.llm_unjournaled.append(unjournaled[key])
        elif key in earlier:
            found.llm_in_flight += 1
    found.llm_replayed += sum(
        1 for e in research.events if e.kind == "llm_replayed" and at <= e.at < until
    )
    found.cuts[cut.why] = found.cuts.get(cut.why, 0) + 1


def peak_in_flight(calls: Iterable[ProviderCall]) -> int:
    """The most requests that were at the fake at once (received, not yet answered)."""
    moments = []
    for call in calls:
        moments.append((call.at, 1))
        moments.append((call.answered if call.answered is not None else math.inf, -1))
    peak = running = 0
    for _, step in sorted(moments):  # an answer sent as another arrives counts first
        running += step
        peak = max(peak, running)
    return peak


def cut_by_kill(bench: Bench, call: ProviderCall) -> bool:
    """A request whose body A was still sending when it was killed: the fake read it short
    (its JSON does not parse), at the kill."""
    killed_at = bench.killed_at
    return (
        killed_at is not None
        and call.worker == "A"
        and call.request.json is None
        and abs(call.at - killed_at) < KILL_CUT_SECONDS
    )


def time_status_reads(bench: Bench) -> list[float]:
    """The milliseconds of one ``load_status`` of each research, on an idle machine; sets
    ``bench.state_bytes`` to the average size of the stored states."""
    timings, sizes = [], []
    for research in bench.researches:
        if not research.research_id:
            continue
        began = time.perf_counter()
        read = bench.store.load_status(research.research_id)
        timings.append((time.perf_counter() - began) * 1000)
        sizes.append(len(read.state.model_dump_json()))
    bench.state_bytes = sum(sizes) // max(1, len(sizes))
    return timings
