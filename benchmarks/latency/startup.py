"""Warm start: ``initialize``, the ``deep-research`` answer, and the first provider request.

For each LLM provider (OpenAI, Anthropic, Gemini, each a loopback fake, searches on a fake
Tavily) and each moment a research is started (``--delays`` seconds after ``initialize`` was
answered, as an assistant does once the editor started the server, and at once), every run
starts a fresh ``python -m foundry_mcp`` over stdio, as an editor does, and times:

- ``initialize``: from starting the process to the answer of ``initialize``;
- warm-up: until when, after ``initialize``, the server kept a CPU busy (its start-up work:
  importing the research code and the provider's SDK, building the clients), sampled every
  10 ms until the research is started;
- ``deep-research``: from sending the call to its answer (the research id);
- first request: from sending ``deep-research`` to the moment the provider's fake received the
  research's first LLM request (the planner's), on the fake's clock (the same machine's).

A figure with a target says PASS when every run met it (its worst run is under the target),
FAIL otherwise. The acceptance targets are those of a research started on a settled server
(the ``--delays`` moments): the answer within 20 ms, the first request within 50 ms; they are
summed up per provider at the end. A research started at once waits for the research service
to open (the research code is still being imported): those figures are shown for comparison,
without a verdict.

Nothing leaves the machine: the fakes listen on 127.0.0.1, and ``FOUNDRY_MCP_NO_DOWNLOADS=1``
keeps tiktoken from fetching its encoding (token counts fall back to the estimate). Run from the
repository root:

    python benchmarks/latency/startup.py [--runs 5] [--delays 2] [--providers openai,anthropic,gemini]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes import FakeHTTPServer, fake_anthropic, fake_gemini, fake_openai, fake_tavily
from tests.rawmcp import RawServer

TARGET_INITIALIZE = 0.5
TARGET_ANSWER = 0.020
TARGET_FIRST_REQUEST = 0.050
FIRST_REQUEST_TIMEOUT = 20.0
SAMPLE_SECONDS = 0.01
BUSY_SHARE = 0.5  # a sample counts as busy when the server used the CPU half of it or more
QUERY = "How do heat pumps perform in cold climates?"
LLM_PATHS = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "gemini": ":generateContent",
}
FAKES: dict[str, Callable[[], FakeHTTPServer]] = {
    "openai": fake_openai,
    "anthropic": fake_anthropic,
    "gemini": fake_gemini,
}


@dataclass
class Figures:
    """The timings of one provider and start moment, one entry per run (seconds)."""

    initialize: list[float] = field(default_factory=list)
    busy: list[float] = field(default_factory=list)
    answer: list[float] = field(default_factory=list)
    first_request: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def environment(tmp: Path, provider: str, llm: FakeHTTPServer, search: FakeHTTPServer) -> dict:
    """The server's environment: the provider and Tavily on their fakes, a private store."""
    config = tmp / "foundry-mcp.toml"
    config.write_text(
        "[research.fetch]\nenabled = false\n\n"
        f"[providers.{provider}]\nmax_retries = 0\n\n[providers.tavily]\nmax_retries = 0\n"
    )
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp / "research"),
        "FOUNDRY_MCP_DEFAULT_PROVIDER": provider,
        "FOUNDRY_MCP_NO_DOWNLOADS": "1",
        "TAVILY_API_KEY": "tvly-bench",
        "TAVILY_BASE_URL": search.base_url,
    }
    if provider == "openai":
        env |= {"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": llm.base_url + "/v1"}
    elif provider == "anthropic":
        env |= {"ANTHROPIC_API_KEY": "sk-ant-bench", "ANTHROPIC_BASE_URL": llm.base_url}
    else:
        env |= {"GEMINI_API_KEY": "gm-bench", "GOOGLE_GEMINI_BASE_URL": llm.base_url}
    return env


def first_llm_request(llm: FakeHTTPServer, provider: str, after: float) -> float | None:
    """When the fake received its first LLM request sent after ``after`` (its clock)."""
    deadline = time.monotonic() + FIRST_REQUEST_TIMEOUT
    while time.monotonic() < deadline:
        stamps = [
            request.timestamp
            for request in list(llm.requests)
            if request.path.endswith(LLM_PATHS[provider]) and request.timestamp >= after
        ]
        if stamps:
            return min(stamps)
        time.sleep(0.002)
    return None


def busy_until(pid: int, seconds: float) -> float:
    """For ``seconds``: the last moment the process ``pid`` kept a CPU busy (0 if never)."""
    process = psutil.Process(pid)
    began = time.perf_counter()
    last_busy = 0.0
    used = sum(process.cpu_times()[:2])
    moment = began
    while (now := time.perf_counter()) - began < seconds:
        time.sleep(max(0.0, min(SAMPLE_SECONDS, seconds - (now - began))))
        now, spent = time.perf_counter(), sum(process.cpu_times()[:2])
        if spent - used >= BUSY_SHARE * (now - moment):
            last_busy = now - began
        used, moment = spent, now
    return last_busy


def one_run(provider: str, delay: float, figures: Figures) -> None:
    """Start a server, start a research ``delay`` s after ``initialize``, time it, stop."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        FAKES[provider]() as llm,
        fake_tavily() as search,
    ):
        env = environment(Path(tmp), provider, llm, search)
        began = time.perf_counter()
        with RawServer(env) as server:
            figures.initialize.append(time.perf_counter() - began)
            if delay > 0:
                busy = busy_until(server.pid, delay)
                if busy < delay - 2 * SAMPLE_SECONDS:  # idle before the research started
                    figures.busy.append(busy)
            sent_at = time.time()
            sent = time.perf_counter()
            envelope = server.call({"action": "deep-research", "query": QUERY})
            figures.answer.append(time.perf_counter() - sent)
            if not envelope.get("success"):
                figures.failures.append(f"deep-research refused: {envelope.get('error')}")
                return
            received = first_llm_request(llm, provider, sent_at)
            if received is None:
                figures.failures.append(f"no {provider} request within {FIRST_REQUEST_TIMEOUT} s")
                return
            figures.first_request.append(received - sent_at)


def spread(values: list[float], target: float | None, unit: str = "ms") -> str:
    """``median 12.3 ms, max 15.0 ms (target < 20 ms: PASS)``; no verdict without a target."""
    if not values:
        return "no figures" + ("" if target is None else " (FAIL)")
    scale = 1000.0 if unit == "ms" else 1.0
    digits = 1 if unit == "ms" else 3
    median, worst = statistics.median(values), max(values)
    shown = f"median {median * scale:.{digits}f} {unit}, max {worst * scale:.{digits}f} {unit}"
    if target is None:
        return shown
    return f"{shown} (target < {target * scale:g} {unit}: {verdict(values, target)})"


def verdict(values: list[float], target: float) -> str:
    """PASS when there are figures and every one is under ``target``."""
    return "PASS" if values and max(values) < target else "FAIL"


def report(provider: str, moment: str, figures: Figures, delay: float) -> None:
    settled = delay > 0  # the targets are those of a research started on a settled server
    print(f"{provider}, research started {moment}:")
    print(f"  initialize           {spread(figures.initialize, TARGET_INITIALIZE, 's')}")
    if settled:
        done = len(figures.busy)
        warm = (
            f"median {statistics.median(figures.busy):.2f} s, max {max(figures.busy):.2f} s"
            if figures.busy
            else "not finished"
        )
        print(f"  warm-up done after   {warm} ({done}/{len(figures.initialize)} runs idle in time)")
    answer_target = TARGET_ANSWER if settled else None
    request_target = TARGET_FIRST_REQUEST if settled else None
    print(f"  deep-research answer {spread(figures.answer, answer_target)}")
    print(f"  first LLM request    {spread(figures.first_request, request_target)}")
    for failure in figures.failures:
        print(f"  failed: {failure}")


def summary(results: dict[tuple[str, float], Figures]) -> bool:
    """The acceptance lines, one per provider and settled start moment; True if all pass."""
    print("acceptance (a research started on a settled server, worst of the runs):")
    passed = True
    for (provider, delay), figures in results.items():
        if delay <= 0:
            continue
        answer, request = figures.answer, figures.first_request
        answer_ok = verdict(answer, TARGET_ANSWER)
        request_ok = verdict(request, TARGET_FIRST_REQUEST)
        passed = passed and answer_ok == request_ok == "PASS" and not figures.failures
        print(
            f"  {provider:9s} {delay:g} s after initialize: start answer "
            f"{_worst(answer)} (< {TARGET_ANSWER * 1000:g} ms) {answer_ok}, first request "
            f"{_worst(request)} (< {TARGET_FIRST_REQUEST * 1000:g} ms) {request_ok}"
        )
    return passed


def _worst(values: list[float]) -> str:
    return f"{max(values) * 1000:5.1f} ms" if values else "   none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--delays",
        default="2",
        help="seconds between initialize and deep-research, comma-separated (0: at once, "
        "which is always run)",
    )
    parser.add_argument("--providers", default="openai,anthropic,gemini")
    args = parser.parse_args()
    providers = [name.strip() for name in args.providers.split(",") if name.strip()]
    unknown = set(providers) - set(FAKES)
    if unknown:
        parser.error(f"unknown providers: {', '.join(sorted(unknown))}")
    delays = sorted({float(value) for value in args.delays.split(",") if value.strip()} | {0.0})
    print(
        f"fresh `python -m foundry_mcp` over stdio per run, {args.runs} runs each, "
        f"{psutil.cpu_count()} CPUs, load average {psutil.getloadavg()[0]:.2f} at the start"
    )
    results: dict[tuple[str, float], Figures] = {}
    for provider in providers:
        for delay in [*delays[1:], 0.0]:
            moment = f"{delay:g} s after initialize" if delay else "at once (no target)"
            figures = results[(provider, delay)] = Figures()
            for _ in range(args.runs):
                one_run(provider, delay, figures)
            report(provider, moment, figures, delay)
    print(f"load average {psutil.getloadavg()[0]:.2f} at the end")
    if len(delays) > 1:
        print("all PASS" if summary(results) else "some FAIL")


if __name__ == "__main__":
    main()
