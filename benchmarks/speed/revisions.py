"""What a report's revisions cost next to the research they revise (issue 55).

One server over stdio (the speed benchmark's world: a multi-part question over long
documentation pages, careful fake models, LLM 0.4 s + 5 ms per output token, search 0.3 s)
researches one question at standard effort, hierarchical mode; then, on the same research:

1. a rewrite as a one-page brief in German (no search may be made);
2. a deepen of its first part (the first dotted name of the question);
3. a refresh, in a world where nothing changed (no model call may be made).

Printed for the research and each version: wall time, LLM calls, prompt and output tokens (and
their share of the research's), searches, tokens by phase, and whether every citation of the
version's report resolves to a source of the research. Run from the repository root:

    python benchmarks/speed/revisions.py [--question N] [--pages 3] [--seed 0]

About a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("FOUNDRY_MCP_NO_DOWNLOADS", "1")

from mcp import Client, StdioServerParameters

from benchmarks.speed.runs import OPTIONS, TERMINAL, call, server_process, wait_until_idle
from benchmarks.speed.world import environment, questions, world
from tests.fakes.docpages import DocQuestion

_CITATION = re.compile(r"\[(\d{1,4})\]")
PAGE_CHARS = 20_000


async def whole_report(client: Client, research_id: str, version: int) -> str:
    """The version's report, every page of it, and its cited sources' numbers as listed."""
    pages, offset = [], 0
    while offset is not None:
        read = await call(
            client, action="deep-research-report", research_id=research_id, version=version,
            offset=offset, max_chars=PAGE_CHARS,
        )  # fmt: skip
        assert read["success"], read["data"]
        pages.append(read["data"]["report"])
        offset = read["data"]["next_offset"]
    return "".join(pages)


async def until_done(client: Client, research_id: str) -> dict[str, Any]:
    while True:
        envelope = await call(
            client, action="deep-research-status", research_id=research_id, wait=True,
            wait_timeout=30,
        )  # fmt: skip
        if envelope["data"]["status"] in TERMINAL:
            return dict(envelope["data"])


def citations_resolve(report: str) -> tuple[int, bool]:
    """How many distinct [n] the report cites, and whether each is in its Sources list."""
    body, _, listed = report.partition("\n## Sources")
    cited = {int(n) for n in _CITATION.findall(body)}
    numbers = {
        int(n) for n in re.findall(r"^\s*(?:\[(\d+)\]|(\d+)\.)", listed, re.M) for n in n if n
    }
    return len(cited), cited <= numbers if numbers else not cited


def row(label: str, wall: float, cost: dict[str, Any], searches: int, base_tokens: int,
        report: str) -> str:  # fmt: skip
    total = cost.get("total", {})
    tokens_in, tokens_out = int(total.get("input_tokens", 0)), int(total.get("output_tokens", 0))
    share = (tokens_in + tokens_out) / base_tokens if base_tokens else 0.0
    phases = ", ".join(
        f"{phase} {int(t.get('input_tokens', 0)) + int(t.get('output_tokens', 0)):,}"
        for phase, t in sorted(cost.get("by_phase", {}).items())
    )
    cited, resolved = citations_resolve(report)
    return (
        f"{label:24} wall {wall:5.1f} s  calls {int(total.get('calls', 0)):3}  tokens "
        f"{tokens_in:7,} in {tokens_out:6,} out ({share:6.1%} of the research)  searches "
        f"{searches:2}  citations {cited:2} {'all resolve' if resolved else 'SOME DO NOT RESOLVE'}"
        f"\n{'':24} by phase: {phases or 'none'}"
    )


async def run(question: DocQuestion, pages: int, seed: int) -> None:
    with world(8, pages, seed) as fakes, tempfile.TemporaryDirectory(prefix="revise-") as tmp:
        env = environment(Path(tmp), fakes, None)
        base = {key: os.environ[key] for key in ("PATH", "LANG") if key in os.environ}
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "foundry_mcp"], env={**base, **env}
        )
        before = {child.pid for child in psutil.Process().children(recursive=True)}
        async with Client(params, mode="legacy") as client:
            await anyio.to_thread.run_sync(wait_until_idle, server_process(before).pid)
            began = time.time()
            started = await call(
                client, action="deep-research", query=question.text, effort="standard", **OPTIONS
            )
            research_id = started["data"]["research_id"]
            status = await until_done(client, research_id)
            research_wall = time.time() - began
            print(f"question: {question.text}\nresearch {research_id}: {status['status']}")
            revisions = [
                ("rewrite: brief, German", {"kind": "rewrite", "form": "brief", "language": "de"}),
                ("deepen: " + question.items[0], {"kind": "deepen", "part": question.items[0]}),
                ("refresh: nothing changed", {"kind": "refresh"}),
            ]
            walls = {}
            searches = {}
            for label, revise in revisions:
                searched = len(fakes.search.requests_to("/search"))
                began = time.time()
                asked = await call(
                    client, action="deep-research-revise", research_id=research_id, revise=revise
                )
                if not asked["success"]:
                    print(f"{label}: refused: {asked['data']}")
                    continue
                done = await until_done(client, research_id)
                walls[label] = time.time() - began
                searches[label] = len(fakes.search.requests_to("/search")) - searched
                if done["status"] != "completed":
                    print(f"{label}: {done['status']}: {done.get('error')}")
            listed = await call(client, action="deep-research-versions", research_id=research_id)
            versions = listed["data"]["versions"]
            base_cost = versions[0]["cost"]
            base_total = base_cost.get("total", {})
            base_tokens = int(base_total.get("input_tokens", 0)) + int(
                base_total.get("output_tokens", 0)
            )
            first = await whole_report(client, research_id, 1)
            print(row("research", research_wall, base_cost, base_cost.get("search_calls", 0),
                      base_tokens, first))  # fmt: skip
            for version, (label, _) in zip(versions[1:], revisions, strict=False):
                read = await whole_report(client, research_id, version["number"])
                print(row(f"v{version['number']} {label}", walls.get(label, 0.0), version["cost"],
                          searches.get(label, 0), base_tokens, read))  # fmt: skip
                if version.get("changes_summary"):
                    print(f"{'':24} changes: {version['changes_summary']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--question", type=int, default=0, help="which question (0-7)")
    parser.add_argument("--pages", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    anyio.run(run, questions(8)[args.question], args.pages, args.seed)


if __name__ == "__main__":
    main()
