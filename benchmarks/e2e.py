"""A whole deep research against the loopback fakes with simulated provider latency.

Prints wall time, LLM and search calls, tokens, and the orchestration overhead: wall time minus
the time during which at least one provider call was in flight. Run from the repository root:

    python benchmarks/e2e.py [--llm-latency 0.5] [--search-latency 0.3] [--iterations 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foundry_mcp.config import load_settings
from foundry_mcp.runtime import research_runtime
from tests.fakes import ResearchBrain, fake_openai, fake_tavily


async def run(args: argparse.Namespace) -> None:
    brain = ResearchBrain(gap_iterations=args.iterations - 1)
    with fake_openai(brain) as llm, fake_tavily() as search, tempfile.TemporaryDirectory() as tmp:
        llm.latency = args.llm_latency
        search.latency = args.search_latency
        config = Path(tmp) / "foundry-mcp.toml"
        config.write_text("[providers.openai]\nmax_retries = 0\n")
        env = {
            "FOUNDRY_MCP_CONFIG": str(config),
            "FOUNDRY_MCP_RESEARCH_DIR": str(Path(tmp) / "research"),
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": llm.base_url + "/v1",
            "TAVILY_API_KEY": "tvly-bench",
            "TAVILY_BASE_URL": search.base_url,
        }
        settings = load_settings(env=env, cwd=Path(tmp), home=Path(tmp))
        async with research_runtime(settings) as service:
            # Measure a server that has finished starting (SDK imports run in a thread).
            await anyio.to_thread.run_sync(service.providers.warmed.wait, 30)
            began = time.perf_counter()
            started = service.start(
                "How do vector databases index embeddings?",
                max_iterations=args.iterations,
            )
            job = service.jobs.get(started["research_id"])
            assert job is not None
            start_latency = time.perf_counter() - began
            await job.done.wait()
            wall = time.perf_counter() - began
            status = await service.status(started["research_id"])
            calls = service.call_logs[started["research_id"]]

    busy = calls.busy_seconds()
    overhead = wall - busy
    print(f"status:                 {status['status']}")
    print(f"iterations:             {status['iteration']}/{status['max_iterations']}")
    print(f"start returned in:      {start_latency * 1000:.1f} ms")
    print(f"wall time:              {wall:.3f} s")
    print(f"LLM calls:              {calls.count('llm')} ({args.llm_latency:.2f} s each)")
    print(f"search calls:           {calls.count('search')} ({args.search_latency:.2f} s each)")
    print(f"sources / findings:     {status['counts']['sources']} / {status['counts']['findings']}")
    tokens = status["tokens"]
    print(
        f"tokens:                 {tokens['total']} ({tokens['input']} in, {tokens['output']} out)"
    )
    print(f"provider busy time:     {busy:.3f} s")
    print(f"orchestration overhead: {overhead:.3f} s ({overhead / wall:.1%} of wall time)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-latency", type=float, default=0.5)
    parser.add_argument("--search-latency", type=float, default=0.3)
    parser.add_argument("--iterations", type=int, default=3)
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
