"""Does page extraction block the event loop? Fetch and extract large pages while pinging.

A fake page server on 127.0.0.1 serves 20 large HTML pages (>= 500 KB each). They are fetched
and extracted through ``PageFetcher`` while a trivial coroutine wakes every 10 ms on the same
event loop (standing in for a status call) and records how late each wake-up is. Prints p50, p99
and max of that lateness (target: p99 < 50 ms, i.e. extraction does not block the loop) and the
total fetch + extraction time. Run from the repository root:

    python benchmarks/extraction.py [--pages 20] [--kb 600]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foundry_mcp.config import FetchSettings
from foundry_mcp.providers.pages.fetch import PageFetcher
from tests.fakes.search_apis import fake_pages, html_page

PING_INTERVAL = 0.010


def large_page(n: int, kilobytes: int) -> str:
    """An article-like page of about ``kilobytes`` KB: nested markup, many paragraphs."""
    paragraph = (
        "<p>Heat pumps move heat rather than generating it, which is why their coefficient of "
        f"performance stays above one even in cold weather; measurement {n} of the series. "
        "<a href='/ref'>reference</a> <em>emphasis</em> and <strong>strong</strong> text.</p>"
    )
    sidebar = "<aside><ul>" + "".join(f"<li><a href='/l{i}'>Link {i}</a></li>" for i in range(50))
    sidebar += "</ul></aside>"
    parts = [
        f"<!DOCTYPE html><html><head><title>Large page {n}</title>"
        "<script>var x = 1;</script></head><body><nav>menu</nav>",
        sidebar,
        "<main><article>",
    ]
    size = sum(len(p) for p in parts)
    section = 0
    while size < kilobytes * 1024:
        block = (
            f"<section><h2>Section {section}</h2><div><div>{paragraph * 8}</div></div></section>"
        )
        parts.append(block)
        size += len(block)
        section += 1
    parts.append("</article></main><footer>footer</footer></body></html>")
    return "".join(parts)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


async def run(pages: int, kilobytes: int) -> int:
    routes = {f"/page/{n}": html_page(large_page(n, kilobytes)) for n in range(pages)}
    sizes = [len(str(r.body).encode()) for r in routes.values()]
    with fake_pages(routes) as server:
        fetcher = PageFetcher(
            FetchSettings(allow_private_networks=True, max_concurrent=5, timeout=60)
        )
        lateness: list[float] = []
        done = anyio.Event()

        async def ping() -> None:
            while not done.is_set():
                expected = time.perf_counter() + PING_INTERVAL
                await anyio.sleep(PING_INTERVAL)
                lateness.append(max(0.0, time.perf_counter() - expected))

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(ping)
            results = await fetcher.fetch_many(
                [f"{server.base_url}/page/{n}" for n in range(pages)]
            )
            elapsed = time.perf_counter() - started
            done.set()
        await fetcher.aclose()

    failed = [r for r in results if not r.ok]
    chars = sum(len(r.text or "") for r in results)
    print(
        f"pages: {pages} x ~{statistics.mean(sizes) / 1024:.0f} KB (min {min(sizes) / 1024:.0f} KB)"
    )
    print(f"fetched ok: {len(results) - len(failed)}/{pages}; extracted text: {chars:,} chars")
    print(f"total fetch + extraction time: {elapsed:.2f} s")
    print(
        f"ping lateness over {len(lateness)} pings: p50 {percentile(lateness, 0.5) * 1000:.1f} ms, "
        f"p99 {percentile(lateness, 0.99) * 1000:.1f} ms, max {max(lateness) * 1000:.1f} ms "
        "(target p99 < 50 ms)"
    )
    for result in failed:
        print(f"  failed: {result.url}: {result.error}")
    return 0 if not failed and percentile(lateness, 0.99) < 0.050 else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--kb", type=int, default=600, help="size of each page in KB")
    args = parser.parse_args()
    sys.exit(anyio.run(run, args.pages, args.kb))


if __name__ == "__main__":
    main()
