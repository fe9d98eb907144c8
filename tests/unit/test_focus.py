"""Focused reading and analysis batches: repeats read once, long texts kept to the question."""

from __future__ import annotations

from foundry_mcp.context.reading.focus import RepeatLedger, focus, focus_terms
from foundry_mcp.context.reading.selection import ELISION
from foundry_mcp.context.tokens import counter_for_model
from foundry_mcp.research.models import Source
from foundry_mcp.research.workflow.fitting.batches import SOURCES_PER_CALL, ReadySource, pack
from foundry_mcp.research.workflow.reading.shares import MIN_SHARE_TOKENS, page_shares

COUNTER = counter_for_model("gpt-4.1-mini")
TERMS = focus_terms("How do heat pumps perform in cold climates?")
BOILERPLATE = (
    "Subscribe to our newsletter for weekly updates on home energy, renovation grants and "
    "the latest product reviews from our editors. You can unsubscribe at any time."
)


def off_topic(n: int) -> str:
    return (
        f"Paragraph {n} recalls the history of the regional railway, its stations, its "
        "timetables and the families who ran the small cafes along the line for decades."
    )


def on_topic(n: int) -> str:
    return (
        f"Measurement {n}: heat pumps kept a coefficient of performance of {2 + n % 3} in cold "
        f"climates at minus {10 + n} degrees during the field trial."
    )


def page(paragraphs: list[str]) -> str:
    return "\n\n".join(paragraphs)


def test_a_text_within_its_share_is_read_whole_off_topic_passages_and_all() -> None:
    text = page([off_topic(n) for n in range(40)] + [on_topic(1)])
    tokens = COUNTER.count(text)
    focused = focus(text, TERMS, COUNTER, source_id="src-a", share=tokens)
    assert focused.text == text and not focused.narrowed


def test_a_long_text_keeps_its_most_relevant_passages_at_any_depth_within_its_share() -> None:
    paragraphs = [off_topic(n) for n in range(400)]
    depths = (20, 200, 360, 392)  # facts at 5%, 50%, 90% and 98% of the page
    for depth in depths:
        paragraphs[depth] = on_topic(depth)
    text = page(paragraphs)
    share = COUNTER.count(text) // 20

    focused = focus(text, TERMS, COUNTER, source_id="src-a", share=share)

    for depth in depths:
        assert on_topic(depth) in focused.text
    assert off_topic(0) in focused.text  # the opening says what the page is
    assert off_topic(100) not in focused.text and ELISION in focused.text
    assert COUNTER.count(focused.text) <= share


def test_the_pages_own_subject_does_not_set_the_decisive_passage_aside() -> None:
    # "dbm" is named in most passages of a page about dbm: it is the page's subject, which
    # weighs little, but the passage that answers the question still ranks first.
    filler = [
        f"The dbm module section {n} lists the dbm.dumb, dbm.ndbm and dbm.gnu interfaces, "
        "their open flags and the exceptions dbm.error raises when a file cannot be opened."
        for n in range(300)
    ]
    decisive = (
        "The 2024 study measured dbm.gnu lookups at 0.6 microseconds per key in a "
        "100,000-key database, against 2.3 microseconds for dbm.dumb."
    )
    filler[290] = decisive
    text = page(filler)
    terms = focus_terms("How fast are dbm.gnu lookups per key?")

    focused = focus(text, terms, COUNTER, source_id="src-a", share=800)

    assert decisive in focused.text
    assert COUNTER.count(focused.text) <= 800


def test_a_word_that_frames_the_question_is_not_a_term_of_it() -> None:
    terms = focus_terms("Compare Docker Swarm and Nomad for container orchestration")
    assert "compar" not in terms and "docker" in terms


def test_a_passage_read_from_one_source_is_not_read_again_from_another() -> None:
    ledger = RepeatLedger()
    first = focus(
        page([BOILERPLATE, on_topic(1)]), TERMS, COUNTER, source_id="a", share=1000, ledger=ledger
    )
    second = focus(
        page([on_topic(2), BOILERPLATE]), TERMS, COUNTER, source_id="b", share=60, ledger=ledger
    )

    assert BOILERPLATE in first.text and first.repeats == 0
    assert "Subscribe" not in second.text and "unsubscribe" not in second.text
    assert second.repeats == 2  # its long sentence, and the short one that went with it
    assert on_topic(2) in second.text
    # The first reader reads it again on a retry; a short common line is never a repeat.
    again = focus(
        page([BOILERPLATE, on_topic(1)]), TERMS, COUNTER, source_id="a", share=60, ledger=ledger
    )
    assert BOILERPLATE in again.text
    short = "Read more."
    for source_id in ("c", "d"):
        kept = focus(
            page([short, on_topic(3)]), TERMS, COUNTER, source_id=source_id, share=45, ledger=ledger
        )
        assert short in kept.text


def test_a_text_within_its_share_is_read_whole_even_where_another_source_gave_it() -> None:
    ledger = RepeatLedger()
    focus(
        page([BOILERPLATE, on_topic(1)]), TERMS, COUNTER, source_id="a", share=1000, ledger=ledger
    )
    second = focus(
        page([on_topic(2), BOILERPLATE]), TERMS, COUNTER, source_id="b", share=1000, ledger=ledger
    )
    assert BOILERPLATE in second.text and second.repeats == 0


def test_a_sentence_another_source_gave_is_left_out_of_a_paragraph_that_goes_on() -> None:
    stock = (
        "Heat pumps have become the default recommendation of most energy advisers in the "
        "last few years."
    )
    ledger = RepeatLedger()
    focus(
        page([stock + " " + on_topic(1)]), TERMS, COUNTER, source_id="a", share=100, ledger=ledger
    )
    second = focus(
        page([stock + " " + on_topic(2)]), TERMS, COUNTER, source_id="b", share=60, ledger=ledger
    )

    assert stock not in second.text and second.repeats == 1
    assert second.text == f"{ELISION} {on_topic(2)}"


def test_a_sentence_one_source_left_unread_is_read_from_the_next() -> None:
    # The first source's selection keeps its measurements and leaves the stock sentence out:
    # it was never sent, so the second source, which keeps it, is not robbed of it.
    stock = (
        "Installers report that heat pumps in cold climates needed a backup heater on fewer "
        "than one day in twenty."
    )
    measurements = [on_topic(n) + " " + on_topic(n + 50) for n in range(30)]
    first_page = page([*measurements, off_topic(1) + " " + stock, *measurements])
    ledger = RepeatLedger()
    first = focus(first_page, TERMS, COUNTER, source_id="a", share=300, ledger=ledger)
    assert first.selected and stock not in first.text

    second_page = page([off_topic(n) for n in range(30)] + [stock])
    second = focus(second_page, TERMS, COUNTER, source_id="b", share=120, ledger=ledger)
    assert stock in second.text and second.repeats == 0


def test_a_source_made_only_of_repeats_keeps_its_opening_as_a_pointer() -> None:
    ledger = RepeatLedger()
    text = page([BOILERPLATE, BOILERPLATE.replace("editors", "writers")])
    focus(text, TERMS, COUNTER, source_id="a", share=200, ledger=ledger)
    again = focus(text, TERMS, COUNTER, source_id="b", share=80, ledger=ledger)
    assert again.text == BOILERPLATE and again.repeats == 4


def test_a_round_shares_its_budget_fairly_at_least_the_floor_a_source_within_a_call() -> None:
    big = [100_000] * 13
    assert page_shares(big, 352_898, 900_000) == [352_898 // 13] * 13  # a large window
    assert page_shares(big, 3_840, 8_900) == [MIN_SHARE_TOKENS] * 13  # a small one: the floor
    assert page_shares(big, 1_920, 3_000) == [3_000] * 13  # within what one call holds
    # What a short page does not need goes to the long ones; nobody gets more than it has.
    shares = page_shares([1_000, 2_000, 100_000, 200_000], 4 * MIN_SHARE_TOKENS, 900_000)
    assert shares[:2] == [1_000, 2_000]
    assert shares[2] == shares[3] > MIN_SHARE_TOKENS
    assert sum(shares) <= 4 * MIN_SHARE_TOKENS


def _ready(n: int, tokens: int) -> ReadySource:
    return ReadySource(Source(title=f"page {n}", url=f"https://x.example/{n}"), "text", tokens)


def test_sources_are_packed_in_order_within_the_capacity() -> None:
    ready = [_ready(n, tokens) for n, tokens in enumerate([400, 500, 300, 900, 200])]
    batches = pack(ready, capacity=1000)
    assert [[r.tokens for r in batch] for batch in batches] == [[400, 500], [300], [900], [200]]
    assert [r for batch in batches for r in batch] == ready


def test_a_source_larger_than_a_call_goes_alone_and_batches_hold_at_most_twenty() -> None:
    assert [len(b) for b in pack([_ready(1, 50), _ready(2, 5000), _ready(3, 50)], 1000)] == [
        1,
        1,
        1,
    ]
    many = [_ready(n, 1) for n in range(SOURCES_PER_CALL + 5)]
    assert [len(b) for b in pack(many, 10_000)] == [SOURCES_PER_CALL, 5]


def test_a_reading_of_several_pages_is_split_among_calls_unless_it_is_small() -> None:
    """Two calls at once each write half the analyst's answer: a reading is packed to half
    its size when that is under the usual batch, unless it is small enough for one call."""
    from foundry_mcp.research.workflow.fitting.batches import (
        BATCH_TARGET_TOKENS,
        MIN_SPLIT_TOKENS,
        batch_capacity,
    )

    pages = [_ready(n, 1_600) for n in range(3)]
    total = sum(page.tokens for page in pages)
    assert MIN_SPLIT_TOKENS * 2 <= total < BATCH_TARGET_TOKENS
    assert len(pack(pages, batch_capacity(100_000))) == 1  # the usual batch holds them all
    assert len(pack(pages, batch_capacity(100_000, total))) >= 2
    small = pages[:2]  # 3,200 tokens: one call
    assert len(pack(small, batch_capacity(100_000, 3_200))) == 1
    assert batch_capacity(4_000, 50_000) == 4_000  # never more than the call's room
