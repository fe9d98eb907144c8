"""Deep research end to end over stdio: where the time goes and which planted facts survive.

What runs. Each question of ``tests/fakes/longpages.py`` (eight comparisons of three or four
items, "Compare A, B, C and D for X") is researched by a fresh ``python -m foundry_mcp``
process, driven over stdio by ``tests/rawmcp.py`` as an editor would: initialize, wait until the
server is idle (its SDK warm-up done), ``deep-research``, then ``deep-research-status`` with
``wait=true`` until the research ends, then the whole report (the ``research://{id}/report``
resource). Research options: ``max_concurrent=4``, ``max_sub_queries=4``,
``max_sources_per_query=3``, ``max_iterations=2``, ``mode=auto`` (the fake planner decomposes
these questions, so they run hierarchical: one sub-question per item, each researched with up to
three searches). The LLM (OpenAI, Anthropic or Gemini fake) and Tavily are loopback fakes in
this process with simulated latency (``benchmarks/simulated.py``: LLM 0.4 s + 5 ms per output
token, search 0.3 s); page fetching is off, the search results carry the page text.

The corpus. Each item has three pages (``--pages``) of 2,500-6,000 words of varied prose about
the item and topic, with a fact sentence ``FACT-<item>-<n>`` at about 10%, 50% and 90% of each
page, the same navigation, cookie notice and newsletter footer on every page, and a few
paragraphs served word for word on two pages of two items. The fake analyst makes a finding of
every fact sentence it reads (``fact_analyst``), the fake summarizer keeps every fact sentence
it reads (``fact_summarizer``), the fake writer restates every finding it is given, and the fake
fact-checker passes a sentence found in the excerpts it is shown: so a fact is lost where
foundry-mcp leaves it out (passage selection, dropping, budgets, the excerpts verification
picks), not through a fake model's choice.

What is measured, per question, then per budget:

- wall time: from sending the ``deep-research`` call to the status answer that reports the end
  (the server polls its state every 100 ms, so up to ~0.1 s of the tail is detection delay);
  and the ``deep-research`` call's own answer latency.
- provider intervals: every request the fakes received, from its arrival
  (``RecordedRequest.timestamp``) to the moment its answer was written (``Exchange.sent``).
- overhead: wall time minus the union of those intervals (time with no provider request in
  flight), split into lead-in (call to first request), gaps, and tail (last answer to the end
  seen); its share of the wall time.
- concurrency: the time-weighted mean number of requests in flight over the time any was in
  flight, and the peak; the time with exactly one in flight, by agent (which step serialises).
- time to first provider request: from sending ``deep-research`` to the first request a fake
  received.
- LLM calls by agent (``ResearchBrain.identify``; ``summarizer`` for shortening calls),
  searches, prompt tokens (status ``tokens.input``, the fake's count of four characters a token).
- facts: of the planted facts the searches returned, those in any analyzer prompt, in the
  analyst's findings, in any writer prompt, in the writer's draft, and in the final report.

Budgets: ``full`` (defaults), and ``10``: the model's context window set to 10% of its default
(``model_context_overrides`` in the run's config file, the default window read from
``foundry_mcp.context.limits``) with ``allow_content_dropping = true`` so that a budget the
guardrail minimums cannot meet drops low-priority sources instead of failing the research.
(The top five sources of a round are never dropped nor cut below 40%: with a 200K-window model,
``--provider anthropic``, the 10% window cannot hold them and the research fails with
CONTEXT_EXCEEDED, which the printout shows.)

The end is a summary with the issue's acceptance lines and targets (figures, no assertions).
About 7 minutes on 2 cores for the default 16 researches (8 questions x 2 budgets): 17-21 s
each, plus about 6 s to start each server and let it finish importing the provider SDKs before
the clock starts. ``--questions 4`` halves it; ``--pages 4`` (or more) puts more pressure on the
10% budget at the cost of longer runs. Run from the repository root:

    python benchmarks/e2e.py [--budget full|10|both] [--questions 8] [--pages 3]
        [--provider openai|anthropic|gemini] [--mode auto|simple|hierarchical] [--seed 0]

To measure a snapshot of the code other than the working tree (e.g. a baseline), put its
``src`` first on ``PYTHONPATH``: the server subprocess inherits it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.simulated import (
    LLM_BASE_SECONDS,
    LLM_SECONDS_PER_TOKEN,
    SEARCH_SECONDS,
    search_delay,
)
from foundry_mcp.config import DEFAULT_MODELS
from foundry_mcp.context.limits import model_limits
from tests.fakes import (
    Exchange,
    FakeHTTPServer,
    FakeResponse,
    RecordedRequest,
    ResearchBrain,
    fake_anthropic,
    fake_gemini,
    fake_openai,
    fake_tavily,
)
from tests.fakes.longpages import (
    FACT_DEPTHS,
    QUESTIONS,
    SUMMARIZER_MARKER,
    LongPageCorpus,
    Question,
    fact_summarizer,
    facts_in,
)
from tests.fakes.planted import fact_analyst
from tests.rawmcp import RawServer, RawServerError

OPTIONS: dict[str, Any] = {
    "max_concurrent": 4,
    "max_sub_queries": 4,
    "max_sources_per_query": 3,
    "max_iterations": 2,
}
TERMINAL = {"completed", "failed", "cancelled", "timed_out", "interrupted"}
RESEARCH_DEADLINE = 600.0  # seconds one research may take before the benchmark gives up
LEAD_EVENTS = ("created", "run_started", "phase_started")  # the first of each is shown
STAGES = ("searched", "analysis prompts", "findings", "writer prompts", "draft", "report")
TARGETS = {"first_ms": 50.0, "overhead": 0.02, "concurrency": 3.0, "prompts": 0.95}
REPORT_TARGETS = {"full": 0.90, "10": 0.70}


# --------------------------------------------------------------------------- providers


@dataclass(frozen=True)
class Provider:
    """How to start one LLM fake and point foundry-mcp at it."""

    name: str
    start: Callable[[ResearchBrain], FakeHTTPServer]
    env: Callable[[FakeHTTPServer], dict[str, str]]


PROVIDERS = {
    "openai": Provider(
        "openai",
        fake_openai,
        lambda s: {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": s.base_url + "/v1"},
    ),
    "anthropic": Provider(
        "anthropic",
        fake_anthropic,
        lambda s: {"ANTHROPIC_API_KEY": "sk-ant-bench", "ANTHROPIC_BASE_URL": s.base_url},
    ),
    "gemini": Provider(
        "gemini",
        fake_gemini,
        lambda s: {"GEMINI_API_KEY": "gm-bench", "GOOGLE_GEMINI_BASE_URL": s.base_url},
    ),
}


def output_tokens(response: FakeResponse) -> int:
    """The answer's output tokens as any of the three fakes reports them."""
    body = response.json if isinstance(response.json, dict) else {}
    usage = body.get("usage") or body.get("usageMetadata") or {}
    for key in ("completion_tokens", "output_tokens", "candidatesTokenCount"):
        if usage.get(key):
            return int(usage[key])
    return 0


def llm_delay(request: RecordedRequest, response: FakeResponse) -> float:
    """``benchmarks/simulated.py``'s LLM latency, for the usage block of every provider."""
    return LLM_BASE_SECONDS + LLM_SECONDS_PER_TOKEN * output_tokens(response)


def context_window(provider: str) -> int:
    """The default context window of the provider's default model."""
    return int(model_limits(DEFAULT_MODELS[provider], provider).context_window)


def write_config(path: Path, provider: str, budget: str, reflection: bool = True) -> None:
    """The run's configuration file: the provider, no page fetching, the budget, and whether
    the supervisor's model judges each phase."""
    lines = ["[research]", f'default_provider = "{provider}"']
    if not reflection:
        lines.append("deep_research_enable_reflection = false")
    if budget == "10":
        window = max(1000, context_window(provider) // 10)
        lines += [
            f'model_context_overrides = {{ "{DEFAULT_MODELS[provider]}" = {window} }}',
            "allow_content_dropping = true",
        ]
    lines += ["", "[research.fetch]", "enabled = false", ""]
    for name in (provider, "tavily"):
        lines += [f"[providers.{name}]", "max_retries = 0", ""]
    path.write_text("\n".join(lines))


def environment(
    tmp: Path,
    provider: Provider,
    llm: FakeHTTPServer,
    search: FakeHTTPServer,
    budget: str,
    reflection: bool = True,
    code: Path | None = None,
) -> dict[str, str]:
    """The server's environment: a private home, store and config, the fakes' addresses, and
    the ``src`` directory of the code to run when it is not this checkout's."""
    config = tmp / "foundry-mcp.toml"
    write_config(config, provider.name, budget, reflection)
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return {
        **({"PYTHONPATH": str(code)} if code else {}),
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp / "research"),
        "FOUNDRY_MCP_NO_DOWNLOADS": "1",  # no tokenizer download: never leave the machine
        "TAVILY_API_KEY": "tvly-bench",
        "TAVILY_BASE_URL": search.base_url,
        **provider.env(llm),
    }


# --------------------------------------------------------------------------- the fake models


@dataclass
class Recorder:
    """The fake models of a run: a fact-keeping analyst and summarizer; their answers kept."""

    brain: ResearchBrain
    findings: list[str] = field(default_factory=list)  # the analyst's answers
    drafts: list[str] = field(default_factory=list)  # the writer's answers

    def __post_init__(self) -> None:
        analyst = fact_analyst(self.brain)

        def analyze(system: str, user: str) -> str:
            answer = analyst(system, user)
            self.findings.append(answer)
            return answer

        def write(system: str, user: str) -> str:
            draft = self.brain.write(user)
            self.drafts.append(draft)
            return draft

        self.brain.overrides.update(
            analyzer=analyze, writer=write, other=fact_summarizer(self.brain)
        )

    def prompts_of(self, agent: str) -> list[str]:
        """The user prompts the brain received from one agent."""
        return [user for who, _, user in self.brain.history if who == agent]


# --------------------------------------------------------------------------- timeline


def _flatten(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_flatten(v) for v in value)
    if isinstance(value, dict):
        return _flatten(value.get("text") or value.get("content") or value.get("parts") or "")
    return ""


def system_prompt(body: Any) -> str:
    """The system prompt of an OpenAI, Anthropic or Gemini request body."""
    if not isinstance(body, dict):
        return ""
    if "systemInstruction" in body:
        return _flatten(body["systemInstruction"])
    if "system" in body:
        return _flatten(body["system"])
    messages = body.get("messages") or []
    return "\n".join(
        _flatten(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    )


def label(exchange: Exchange) -> str:
    """``search``, ``summarizer`` or the agent that made an LLM request."""
    if exchange.request.path == "/search":
        return "search"
    system = system_prompt(exchange.request.json)
    if SUMMARIZER_MARKER in system.lower():
        return "summarizer"
    return ResearchBrain.identify(system)


@dataclass
class Timeline:
    """Provider requests in flight between the call (0) and the end seen (``wall``)."""

    wall: float
    busy: float = 0.0  # time with at least one request in flight
    weighted: float = 0.0  # integral of the number in flight
    peak: int = 0
    first: float | None = None  # first request received
    last: float = 0.0  # last answer sent
    alone: dict[str, float] = field(default_factory=dict)  # time with exactly one, by label
    idle: list[tuple[float, str, str]] = field(default_factory=list)  # (gap, ended, started)

    @property
    def overhead(self) -> float:
        return self.wall - self.busy

    @property
    def lead_in(self) -> float:
        return self.first if self.first is not None else self.wall

    @property
    def tail(self) -> float:
        return max(0.0, self.wall - self.last) if self.first is not None else 0.0

    @property
    def gaps(self) -> float:
        return max(0.0, self.overhead - self.lead_in - self.tail)

    @property
    def average(self) -> float:
        return self.weighted / self.busy if self.busy else 0.0


def timeline(exchanges: Iterable[Exchange], began: float, ended: float) -> Timeline:
    """Sweep the requests' in-flight intervals, clipped to ``[began, ended]``."""
    result = Timeline(wall=ended - began)
    spans = []
    for exchange in exchanges:
        start = max(exchange.request.timestamp, began) - began
        end = min(exchange.sent, ended) - began
        if end > start:
            spans.append((start, end, label(exchange)))
    if not spans:
        return result
    result.first = min(start for start, _, _ in spans)
    result.last = max(end for _, end, _ in spans)
    edges = sorted(
        [(start, 1, i) for i, (start, _, _) in enumerate(spans)]
        + [(end, -1, i) for i, (_, end, _) in enumerate(spans)]
    )
    active: set[int] = set()
    previous = 0.0
    last_ended = "start"
    for at, step, index in edges:
        if step > 0 and not active and at > previous:
            result.idle.append((at - previous, last_ended, spans[index][2]))
        if active:
            elapsed = at - previous
            result.busy += elapsed
            result.weighted += elapsed * len(active)
            if len(active) == 1:
                only = spans[next(iter(active))][2]
                result.alone[only] = result.alone.get(only, 0.0) + elapsed
        previous = at
        if step > 0:
            active.add(index)
            result.peak = max(result.peak, len(active))
        else:
            active.discard(index)
            last_ended = spans[index][2]
    return result


# --------------------------------------------------------------------------- one research


@dataclass
class Run:
    """What one research measured."""

    number: int
    question: Question
    budget: str
    status: str = "not run"
    error: str | None = None
    mode: str = "?"
    sub_questions: int = 0
    sub_queries: int = 0
    sources: int = 0
    findings: int = 0
    answered_in: float = 0.0  # the deep-research call's answer latency
    timeline: Timeline = field(default_factory=lambda: Timeline(wall=0.0))
    calls: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    tokens_by_agent: Counter[str] = field(default_factory=Counter)  # fake-tokenizer estimate
    facts: dict[str, set[str]] = field(default_factory=dict)  # stage -> facts that reached it
    depths: dict[str, float] = field(default_factory=dict)  # fact -> its depth in its page
    lead: dict[str, float] = field(default_factory=dict)  # event -> seconds after the call
    fidelity: dict[str, Any] = field(default_factory=dict)
    warnings: int = 0

    @property
    def searches(self) -> int:
        return self.calls["search"]

    @property
    def llm_calls(self) -> int:
        return sum(n for agent, n in self.calls.items() if agent != "search")


def wait_until_idle(pid: int, quiet: float = 0.3, limit: float = 20.0) -> None:
    """Wait until the server has used (almost) no CPU for ``quiet`` s: its warm-up is done."""
    process = psutil.Process(pid)

    def cpu() -> float:
        times = process.cpu_times()
        return float(times.user + times.system)

    began = quiet_since = time.monotonic()
    last = cpu()
    while time.monotonic() - began < limit:
        time.sleep(0.05)
        now = cpu()
        if now - last > 0.005:
            quiet_since = time.monotonic()
        last = now
        if time.monotonic() - quiet_since >= quiet:
            return


def wait_for_end(server: RawServer, research_id: str) -> dict[str, Any]:
    """Long-poll the status until the research ends (or the benchmark's deadline)."""
    deadline = time.monotonic() + RESEARCH_DEADLINE
    while True:
        envelope = server.call(
            {
                "action": "deep-research-status",
                "research_id": research_id,
                "wait": True,
                "wait_timeout": 30,
            },
            timeout=60,
        )
        if not envelope["success"]:
            raise RawServerError(f"status failed: {envelope['error']}")
        data: dict[str, Any] = envelope["data"]
        if data["status"] in TERMINAL or time.monotonic() > deadline:
            return data


def read_report(server: RawServer, research_id: str) -> str:
    """The whole report: the MCP resource, else every page of ``deep-research-report``."""
    try:
        result = server.request("resources/read", {"uri": f"research://{research_id}/report"})
        text = "".join(str(c.get("text") or "") for c in result.get("contents") or [])
        if text:
            return text
    except RawServerError:
        pass
    pages: list[str] = []
    offset: int | None = 0
    while offset is not None:
        envelope = server.call(
            {
                "action": "deep-research-report",
                "research_id": research_id,
                "offset": offset,
                "max_chars": 100000,
            }
        )
        if not envelope["success"]:
            break
        pages.append(envelope["data"]["report"])
        offset = envelope["data"]["next_offset"]
    return "".join(pages)


class Closer:
    """Closes finished servers in the background, so the next one starts meanwhile."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []

    def close_later(self, server: RawServer | None, tmp: str) -> None:
        def close() -> None:
            if server is not None:
                server.close()
            shutil.rmtree(tmp, ignore_errors=True)

        thread = threading.Thread(target=close, daemon=True)
        thread.start()
        self._threads.append(thread)

    def join(self) -> None:
        """Wait until every server handed over has exited."""
        for thread in self._threads:
            thread.join()
        self._threads.clear()


def research_once(
    number: int,
    question: Question,
    budget: str,
    args: argparse.Namespace,
    closer: Closer,
    code: Path | None = None,
) -> Run:
    """Research one question in a fresh server running ``code`` (default: this checkout's
    ``src``); measure it (see the module)."""
    run = Run(number, question, budget)
    corpus = corpus_of(question, args)
    run.depths = corpus.depths
    recorder = Recorder(ResearchBrain())
    provider = PROVIDERS[args.provider]
    tmp = tempfile.mkdtemp(prefix="e2e-")
    with provider.start(recorder.brain) as llm, fake_tavily(corpus) as search:
        llm.delay, search.delay = llm_delay, search_delay
        env = environment(Path(tmp), provider, llm, search, budget, not args.no_reflection, code)
        began = ended = time.time()
        report = ""
        server: RawServer | None = None
        try:
            server = RawServer(env, cwd=tmp)
            wait_until_idle(server.pid)
            closer.join()  # the previous server has exited: nothing else runs from here
            began, ended, report = drive(server, question, args.mode, run)
        except RawServerError as exc:
            run.status, run.error = "error", str(exc).splitlines()[0][:300]
        finally:
            closer.close_later(server, tmp)
        searches = search.requests_to("/search")
        exchanges = [*llm.exchanges, *search.exchanges]
        run.calls = Counter(label(e) for e in exchanges)
        for agent, system, user in recorder.brain.history:
            run.tokens_by_agent[agent] += ResearchBrain.estimate_tokens(system + user)
        run.facts = {
            "searched": corpus.served_facts(searches),
            "analysis prompts": facts_in("\n".join(recorder.prompts_of("analyzer"))),
            "findings": facts_in("\n".join(recorder.findings)),
            "writer prompts": facts_in("\n".join(recorder.prompts_of("writer"))),
            "draft": facts_in("\n".join(recorder.drafts)),
            "report": facts_in(report),
        }
        run.timeline = timeline(exchanges, began, ended)
    return run


def drive(server: RawServer, question: Question, mode: str, run: Run) -> tuple[float, float, str]:
    """Start the research, wait for its end, read its report; fill ``run`` from its status.

    Returns when the call was sent and when its end was seen (``time.time()``, the fakes'
    clock), and the report.
    """
    began = time.time()
    started = server.call(
        {"action": "deep-research", "query": question.text, "mode": mode, **OPTIONS}
    )
    run.answered_in = time.time() - began
    if not started["success"]:
        run.status, run.error = "refused", started["error"]
        return began, time.time(), ""
    research_id = started["data"]["research_id"]
    status = wait_for_end(server, research_id)
    ended = time.time()
    run.status, run.error, run.mode = status["status"], status.get("error"), status["mode"]
    tree = status.get("tree") or {}
    run.sub_questions = len(tree.get("sub_questions") or [])
    progress = status.get("progress") or {}
    run.sources, run.findings = progress.get("sources", 0), progress.get("findings", 0)
    run.sub_queries = progress.get("sub_queries_total", 0)
    run.prompt_tokens = int(status["usage"]["total"]["input_tokens"])
    run.fidelity = status.get("fidelity") or {}
    run.warnings = len(status.get("warnings") or [])
    run.lead = lead_in(server, research_id, began)
    return began, ended, read_report(server, research_id)


def lead_in(server: RawServer, research_id: str, began: float) -> dict[str, float]:
    """When the research's first events happened, in seconds after the call was sent."""
    envelope = server.call(
        {"action": "deep-research-events", "research_id": research_id, "limit": 50}
    )
    found: dict[str, float] = {}
    for event in envelope["data"]["events"] if envelope["success"] else []:
        if event["kind"] in LEAD_EVENTS and event["kind"] not in found:
            found[event["kind"]] = datetime.fromisoformat(event["at"]).timestamp() - began
    return found


# --------------------------------------------------------------------------- printing


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _alone(alone: dict[str, float], top: int = 4) -> str:
    ranked = sorted(alone.items(), key=lambda item: item[1], reverse=True)[:top]
    parts = [f"{agent} {seconds:.1f}" for agent, seconds in ranked]
    return ", ".join(parts) or "none"


def _shares(tokens: Counter[str]) -> str:
    total = sum(tokens.values()) or 1
    return ", ".join(f"{a} {n:,} ({n / total:.0%})" for a, n in tokens.most_common())


def funnel(facts: dict[str, set[str]]) -> str:
    """``searched 48 -> analysis prompts 48 (100%) -> ...``."""
    searched = facts.get("searched") or set()
    parts = [f"searched {len(searched)}"]
    for stage in STAGES[1:]:
        reached = len(facts.get(stage, set()) & searched)
        share = f" ({reached / len(searched):.0%})" if searched else ""
        parts.append(f"{stage} {reached}{share}")
    return " -> ".join(parts)


def by_depth(facts: set[str], depths: dict[str, float]) -> str:
    """``10%: 2, 50%: 5, 90%: 7`` (where in their pages the facts were planted)."""
    counts = Counter(depths.get(tag) for tag in facts)
    return ", ".join(f"{depth:.0%}: {counts[depth]}" for depth in sorted(set(depths.values())))


def show_run(run: Run) -> None:
    t = run.timeline
    print(f"-- [{run.budget}] Q{run.number} {run.question.text}")
    if run.error:
        print(f"   {run.status.upper()}: {run.error}")
    parts = f"{run.sub_questions} sub-questions" if run.sub_questions else ""
    parts += f"{run.sub_queries} sub-queries" if run.sub_queries and not parts else ""
    print(
        f"   {run.status} in {t.wall:.2f} s ({run.mode}, {parts or 'no sub-queries'}, "
        f"{run.sources} sources, {run.findings} findings); deep-research answered in "
        f"{run.answered_in * 1000:.1f} ms"
    )
    first = f"{t.first * 1000:.1f}" if t.first is not None else "none"
    print(
        f"   first provider request {first} ms after the call; overhead {t.overhead:.2f} s = "
        f"{t.overhead / t.wall if t.wall else 0:.1%} (lead-in {t.lead_in:.3f}, gaps "
        f"{t.gaps:.2f}, tail {t.tail:.2f})"
    )
    if run.lead:
        steps = [f"{kind} +{seconds * 1000:.1f}" for kind, seconds in run.lead.items()]
        print(f"   lead-in (ms after the call): {', '.join(steps)}, first request +{first}")
    if t.idle:
        worst = sorted(t.idle, reverse=True)[:3]
        gaps = ", ".join(f"{gap * 1000:.0f} ms {a} -> {b}" for gap, a, b in worst)
        print(f"   largest gaps with nothing in flight: {gaps}")
    print(
        f"   concurrency avg {t.average:.2f}, peak {t.peak}; exactly one in flight "
        f"{sum(t.alone.values()):.1f} s ({_alone(t.alone)})"
    )
    agents = ", ".join(f"{a} {n}" for a, n in run.calls.most_common() if a != "search")
    print(
        f"   {run.llm_calls} LLM calls ({agents}), {run.searches} searches; prompt tokens "
        f"{run.prompt_tokens:,}"
    )
    print(f"   prompt tokens by agent: {_shares(run.tokens_by_agent)}")
    print(f"   facts: {funnel(run.facts)}")
    lost = run.facts.get("searched", set()) - run.facts.get("report", set())
    if lost:
        print(f"   lost facts by depth in their page: {by_depth(lost, run.depths)}")
    fidelity = run.fidelity
    if fidelity.get("score") is not None:
        print(
            f"   fidelity {fidelity['score']:.2f} ({fidelity.get('band')}): "
            f"{fidelity.get('items_degraded', 0)} of {fidelity.get('items_total', 0)} items "
            f"shortened, {fidelity.get('items_summarized', 0)} summarized, "
            f"{fidelity.get('items_dropped', 0)} dropped; {run.warnings} warning(s)"
        )


@dataclass
class Totals:
    """The runs of one budget, pooled."""

    runs: Sequence[Run]

    @property
    def wall(self) -> float:
        return sum(r.timeline.wall for r in self.runs)

    def overhead_share(self) -> float:
        return sum(r.timeline.overhead for r in self.runs) / self.wall if self.wall else 0.0

    def concurrency(self, runs: Sequence[Run] | None = None) -> float:
        runs = self.runs if runs is None else runs
        busy = sum(r.timeline.busy for r in runs)
        return sum(r.timeline.weighted for r in runs) / busy if busy else 0.0

    def firsts_ms(self) -> list[float]:
        return [r.timeline.first * 1000 for r in self.runs if r.timeline.first is not None]

    def recall(self, stage: str) -> float | None:
        searched = sum(len(r.facts.get("searched", set())) for r in self.runs)
        reached = sum(
            len(r.facts.get(stage, set()) & r.facts.get("searched", set())) for r in self.runs
        )
        return reached / searched if searched else None

    def pooled_facts(self) -> dict[str, int]:
        return {
            stage: sum(len(r.facts.get(stage, set()) & r.facts["searched"]) for r in self.runs)
            for stage in STAGES
        }


def show_totals(budget: str, totals: Totals) -> None:
    runs = totals.runs
    print(f"== totals, budget {budget} ({len(runs)} researches)")
    ok = sum(1 for r in runs if r.status == "completed")
    print(f"completed                 {ok} of {len(runs)}")
    print(f"wall time                 {totals.wall:.1f} s, mean {totals.wall / len(runs):.1f} s")
    lead = sum(r.timeline.lead_in for r in runs)
    gaps = sum(r.timeline.gaps for r in runs)
    tail = sum(r.timeline.tail for r in runs)
    print(
        f"overhead share            {totals.overhead_share():.1%} (lead-in {lead:.2f} s, gaps "
        f"{gaps:.2f} s, tail {tail:.2f} s)"
    )
    alone: dict[str, float] = {}
    for run in runs:
        for agent, seconds in run.timeline.alone.items():
            alone[agent] = alone.get(agent, 0.0) + seconds
    print(
        f"provider concurrency      avg {totals.concurrency():.2f}, peak "
        f"{max(r.timeline.peak for r in runs)}; exactly one in flight "
        f"{sum(alone.values()):.1f} s ({_alone(alone, 6)})"
    )
    firsts = totals.firsts_ms()
    if firsts:
        print(
            f"first provider request    median {statistics.median(firsts):.1f} ms, max "
            f"{max(firsts):.1f} ms"
        )
    answered = [r.answered_in * 1000 for r in runs]
    print(
        f"deep-research answered    median {statistics.median(answered):.1f} ms, max "
        f"{max(answered):.1f} ms"
    )
    calls: Counter[str] = Counter()
    for run in runs:
        calls.update(run.calls)
    agents = ", ".join(f"{a} {n}" for a, n in calls.most_common() if a != "search")
    print(f"LLM calls                 {sum(r.llm_calls for r in runs)} ({agents})")
    print(f"searches                  {sum(r.searches for r in runs)}")
    tokens = [r.prompt_tokens for r in runs]
    print(f"prompt tokens             mean {statistics.mean(tokens):,.0f} per research")
    pooled: Counter[str] = sum((r.tokens_by_agent for r in runs), Counter())
    print(f"  by agent (estimated)    {_shares(pooled)}")
    leads = {
        kind: statistics.median(r.lead[kind] for r in runs if kind in r.lead) * 1000
        for kind in LEAD_EVENTS
        if any(kind in r.lead for r in runs)
    }
    if leads:
        print(
            "lead-in (median ms)       "
            + ", ".join(f"{kind} +{ms:.1f}" for kind, ms in leads.items())
        )
    pooled = totals.pooled_facts()
    searched = pooled["searched"]
    print(
        "facts                     "
        + " -> ".join(
            f"{stage} {n}" + (f" ({n / searched:.0%})" if searched and stage != "searched" else "")
            for stage, n in pooled.items()
        )
    )
    lost: Counter[float | None] = Counter()
    for run in runs:
        missing = run.facts.get("searched", set()) - run.facts.get("report", set())
        lost.update(run.depths.get(tag) for tag in missing)
    print(
        "facts lost, by depth      "
        + ", ".join(f"{depth:.0%}: {lost[depth]}" for depth in FACT_DEPTHS)
    )


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else "OK" if ok else "BELOW TARGET"


def show_acceptance(by_budget: dict[str, Totals]) -> None:
    print("== acceptance (the issue's targets; figures only)")
    for budget, totals in by_budget.items():
        firsts = totals.firsts_ms()
        first = statistics.median(firsts) if firsts else None
        four = [r for r in totals.runs if len(r.question.items) == 4]
        concurrency = totals.concurrency(four) if four else None
        prompts, report = totals.recall("analysis prompts"), totals.recall("report")
        tokens = statistics.mean(r.prompt_tokens for r in totals.runs)
        rows = [
            (
                "time to first provider request (median)",
                "n/a" if first is None else f"{first:.1f} ms",
                f"< {TARGETS['first_ms']:.0f} ms",
                None if first is None else first < TARGETS["first_ms"],
            ),
            (
                "orchestration overhead share",
                f"{totals.overhead_share():.1%}",
                f"< {TARGETS['overhead']:.0%}",
                totals.overhead_share() < TARGETS["overhead"],
            ),
            (
                f"avg concurrency, 4-item questions ({len(four)})",
                "n/a" if concurrency is None else f"{concurrency:.2f}",
                f">= {TARGETS['concurrency']:.0f}",
                None if concurrency is None else concurrency >= TARGETS["concurrency"],
            ),
            (
                "searched facts in an analysis prompt",
                _percent(prompts),
                f">= {TARGETS['prompts']:.0%}",
                None if prompts is None else prompts >= TARGETS["prompts"],
            ),
            (
                "searched facts in the report",
                _percent(report),
                f">= {REPORT_TARGETS[budget]:.0%}",
                None if report is None else report >= REPORT_TARGETS[budget],
            ),
            ("prompt tokens per research (mean)", f"{tokens:,.0f}", "lower is better", None),
        ]
        print(f"budget {budget}:")
        for name, value, target, ok in rows:
            mark = "" if target == "lower is better" else verdict(ok)
            print(f"  {name:<42} {value:>10}   target {target:<16} {mark}")


def show_setup(args: argparse.Namespace, questions: Sequence[Question], budgets: list[str]) -> None:
    model = DEFAULT_MODELS[args.provider]
    window = context_window(args.provider)
    corpora = [corpus_of(question, args) for question in questions]
    words = [page["words"] for corpus in corpora for page in corpus.all_pages()]
    shares = [page["on_topic_share"] for corpus in corpora for page in corpus.all_pages()]
    pages = len(corpora[0].pages[questions[0].items[0]])
    facts = sum(len(corpus.facts) for corpus in corpora)
    print(
        f"provider {args.provider}:{model} (default window {window:,} tokens), Tavily; "
        f"mode {args.mode}; {', '.join(f'{k}={v}' for k, v in OPTIONS.items())}; supervisor "
        f"judgement {'off' if args.no_reflection else 'on'}"
    )
    print(
        f"latency: LLM {LLM_BASE_SECONDS} s + {LLM_SECONDS_PER_TOKEN * 1000:.0f} ms per output "
        f"token, search {SEARCH_SECONDS} s (benchmarks/simulated.py)"
    )
    print(
        f"corpus: {len(questions)} questions, {pages} pages per item of "
        f"{min(words):,}-{max(words):,} words, {min(shares):.0%}-{max(shares):.0%} of each "
        f"on the question's topic (mean {statistics.mean(shares):.0%}; the rest on other uses "
        f"of the item), {facts} facts at ~10/50/90% depth in on-topic sections; boilerplate on "
        "every page, syndicated paragraphs on two pages each"
    )
    if args.compare:
        print(f"compared with the code in {args.compare} (budget full, same corpus and fakes)")
    for budget in budgets:
        if budget == "10":
            print(
                f"budget 10: model_context_overrides {model} = {max(1000, window // 10):,} "
                "tokens (10% of the default), allow_content_dropping = true"
            )
        else:
            print("budget full: the default window, allow_content_dropping = false (default)")


def corpus_of(question: Question, args: argparse.Namespace) -> LongPageCorpus:
    return LongPageCorpus(
        question, pages_per_item=args.pages, seed=args.seed, on_topic_share=args.on_topic
    )


def show_comparison(current: Totals, other: Totals, code: Path) -> None:
    """Prompt tokens and recall of this checkout against ``code`` on the same questions."""
    print(f"== this checkout against {code} (budget full)")
    ours = statistics.mean(r.prompt_tokens for r in current.runs)
    theirs = statistics.mean(r.prompt_tokens for r in other.runs)
    for name, totals, mean in (("this checkout", current, ours), (str(code), other, theirs)):
        print(
            f"  {name:<42} prompt tokens {mean:>9,.0f} a research; searched facts in the "
            f"analysis prompts {_percent(totals.recall('analysis prompts'))}, in the report "
            f"{_percent(totals.recall('report'))}; "
            f"{sum(r.status == 'completed' for r in totals.runs)} of {len(totals.runs)} completed"
        )
    print(f"  prompt tokens, this checkout / compared   {ours / theirs:.2f}   target <= 0.50")


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", choices=("full", "10", "both"), default="both")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--provider", choices=sorted(PROVIDERS), default="openai")
    parser.add_argument("--mode", choices=("auto", "simple", "hierarchical"), default="auto")
    parser.add_argument("--pages", type=int, default=3, help="pages per item (facts: 3 each)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the corpus")
    parser.add_argument(
        "--on-topic",
        type=float,
        default=None,
        metavar="SHARE",
        help="share of every page on the question's topic (default: 20-50%% drawn per page; "
        "1.0: pages about nothing else)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="SRC",
        help="also run the full budget with the foundry-mcp package in SRC (e.g. the src of a "
        "baseline worktree) and print both prompt-token and recall figures",
    )
    parser.add_argument(
        "--no-reflection",
        action="store_true",
        help="without the supervisor's model judgement of each phase (its cost: compare)",
    )
    args = parser.parse_args()
    questions = QUESTIONS[: max(1, min(args.questions, len(QUESTIONS)))]
    budgets = ["full", "10"] if args.budget == "both" else [args.budget]
    show_setup(args, questions, budgets)
    by_budget: dict[str, Totals] = {}
    closer = Closer()
    for budget in budgets:
        runs = []
        for number, question in enumerate(questions, start=1):
            run = research_once(number, question, budget, args, closer)
            show_run(run)
            runs.append(run)
        by_budget[budget] = Totals(runs)
    compared = None
    if args.compare:
        compared = Totals(
            [
                research_once(number, question, "full", args, closer, args.compare.resolve())
                for number, question in enumerate(questions, start=1)
            ]
        )
    closer.join()
    for budget, totals in by_budget.items():
        show_totals(budget, totals)
    show_acceptance(by_budget)
    if compared is not None and "full" in by_budget:
        show_comparison(by_budget["full"], compared, args.compare)


if __name__ == "__main__":
    main()
