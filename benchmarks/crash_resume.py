"""Crash and resume: SIGKILL a server at a random moment, resume in a new one, count the damage.

Each trial starts a research in a fresh research_dir through a real ``python -m foundry_mcp``
process (stdio), kills it with SIGKILL at a random moment of the expected run time, starts a
new server on the same directory and, as its very first call, resumes the research (a research
that had already finished reads ``completed``), then waits for the end. Every other trial leaves
the killed server unreaped (a zombie that keeps its pid, as it stays while an editor has not yet
waited for it) until the resumed research has finished. It prints:

- trials completed, and resumes refused (a resume that had to wait for anything is a failure);
- LLM calls made again: requests after the resume whose content (model, messages, parameters)
  equals a request made before the kill, split into calls in flight at the kill (the fake had
  not answered ``ANSWERED_MARGIN`` s before it: these may be made again) and calls answered
  before it (these must be replayed from the journal, never bought again);
- repeated work: searches (and source analyses) saved before the kill that ran again after the
  resume. "Saved before the kill" means the fake received the request at least latency + 0.5 s
  before the kill, or before a status read that showed the research already past that phase;
- store errors: INTERNAL_ERROR envelopes, status reads that fail, servers that fail to start;
- the median and max time from resume to completion.

With ``--mode hierarchical`` the research is a three-part comparison in hierarchical mode (at
most two sub-question researchers at once, so a kill often finds some sub-questions answered
and others being researched). The kill moments are spread evenly over the expected run time
(one random moment in each of ``--trials`` equal slices), and what the store held at the kill
is read from it directly before the new server starts: the research's phase, its sub-questions'
statuses, and each researcher's saved state (``load_branches``). After the resume it counts:

- completed sub-questions redone: a sub-question ``completed`` at the kill for which the
  resumed run made a search or a researcher's model call (planner, analyst, answerer, refiner);
- searches repeated: the queries of the researchers' sub-queries saved ``completed`` at the
  kill, searched again;
- source analyses repeated: sources a researcher had saved as analysed, sent to that
  researcher's analyst again;
- store errors, as above; and the spread of the kill moments over the phases.

Then it times ``deep-research-list`` (50 a page) over 5,000 stored researches, straight from
the store and through MCP. Run from the repository root (``--mode both`` runs both kinds of
trials, about 8 minutes; each mode alone takes under 5):

    python benchmarks/crash_resume.py [--mode simple|hierarchical|both] [--trials N] [--seed 7]
        [--list-size 5000] [--skip-list]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes import FakeHTTPServer, RecordedRequest, ResearchBrain, fake_openai, fake_tavily
from tests.fakes.brain import SOURCE_BLOCK_RE
from tests.rawmcp import RawServer, RawServerError

QUERY = "How do heat pumps perform in cold climates?"
LIMITS = {"max_iterations": 2, "max_sub_queries": 3, "max_sources_per_query": 3}
# Three items: three sub-questions, at most two researched at once.
HIERARCHICAL_QUERY = "Compare Redis, Memcached and Hazelcast for session caching"
HIERARCHICAL_LIMITS = {**LIMITS, "max_concurrent": 2}
DEFAULT_TRIALS = {"simple": 20, "hierarchical": 20}
ACTIVE = {"queued", "running", "cancelling"}
TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted"}
AFTER_GATHERING = {"analysis", "synthesis", "refinement"}
AFTER_ANALYSIS = {"synthesis", "refinement"}
SAVE_MARGIN = 0.5
# An LLM answer the fake sent at least this long before the kill was received and journaled.
ANSWERED_MARGIN = 0.05
LLM_PATH = "/v1/chat/completions"
RESEARCHER_AGENTS = {"planner", "analyzer", "answerer", "refiner"}
# The line of a researcher's prompt that names its question.
QUESTION_LINE_RE = re.compile(
    r"^\s*(?:Research question|Sub-question):\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE
)


@dataclass
class SavedWork:
    """What the store held when the server was killed (hierarchical trials)."""

    phase: str
    questions: list[str]  # every sub-question
    completed: list[str]  # the sub-questions answered
    researching: int
    searches: set[str]  # queries of the researchers' completed sub-queries
    analysed: dict[str, set[str]]  # sub-question -> the source ids its researcher analysed

    def moment(self) -> str:
        """Where the research was, e.g. ``gathering (1/3 answered, 2 researching)``."""
        if not self.questions:
            return self.phase
        return (
            f"{self.phase} ({len(self.completed)}/{len(self.questions)} answered, "
            f"{self.researching} researching)"
        )


@dataclass
class Trial:
    number: int
    llm_latency: float
    search_latency: float
    kill_after: float
    mode: str = "simple"
    reap: bool = True  # False: the killed server stays a zombie until the resume has finished
    outcome: str = "not run"  # completed, or what went wrong
    status_after_kill: str | None = None
    phase_after_kill: str | None = None
    searches_saved: int = 0  # searches that count as saved before the kill
    analyses_saved: int = 0  # source analyses that count as saved before the kill
    duplicate_searches: int = 0
    duplicate_analyses: int = 0
    store_errors: list[str] = field(default_factory=list)
    resume_seconds: float | None = None
    llm_calls_before: int = 0  # distinct LLM requests made before the kill
    llm_repeated_in_flight: int = 0  # made again; the kill came before their answer
    llm_repeated_answered: int = 0  # made again although answered before the kill
    # Hierarchical trials only.
    saved: SavedWork | None = None
    sub_questions_redone: list[str] = field(default_factory=list)
    redone_calls: Counter[str] = field(default_factory=Counter)  # agent or "search" -> calls


class StoreError(Exception):
    """A failure the benchmark counts as a store error."""


class Session:
    """A RawServer whose every envelope is checked for INTERNAL_ERROR."""

    def __init__(self, env: dict[str, str], trial: Trial) -> None:
        self.trial = trial
        try:
            self.server = RawServer(env)
        except RawServerError as exc:
            trial.store_errors.append(f"server failed to start: {exc}")
            raise StoreError("server failed to start") from None

    def call(self, arguments: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        envelope = self.server.call(arguments, timeout)
        if not envelope["success"] and envelope["data"].get("error_code") == "INTERNAL_ERROR":
            self.trial.store_errors.append(f"INTERNAL_ERROR on {arguments['action']}")
        return envelope

    def status(self, research_id: str, **extra: Any) -> dict[str, Any]:
        timeout = float(extra.get("wait_timeout", 0)) + 20
        try:
            envelope = self.call(
                {"action": "deep-research-status", "research_id": research_id, **extra}, timeout
            )
        except RawServerError as exc:
            self.trial.store_errors.append(f"status read failed: {exc}")
            raise StoreError("status read failed") from None
        if not envelope["success"]:
            self.trial.store_errors.append(f"status read failed: {envelope['error']}")
            raise StoreError("status read failed")
        return dict(envelope["data"])

    def kill(self, *, reap: bool = True) -> None:
        self.server.kill(reap=reap)

    def reap(self) -> None:
        self.server.reap()

    def close(self) -> None:
        self.server.close()


def environment(tmp: Path, llm: FakeHTTPServer, search: FakeHTTPServer) -> dict[str, str]:
    config = tmp / "foundry-mcp.toml"
    config.write_text("[providers.openai]\nmax_retries = 0\n")
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp / "research"),
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": llm.base_url + "/v1",
        "TAVILY_API_KEY": "tvly-bench",
        "TAVILY_BASE_URL": search.base_url,
    }


def prompts(request: RecordedRequest) -> tuple[str, str]:
    """The (system, user) text of a chat completion request."""
    messages = (request.json or {}).get("messages") or []
    system = "\n".join(str(m.get("content")) for m in messages if m.get("role") == "system")
    user = "\n".join(str(m.get("content")) for m in messages if m.get("role") == "user")
    return system, user


def analysed(requests: Iterable[RecordedRequest]) -> list[str]:
    """Source ids sent to the analyzer, once per analysis request that carried them."""
    ids: list[str] = []
    for request in requests:
        system, user = prompts(request)
        if ResearchBrain.identify(system) == "analyzer":
            ids.extend(dict.fromkeys(SOURCE_BLOCK_RE.findall(user)))
    return ids


def saved_before(
    requests: list[RecordedRequest], latency: float, killed_at: float, seen_past: float | None
) -> list[RecordedRequest]:
    horizon = killed_at - (latency + SAVE_MARGIN)
    if seen_past is not None:
        horizon = max(horizon, seen_past)
    return [r for r in requests if r.timestamp <= horizon]


@dataclass
class Killed:
    """A research whose server was SIGKILLed, and the status reads made before."""

    research_id: str
    killed_at: float  # time.time()
    seen: list[tuple[float, str]]  # (sent at, phase) of each status read
    session: Session  # the killed server, reaped at the end of the trial


def start_and_kill(trial: Trial, env: dict[str, str], arguments: dict[str, Any]) -> Killed | None:
    """Start a research, watch its status until the trial's moment, SIGKILL the server.

    Unless the trial reaps at once, the killed server is left a zombie: the caller reaps it.
    """
    first = Session(env, trial)
    killed_at = time.time()
    try:
        started = first.call({"action": "deep-research", **arguments})
        if not started["success"]:
            trial.outcome = f"start failed: {started['error']}"
            return None
        research_id = started["data"]["research_id"]
        kill_at = time.monotonic() + trial.kill_after
        seen: list[tuple[float, str]] = []
        while (remaining := kill_at - time.monotonic()) > 0.15:
            sent = time.time()
            data = first.status(research_id, wait=True, wait_timeout=min(0.5, remaining - 0.1))
            seen.append((sent, data["phase"]))
            if data["status"] not in ACTIVE:
                break
        time.sleep(max(0.0, kill_at - time.monotonic()))
        killed_at = time.time()
    finally:
        try:
            first.kill(reap=trial.reap)
        except Exception:
            first.kill()
            raise
    return Killed(research_id, killed_at, seen, first)


def resume_to_end(trial: Trial, env: dict[str, str], research_id: str) -> float | None:
    """In a new server: resume at once, wait for the end; when the resume began.

    The resume is the new server's first call. If it is refused, the status says why: a
    research that had finished before the kill is fine, anything else fails the trial.
    """
    second = Session(env, trial)
    try:
        resumed_at = time.time()
        began = time.monotonic()
        resumed = second.call({"action": "deep-research-resume", "research_id": research_id})
        data = second.status(research_id)
        if resumed["success"]:
            phase = resumed["data"].get("phase", data["phase"])
            trial.status_after_kill, trial.phase_after_kill = "interrupted", phase
        else:
            trial.status_after_kill, trial.phase_after_kill = data["status"], data["phase"]
            if data["status"] != "completed":
                trial.outcome = f"resume refused: {resumed['error']}"
                return None
        if resumed["success"]:
            while data["status"] not in TERMINAL:
                if time.monotonic() > began + 120:
                    trial.outcome = "resume did not finish within 120 s"
                    return None
                data = second.status(research_id, wait=True, wait_timeout=2)
            trial.resume_seconds = time.monotonic() - began
        report = second.call({"action": "deep-research-report", "research_id": research_id})
        if data["status"] != "completed":
            trial.outcome = f"ended {data['status']}: {data.get('error')}"
        elif not report["success"]:
            trial.outcome = f"report unreadable: {report['error']}"
        else:
            trial.outcome = "completed"
        return resumed_at
    finally:
        second.close()


def run_trial(trial: Trial) -> None:
    brain = ResearchBrain()
    with (
        fake_openai(brain) as llm,
        fake_tavily() as search,
        tempfile.TemporaryDirectory(prefix="crash-resume-") as tmp,
    ):
        llm.latency, search.latency = trial.llm_latency, trial.search_latency
        env = environment(Path(tmp), llm, search)

        # 1. Start, watch the status until the chosen moment, SIGKILL.
        if trial.mode == "hierarchical":
            arguments = {"query": HIERARCHICAL_QUERY, "mode": "hierarchical", **HIERARCHICAL_LIMITS}
        else:
            arguments = {"query": QUERY, **LIMITS}
        killed = start_and_kill(trial, env, arguments)
        if killed is None:
            return
        try:
            if trial.mode == "hierarchical":
                trial.saved = saved_work(Path(tmp) / "research", killed.research_id)

            # 2. A new server on the same store: resume at once, wait for the end.
            resumed_at = resume_to_end(trial, env, killed.research_id)
        finally:
            killed.session.reap()  # the killed server's parent finally waits for it
        if resumed_at is None:
            return
        count_llm_repeats(trial, llm, killed.killed_at, resumed_at)
        if trial.saved is not None:
            count_redone(trial, trial.saved, search, llm, resumed_at)
        else:
            count_repeated(trial, killed, search, llm, resumed_at)


def content_key(request: RecordedRequest) -> str:
    """What makes two LLM requests the same call: model, messages and every parameter."""
    return json.dumps(request.json or {}, sort_keys=True)


def count_llm_repeats(
    trial: Trial, llm: FakeHTTPServer, killed_at: float, resumed_at: float
) -> None:
    """LLM requests after the resume whose content equals one made before the kill."""
    requests = llm.requests_to(LLM_PATH)
    # The latest time each content key was asked before the kill: if any of its asks was
    # answered before the kill, its answer was in hand.
    first_answer: dict[str, float] = {}
    asked: set[str] = set()
    for request in requests:
        if request.timestamp >= killed_at:
            continue
        key = content_key(request)
        asked.add(key)
        answered = request.timestamp + trial.llm_latency
        first_answer[key] = min(first_answer.get(key, answered), answered)
    trial.llm_calls_before = len(asked)
    repeated: set[str] = set()
    for request in requests:
        key = content_key(request)
        if request.timestamp < resumed_at or key not in asked or key in repeated:
            continue
        repeated.add(key)
        if first_answer[key] <= killed_at - ANSWERED_MARGIN:
            trial.llm_repeated_answered += 1
        else:
            trial.llm_repeated_in_flight += 1


def count_repeated(
    trial: Trial, killed: Killed, search: FakeHTTPServer, llm: FakeHTTPServer, resumed_at: float
) -> None:
    """Simple trials: searches and analyses saved before the kill (timing rule) made again."""
    past_gathering = next((t for t, phase in killed.seen if phase in AFTER_GATHERING), None)
    past_analysis = next((t for t, phase in killed.seen if phase in AFTER_ANALYSIS), None)
    searches_before = saved_before(
        search.requests_to("/search"), trial.search_latency, killed.killed_at, past_gathering
    )
    analyses_before = saved_before(
        llm.requests_to(LLM_PATH), trial.llm_latency, killed.killed_at, past_analysis
    )
    searches_after = [r for r in search.requests_to("/search") if r.timestamp >= resumed_at]
    done = {str((r.json or {}).get("query")) for r in searches_before}
    trial.searches_saved = len(done)
    trial.duplicate_searches = sum(
        1 for r in searches_after if str((r.json or {}).get("query")) in done
    )
    llm_after = [r for r in llm.requests_to(LLM_PATH) if r.timestamp >= resumed_at]
    done_ids = set(analysed(analyses_before))
    trial.analyses_saved = len(done_ids)
    trial.duplicate_analyses = sum(1 for sid in analysed(llm_after) if sid in done_ids)


def saved_work(research_dir: Path, research_id: str) -> SavedWork:
    """What the store holds for a research (read while no server runs)."""
    from foundry_mcp.research.models import BranchStatus, SubQueryStatus
    from foundry_mcp.research.store.sqlite.store import ResearchStore

    store = ResearchStore(research_dir)
    try:
        state = store.load(research_id)
        branches = store.load_branches(research_id)
    finally:
        store.close()
    questions = {sq.id: sq.question for sq in state.sub_questions}
    searches: set[str] = set()
    analysed_ids: dict[str, set[str]] = {}
    for branch_id, branch in branches.items():
        searches.update(q.query for q in branch.sub_queries if q.status is SubQueryStatus.COMPLETED)
        question = questions.get(branch_id, branch.query)
        analysed_ids[question] = {s.id for s in branch.sources if s.analyzed}
    return SavedWork(
        phase=state.phase.value,
        questions=list(questions.values()),
        completed=[
            sq.question for sq in state.sub_questions if sq.status is BranchStatus.COMPLETED
        ],
        researching=sum(1 for sq in state.sub_questions if sq.status is BranchStatus.RESEARCHING),
        searches=searches,
        analysed=analysed_ids,
    )


def sub_question_of(text: str, questions: list[str]) -> str | None:
    """The sub-question a search or a researcher's prompt is about (None: the whole research)."""
    named = QUESTION_LINE_RE.search(text)
    if named:
        return next((q for q in questions if _key(q) == _key(named.group(1))), None)
    return next((q for q in questions if _key(q) in _key(text)), None)


def _key(text: str) -> str:
    return " ".join(text.lower().strip(" ?.!").split())


def count_redone(
    trial: Trial,
    saved: SavedWork,
    search: FakeHTTPServer,
    llm: FakeHTTPServer,
    resumed_at: float,
) -> None:
    """Hierarchical trials: work the store held at the kill that the resumed run did again."""
    redone: set[str] = set()
    trial.searches_saved = len(saved.searches)
    for request in search.requests_to("/search"):
        if request.timestamp < resumed_at:
            continue
        query = str((request.json or {}).get("query"))
        if query in saved.searches:
            trial.duplicate_searches += 1
        question = sub_question_of(query, saved.questions)
        if question in saved.completed:
            redone.add(question)
            trial.redone_calls["search"] += 1
    trial.analyses_saved = sum(len(ids) for ids in saved.analysed.values())
    for request in llm.requests_to(LLM_PATH):
        if request.timestamp < resumed_at:
            continue
        system, user = prompts(request)
        agent = ResearchBrain.identify(system)
        if agent not in RESEARCHER_AGENTS:
            continue
        question = sub_question_of(user, saved.questions)
        if question is None:
            continue
        if question in saved.completed:
            redone.add(question)
            trial.redone_calls[agent] += 1
        if agent == "analyzer":
            before = saved.analysed.get(question, set())
            trial.duplicate_analyses += sum(
                1 for sid in dict.fromkeys(SOURCE_BLOCK_RE.findall(user)) if sid in before
            )
    trial.sub_questions_redone = sorted(redone)


def crash_trials(args: argparse.Namespace, mode: str, trials: list[Trial]) -> None:
    """Run the trials, appending each to ``trials`` as it starts (so a failure keeps them)."""
    rng = random.Random(args.seed)
    count = args.trials or DEFAULT_TRIALS[mode]
    for number in range(1, count + 1):
        llm_latency = round(rng.uniform(0.05, 0.2), 3)
        search_latency = round(rng.uniform(0.05, 0.2), 3)
        if mode == "hierarchical":
            # Start-up (provider SDK imports, ~1.3 s, while planning), the decomposition, two
            # waves of researchers (plan, search, analyse, answer), the meta-synthesis and its
            # checks: measured at about 1.8 s + 16 LLM latencies + 2 search latencies. One random
            # moment in each of ``count`` equal slices of that, so the kills cover every phase.
            expected = 1.8 + 16 * llm_latency + 2 * search_latency
            slice_ = expected / count
            kill_after = round(rng.uniform((number - 1) * slice_, number * slice_), 3)
            kill_after = max(0.05, kill_after)
        else:
            # About 8 LLM calls and 2 rounds of searches, plus the server's start-up (provider
            # SDK imports, ~1 s) and bookkeeping; one random moment in each of ``count`` equal
            # slices of that, so the kills cover every phase (a few land after the end).
            expected = 8 * llm_latency + 2 * search_latency + 1.5
            slice_ = expected / count
            kill_after = round(rng.uniform((number - 1) * slice_, number * slice_), 3)
            kill_after = max(0.05, kill_after)
        # Every other killed server stays a zombie while the new one resumes its research.
        trial = Trial(
            number, llm_latency, search_latency, kill_after, mode=mode, reap=number % 2 == 1
        )
        trials.append(trial)
        try:
            run_trial(trial)
        except StoreError as exc:
            trial.outcome = str(exc)
        except Exception as exc:
            trial.outcome = f"crashed: {type(exc).__name__}: {exc}"
            traceback.print_exc(file=sys.stderr)
        saved = f"; saved: {trial.saved.moment()}" if trial.saved else ""
        print(
            f"trial {number:2d}: kill after {trial.kill_after:5.2f} s "
            f"(llm {llm_latency:.2f} s, search {search_latency:.2f} s"
            f"{'' if trial.reap else ', unreaped'}) -> "
            f"{trial.status_after_kill or '-'} in {trial.phase_after_kill or '-'}{saved}; "
            f"{trial.outcome}"
            + (f"; resumed in {trial.resume_seconds:.2f} s" if trial.resume_seconds else "")
            + (
                f"; LLM calls made again: {trial.llm_repeated_in_flight} in flight, "
                f"{trial.llm_repeated_answered} answered"
                if trial.llm_repeated_in_flight or trial.llm_repeated_answered
                else ""
            ),
            flush=True,
        )


def report_trials(trials: list[Trial], wanted: int) -> None:
    completed = sum(1 for t in trials if t.outcome == "completed")
    errors = [e for t in trials for e in t.store_errors]
    resumes = [t.resume_seconds for t in trials if t.resume_seconds is not None]
    kinds = Counter(t.status_after_kill or "unknown" for t in trials)
    print()
    print(f"trials completed:          {completed}/{wanted}")
    refused = sum(1 for t in trials if t.outcome.startswith("resume refused"))
    unreaped = sum(1 for t in trials if not t.reap)
    print(f"status after the kill:     {dict(kinds)}")
    phases = Counter(
        "after the end" if t.status_after_kill == "completed" else t.phase_after_kill or "unknown"
        for t in trials
    )
    print(f"phase at the kill:         {dict(phases)}")
    print(f"killed servers unreaped:   {unreaped} (a zombie while the resume ran)")
    print(f"resumes refused:           {refused}")
    print(
        f"LLM calls made again:      {sum(t.llm_repeated_answered for t in trials)} answered "
        f"before the kill, {sum(t.llm_repeated_in_flight for t in trials)} in flight at it "
        f"(of {sum(t.llm_calls_before for t in trials)} distinct calls made before a kill)"
    )
    saved = [t.saved for t in trials if t.saved is not None]
    if saved:
        report_hierarchical(trials, saved)
    print(
        f"duplicate search calls:    {sum(t.duplicate_searches for t in trials)} "
        f"(of {sum(t.searches_saved for t in trials)} searches saved before a kill)"
    )
    print(
        f"duplicate source analyses: {sum(t.duplicate_analyses for t in trials)} "
        f"(of {sum(t.analyses_saved for t in trials)} analyses saved before a kill)"
    )
    print(f"store errors:              {len(errors)}")
    for error in errors[:10]:
        print(f"  - {error.splitlines()[0][:200]}")
    for trial in trials:
        if trial.outcome != "completed":
            print(f"  trial {trial.number}: {trial.outcome.splitlines()[0][:200]}")
    if resumes:
        print(
            f"resume to completion:      median {statistics.median(resumes):.2f} s, "
            f"max {max(resumes):.2f} s ({len(resumes)} resumes)"
        )
    else:
        print("resume to completion:      no resumes")


def report_hierarchical(trials: list[Trial], saved: list[SavedWork]) -> None:
    """The kill moments' spread and the completed sub-questions redone."""
    moments: Counter[str] = Counter()
    for work, trial in zip(saved, (t for t in trials if t.saved is not None), strict=True):
        if trial.status_after_kill == "completed":
            moments["after the end"] += 1
        elif work.phase == "gathering" and work.researching:
            moments["gathering, researchers running"] += 1
        else:
            moments[work.phase] += 1
    print(f"kill moments (saved phase): {dict(moments)}")
    answered = sum(len(work.completed) for work in saved)
    redone = [t for t in trials if t.sub_questions_redone]
    calls: Counter[str] = Counter()
    for trial in redone:
        calls.update(trial.redone_calls)
    print(
        f"completed sub-questions redone: "
        f"{sum(len(t.sub_questions_redone) for t in trials)} "
        f"(of {answered} answered before a kill)"
        + (f"; calls made again: {dict(calls)}" if calls else "")
    )
    for trial in redone:
        print(f"  trial {trial.number}: {', '.join(trial.sub_questions_redone)}")


# ---------------------------------------------------------------------- listing


def fill_store(research_dir: Path, count: int) -> None:
    from foundry_mcp.research.models import Phase, ResearchState, Status
    from foundry_mcp.research.store.sqlite.store import ResearchStore

    store = ResearchStore(research_dir)
    base = datetime.now(UTC) - timedelta(days=30)
    try:
        for n in range(count):
            state = ResearchState(
                query=f"Stored research number {n}: how does topic {n % 97} behave?",
                llm_provider="openai",
                llm_model="m",
                status=Status.FAILED if n % 10 == 0 else Status.COMPLETED,
                phase=Phase.SYNTHESIS,
                report=f"# Report {n}\n\nA short report.\n",
                created_at=base + timedelta(seconds=n),
            )
            store.save(state)
    finally:
        store.close()


def time_listing(args: argparse.Namespace) -> None:
    from foundry_mcp.research.store.sqlite.store import ResearchStore

    pages = args.list_pages
    with tempfile.TemporaryDirectory(prefix="crash-resume-list-") as tmp:
        research_dir = Path(tmp) / "research"
        began = time.perf_counter()
        fill_store(research_dir, args.list_size)
        print()
        print(f"stored {args.list_size} researches in {time.perf_counter() - began:.1f} s")

        store = ResearchStore(research_dir)
        try:
            for completed_only in (False, True):
                timings, cursor, listed = [], None, 0
                for _ in range(pages):
                    began = time.perf_counter()
                    items, cursor = store.list_page(50, cursor, completed_only)
                    timings.append((time.perf_counter() - began) * 1000)
                    listed += len(items)
                    if cursor is None:
                        break
                label = "store.list_page(50)" + (", completed_only" if completed_only else "")
                print(
                    f"{label + ':':40s} median {statistics.median(timings):6.2f} ms/page, "
                    f"max {max(timings):6.2f} ms ({len(timings)} pages, {listed} items)"
                )
        finally:
            store.close()

        with (
            fake_openai() as llm,
            fake_tavily() as search,
        ):
            env = environment(Path(tmp), llm, search)
            env["FOUNDRY_MCP_RESEARCH_DIR"] = str(research_dir)
            with RawServer(env) as server:
                timings, cursor, errors = [], None, 0
                for _ in range(pages):
                    arguments: dict[str, Any] = {"action": "deep-research-list", "limit": 50}
                    if cursor:
                        arguments["cursor"] = cursor
                    began = time.perf_counter()
                    envelope = server.call(arguments)
                    timings.append((time.perf_counter() - began) * 1000)
                    if not envelope["success"]:
                        errors += 1
                        print(f"  list failed: {envelope['error']}")
                        break
                    cursor = envelope["data"]["next_cursor"]
                    if cursor is None:
                        break
        median = statistics.median(timings)
        verdict = "ok" if median < 100 else "over the 100 ms target"
        print(
            f"{'MCP deep-research-list (limit 50):':40s} median {median:6.2f} ms/page, "
            f"max {max(timings):6.2f} ms ({len(timings)} pages, {errors} errors) - {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mode",
        choices=("simple", "hierarchical", "both"),
        default="simple",
        help="the research mode of the trials (both: the simple trials, then the hierarchical)",
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=None,
        help="trials per mode (default: 20)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--list-size", type=int, default=5000)
    parser.add_argument("--list-pages", type=int, default=10)
    parser.add_argument("--skip-list", action="store_true", help="only run the crash trials")
    args = parser.parse_args()

    modes = ["simple", "hierarchical"] if args.mode == "both" else [args.mode]
    for index, mode in enumerate(modes):
        if mode != "simple" or len(modes) > 1:
            query = HIERARCHICAL_QUERY if mode == "hierarchical" else QUERY
            print(("\n" if index else "") + f"== {mode} mode: {query}", flush=True)
        trials: list[Trial] = []
        try:
            crash_trials(args, mode, trials)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            report_trials(trials, args.trials or DEFAULT_TRIALS[mode])
            return
        report_trials(trials, args.trials or DEFAULT_TRIALS[mode])
    if not args.skip_list:
        try:
            time_listing(args)
        except Exception:
            print("listing benchmark failed:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)


if __name__ == "__main__":
    main()
