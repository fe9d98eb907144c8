"""What talking with the user costs: the ``deep-research`` answer's latency and the tokens spent,
with and without clarifying questions, through a real MCP client session.

Each case starts one research (simple mode, one round) on a fresh server over loopback fakes
with realistic latency (LLM 0.4 s plus 5 ms per output token, search 0.3 s) and times:

- start: from sending ``deep-research`` to its answer (the research id);
- wall: from sending it to the research's end;
- the LLM calls and tokens of the whole research, and of the clarifier's judgement;
- the user's answer comes at once (a person takes longer; that time is theirs, not ours).

Cases: a client without elicitation (``clarify`` auto: no question, the planner names its
assumptions in the same call), ``clarify=off``, an eliciting client with a clear question (one
judgement call, nothing asked), and with a vague one (the judgement, then one form).

    python benchmarks/latency/clarify.py [--runs 3]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp import Client
from mcp.types import ElicitResult

from benchmarks.simulated import run_settings, simulate_latency
from foundry_mcp.server import create_server
from tests.e2e.conftest import call, run_to_end
from tests.fakes import ResearchBrain, fake_openai, fake_tavily

VAGUE = "What is the best database?"
CLEAR = "How does PostgreSQL 16 implement logical replication of DDL changes?"


@dataclass
class Case:
    name: str
    question: str
    eliciting: bool
    clarify: str = "auto"


CASES = (
    Case("no elicitation, vague question", VAGUE, eliciting=False),
    Case("clarify=off, vague question", VAGUE, eliciting=True, clarify="off"),
    Case("elicitation, clear question", CLEAR, eliciting=True),
    Case("elicitation, vague question", VAGUE, eliciting=True),
)


async def _answer(_: Any, params: Any) -> ElicitResult:
    properties = params.requested_schema["properties"]
    return ElicitResult(
        action="accept",
        content={
            name: spec["enum"][0] if "enum" in spec else "2024" for name, spec in properties.items()
        },
    )


async def one_run(case: Case) -> dict[str, float]:
    brain = ResearchBrain()
    with fake_openai(brain) as llm, fake_tavily() as search, tempfile.TemporaryDirectory() as tmp:
        simulate_latency(llm, search)
        settings = run_settings(Path(tmp), llm, search)
        callback = _answer if case.eliciting else None
        server = create_server(lambda: settings)
        async with Client(server, mode="legacy", elicitation_callback=callback) as client:
            await call(client, action="health")  # the service open and the providers warm
            began = time.perf_counter()
            started = await call(
                client,
                action="deep-research",
                query=case.question,
                mode="simple",
                max_iterations=1,
                clarify=case.clarify,
            )
            answered = time.perf_counter() - began
            assert started["success"], started
            final = await run_to_end(client, started["data"]["research_id"], timeout=300)
            wall = time.perf_counter() - began
    usage = final["usage"]["total"]
    judged = [h for h in brain.history if h[0] == "clarifier"]
    return {
        "start": answered,
        "wall": wall,
        "calls": usage["calls"],
        "tokens": usage["input_tokens"] + usage["output_tokens"],
        "judgement_tokens": sum(ResearchBrain.estimate_tokens(s + u) for _, s, u in judged),
    }


async def main(runs: int) -> None:
    logging.disable(logging.INFO)  # the in-process server's request lines
    print(f"{'case':34} {'start s':>8} {'wall s':>7} {'calls':>6} {'tokens':>7} {'judge tok':>9}")
    for case in CASES:
        results = [await one_run(case) for _ in range(runs)]
        median = {key: statistics.median(r[key] for r in results) for key in results[0]}
        print(
            f"{case.name:34} {median['start']:8.3f} {median['wall']:7.2f} "
            f"{median['calls']:6.0f} {median['tokens']:7.0f} {median['judgement_tokens']:9.0f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    anyio.run(main, parser.parse_args().runs)
