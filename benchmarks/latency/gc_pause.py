"""What the passage indexes a research keeps cost a full garbage collection.

Citation checks index every source they read (``foundry_mcp.context.reading.passages.PassageIndex``: a
page's passages and each term's postings) and keep the index while the research runs; a team
worker running a hundred research holds hundreds. A full collection walks every container the
collector tracks, on whatever thread triggered it: for a server, usually its event loop, so
every request waiting on the loop waits for the collection too.

The pages are the documentation pages of ``benchmarks/docpages/bench.py`` (``tests/fakes/docpages.py``:
20-400 KB each, prose, tables, lists and code run together; eight questions, nine pages each).
As a server does after its start (``foundry_mcp.runtime.settle_heap``), what the imports built
is frozen first. Printed: the pages and their size, the time to index them, and the median of
``--repeats`` full collections with the indexes held and without them (the pause they add, in
total and per index). Seconds to run; from the repository root:

    python benchmarks/latency/gc_pause.py [--questions 8] [--repeats 7]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from foundry_mcp.context.reading.passages import PassageIndex
from tests.fakes.docpages import DOC_QUESTIONS, DocCorpus


def full_collection_ms(repeats: int) -> float:
    """The median time of a full collection, in milliseconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        gc.collect()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--questions", type=int, default=len(DOC_QUESTIONS))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    texts = [
        page["raw_content"]
        for question in DOC_QUESTIONS[: args.questions]
        for page in DocCorpus(question).all_pages()
    ]
    gc.collect()
    gc.freeze()
    empty = full_collection_ms(args.repeats)
    started = time.perf_counter()
    indexes = [PassageIndex.build(text) for text in texts]
    built = time.perf_counter() - started
    held = full_collection_ms(args.repeats)
    postings = sum(len(found) // 2 for index in indexes for found in index.postings.values())
    megabytes = sum(len(text) for text in texts) / 1e6
    print(f"pages: {len(texts)}, {megabytes:.1f} MB of text; {postings:,} postings indexed")
    print(f"indexing them: {built:.2f} s ({built / len(texts) * 1000:.0f} ms a page)")
    print(f"full collection without the indexes: {empty:.2f} ms (median of {args.repeats})")
    print(
        f"full collection holding them: {held:.2f} ms; the indexes add {held - empty:.2f} ms "
        f"({(held - empty) / len(indexes) * 1000:.0f} us an index)"
    )


if __name__ == "__main__":
    main()
