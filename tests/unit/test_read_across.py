"""Reading several pages within one budget: worth per token, across pages, each sentence once."""

from __future__ import annotations

from foundry_mcp.context.reading.across import Page, read_in_order, read_within
from foundry_mcp.context.reading.focus import focus_terms, sentence_key
from foundry_mcp.context.reading.passages import cut_words, split_passages_with_breaks
from foundry_mcp.context.tokens import EstimateCounter
from foundry_mcp.research.models import PageRecord

COUNTER = EstimateCounter()
TERMS = focus_terms("Compare lmdb and leveldb for write throughput")
FILLER = (
    "The {n}th section of the {name} manual explains configuration files, logging conventions and how the "
    "project names its releases, which readers of this manual rarely need in practice."
)
DECOY = "The write throughput of {item} depends on the disk, the build and the size of values."


def page(name: str, paragraphs: int, fact_at: float | None = None, item: str = "lmdb") -> Page:
    """A long page of filler and decoys naming the subject, with one figure deep inside."""
    parts = []
    for n in range(paragraphs):
        decoy = DECOY.format(item=item) if n % 3 == 0 else ""
        parts.append(f"{FILLER.format(n=n, name=name)} {decoy}".strip())
        if fact_at is not None and n == int(paragraphs * fact_at):
            parts.append(f"FACT-{name}: {item} wrote 91,500 keys a second in the write benchmark.")
    return Page(name, "\n\n".join(parts))


def read_text(selections: list) -> str:
    return "\n".join(s.text for s in selections)


def test_a_figure_deep_in_a_long_page_is_read_within_a_small_budget() -> None:
    pages = [page("deep", 400, fact_at=0.97), page("other", 200, item="leveldb")]
    total = sum(COUNTER.count(p.text) for p in pages)
    chosen = read_within(pages, TERMS, 1_500, COUNTER)
    assert total > 20 * 1_500
    assert "FACT-deep" in read_text(chosen)
    assert sum(s.tokens for s in chosen) <= 1_500
    assert all(s.text == "" or "[…]" in s.text for s in chosen)  # in part, the gaps marked


def test_one_long_page_cannot_take_the_budget_of_the_short_ones() -> None:
    short = [page(f"short{n}", 6, fact_at=0.5) for n in range(5)]
    long = page("long", 600, fact_at=0.5)
    chosen = read_within([long, *short], TERMS, 2_500, COUNTER)
    text = read_text(chosen)
    assert all(f"FACT-short{n}" in text for n in range(5)) and "FACT-long" in text
    assert chosen[0].tokens < 2_500 / 2


def test_pages_that_fit_are_read_whole_word_for_word() -> None:
    pages = [page("a", 5, fact_at=0.5), page("b", 4)]
    chosen = read_within(pages, TERMS, 100_000, COUNTER)
    assert [s.text for s in chosen] == [p.text for p in pages]
    assert all(s.whole() for s in chosen)


def test_what_was_read_before_is_not_read_again() -> None:
    first = page("p", 120, fact_at=0.9)
    before = read_within([first], TERMS, 800, COUNTER)[0]
    again = Page("p", first.text, frozenset(before.chosen))
    after = read_within([again], TERMS, 800, COUNTER)[0]
    assert before.chosen and after.chosen
    assert not set(before.chosen) & set(after.chosen)
    reading = PageRecord(passages=before.passages)
    reading.add(before.chosen)
    reading.add(after.chosen)
    assert reading.count == len(before.chosen) + len(after.chosen)
    assert reading.read == set(before.chosen) | set(after.chosen)
    assert len(reading.runs) <= reading.count


def test_a_sentence_another_page_gave_is_worth_nothing() -> None:
    fact = "FACT-shared: lmdb wrote 91,500 keys a second in the write benchmark."
    pages = [
        Page(name, "\n\n".join([fact, *(FILLER.format(n=n, name=name) for n in range(40))]))
        for name in ("one", "two")
    ]
    known = frozenset({sentence_key(fact)})
    assert "FACT-shared" not in read_text(read_within(pages, TERMS, 200, COUNTER, known=known))
    both = read_within(pages, TERMS, 200, COUNTER)
    assert read_text(both).count("FACT-shared") == 1  # read from one page, not both


def test_no_page_brings_more_than_one_call_carries() -> None:
    pages = [page("big", 800, fact_at=0.5), page("small", 20, fact_at=0.5)]
    chosen = read_within(pages, TERMS, 20_000, COUNTER, page_cap=3_000)
    assert chosen[0].tokens <= 3_000 + 50
    assert "FACT-small" in chosen[1].text


def test_a_round_that_finds_nothing_relevant_reads_nothing() -> None:
    pages = [Page("off", "\n\n".join(FILLER.format(n=n, name="off") for n in range(300)))]
    chosen = read_within(pages, focus_terms("quantum chromodynamics"), 2_000, COUNTER)
    assert chosen[0].text == "" and chosen[0].chosen == ()


def test_a_long_table_is_cut_between_its_rows_not_inside_one() -> None:
    rows = [f"| `name{n}` | what name {n} does, in a few words | 3.{n % 10} |" for n in range(40)]
    fact = "| `lmdb.put` | FACT-row: lmdb wrote 91,500 keys a second in the write benchmark. |"
    table = " ".join([*rows[:20], fact, *rows[20:]])  # a table's lines, joined as read
    pieces = cut_words(table, 600)
    assert len(pieces) > 3 and all(len(piece) <= 600 for piece in pieces)
    assert any(fact in piece for piece in pieces)
    assert all(piece.startswith("|") and piece.endswith("|") for piece in pieces)


def test_a_figure_counts_with_its_own_statement_not_with_the_heading_above_it() -> None:
    """Joined into one line, a heading naming the question's words, a timing loop with a count
    in it and a list read as one sentence; the figure in the loop is not a statement about the
    write throughput, while the list item that gives one is."""
    timing = (
        "## Write throughput ```python env = lmdb.open('bench') start = time.perf_counter() for "
        "i in range({n}): env.put(i) print(f'{{time.perf_counter() - start:.3f}} s for {n} calls') ```"
    )
    pages = [
        Page(f"code{n}", "\n\n".join(timing.format(n=n * 10 + k) for k in range(30)))
        for n in range(4)
    ]
    items = [
        f"- `lmdb.{name}` is available on Unix only"
        for name in ("open", "sync", "stat", "copy", "info")
    ]
    fact = "- FACT-list: lmdb wrote 91,500 keys a second in the write throughput benchmark."
    listed = "\n\n".join(
        [FILLER.format(n=n, name="list") for n in range(30)] + [" ".join([*items, fact, *items])]
    )
    pages.append(Page("list", listed))
    chosen = read_within(pages, TERMS, 600, COUNTER)
    assert "FACT-list" in read_text(chosen)


def test_reading_in_order_takes_each_page_from_its_beginning_within_its_share() -> None:
    short, long = page("short", 3), page("long", 300)
    read_before = Page(long.id, long.text, frozenset({0, 1}))
    chosen = read_in_order([short, read_before], 2_000, COUNTER, page_cap=1_500)
    assert chosen[0].text == short.text.strip()  # short: whole, word for word
    pieces = split_passages_with_breaks(long.text.strip())
    taken = chosen[1].chosen
    # From the first passage not read before, in order, no gap, up to the cap.
    assert taken == tuple(range(2, 2 + len(taken))) and len(taken) < len(pieces)
    assert 1_000 < chosen[1].tokens <= 1_500
    assert chosen[1].passages == len(pieces)
    # Without the cap, the short page's leftover goes to the long one.
    wider = read_in_order([short, read_before], 2_000, COUNTER)
    assert chosen[1].tokens < wider[1].tokens <= 2_000 - chosen[0].tokens
