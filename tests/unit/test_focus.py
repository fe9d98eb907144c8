"""Focused reading and analysis batches: repeats read once, long texts kept to the question."""

from __future__ import annotations

from foundry_mcp.context.focus import FOCUS_MIN_TOKENS, RepeatLedger, focus, focus_terms
from foundry_mcp.context.selection import ELISION
from foundry_mcp.context.tokens import counter_for_model
from foundry_mcp.research.models import Source
from foundry_mcp.research.workflow.source_batches import SOURCES_PER_CALL, ReadySource, pack

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


def test_a_short_text_is_read_whole() -> None:
    text = page([off_topic(1), on_topic(1), off_topic(2)])
    focused = focus(text, TERMS, COUNTER, source_id="src-a")
    assert focused.text == text and not focused.narrowed


def test_a_long_text_keeps_its_opening_and_every_passage_on_the_question() -> None:
    paragraphs = [off_topic(n) for n in range(120)]
    for depth in (12, 60, 108):  # facts at 10%, 50% and 90% of the page
        paragraphs[depth] = on_topic(depth)
    text = page(paragraphs)
    assert COUNTER.count(text) > FOCUS_MIN_TOKENS

    focused = focus(text, TERMS, COUNTER, source_id="src-a")

    for depth in (12, 60, 108):
        assert on_topic(depth) in focused.text
    assert off_topic(0) in focused.text  # the opening says what the page is
    assert off_topic(50) not in focused.text
    assert ELISION in focused.text
    assert COUNTER.count(focused.text) < COUNTER.count(text) / 5


def test_a_text_that_never_mentions_the_question_is_not_guessed_at() -> None:
    text = page([off_topic(n) for n in range(120)])
    assert focus(text, TERMS, COUNTER, source_id="src-a").text == text


def broad_page(product: str, sections: str) -> str:
    """A long page about ``product``: ``sections`` says, paragraph by paragraph, whether it is
    on the question's topic (``q``) or about another use of the product (``o``)."""
    paragraphs = []
    for n, kind in enumerate(sections):
        if kind == "q":
            text = (
                f"Measurement {n}: {product} served container orchestration for a retail "
                f"platform, where the scheduler placed {n + 3} replicas per service and kept "
                "rollouts within the agreed window."
            )
        else:
            text = (
                f"Note {n}: {product} also runs on developer laptops, where the release "
                "cadence, the vendor support and the pricing tiers matter more than anything "
                "else to the people who install it."
            )
        again = text.split(": ", 1)[1]
        paragraphs.append(f"{text} {again} {again}")  # 400-600 characters: one passage each
    return page(paragraphs)


def test_a_broad_page_keeps_the_sections_on_the_question_not_those_naming_only_its_subject() -> (
    None
):
    terms = focus_terms("Compare Docker Swarm and Nomad for container orchestration")
    sections = "oqqq" + "oooooo" + "qqoq" + "oooooooo" + "qqq" + "oooo"
    text = broad_page("Docker Swarm", sections)
    assert COUNTER.count(text) > FOCUS_MIN_TOKENS

    focused = focus(text, terms, COUNTER, source_id="src-a")

    kept = [f"Measurement {n}:" in focused.text for n, kind in enumerate(sections) if kind == "q"]
    assert all(kept)
    assert "Note 0:" in focused.text  # the opening says what the page is
    assert "Note 12:" in focused.text  # one passage between two kept ones: the thread goes on
    dropped = [n for n, kind in enumerate(sections) if kind == "o" and n not in (0, 12)]
    assert not any(f"Note {n}:" in focused.text for n in dropped)
    assert focused.passages_kept == sections.count("q") + 2


def test_a_word_that_frames_the_question_does_not_make_a_passage_bear_on_it() -> None:
    terms = focus_terms("Compare Docker Swarm and Nomad for container orchestration")
    sections = "oqqq" + "oooooo" + "qqoq" + "oooooooo" + "qqq" + "oooo"
    text = broad_page("Docker Swarm", sections).replace("Note ", "Compared with Ansible, note ")

    focused = focus(text, terms, COUNTER, source_id="src-a")

    assert all(f"Measurement {n}:" in focused.text for n, k in enumerate(sections) if k == "q")
    dropped = [n for n, kind in enumerate(sections) if kind == "o" and n not in (0, 12)]
    assert not any(f"note {n}:" in focused.text for n in dropped)
    assert "compar" not in terms


def test_a_page_about_the_question_throughout_is_read_whole() -> None:
    terms = focus_terms("Compare Docker Swarm and Nomad for container orchestration")
    text = broad_page("Docker Swarm", "q" * 40)

    focused = focus(text, terms, COUNTER, source_id="src-a")

    assert focused.text == text and not focused.narrowed


def test_a_passage_read_from_one_source_is_not_read_again_from_another() -> None:
    ledger = RepeatLedger()
    first = focus(page([BOILERPLATE, on_topic(1)]), TERMS, COUNTER, source_id="a", ledger=ledger)
    second = focus(page([on_topic(2), BOILERPLATE]), TERMS, COUNTER, source_id="b", ledger=ledger)

    assert BOILERPLATE in first.text and first.repeats == 0
    assert "Subscribe" not in second.text and "unsubscribe" not in second.text
    assert second.repeats == 2  # its long sentence, and the short one that went with it
    assert on_topic(2) in second.text
    # The first reader reads it again on a retry; a short common line is never a repeat.
    again = focus(page([BOILERPLATE, on_topic(1)]), TERMS, COUNTER, source_id="a", ledger=ledger)
    assert BOILERPLATE in again.text
    short = "Read more."
    for source_id in ("c", "d"):
        kept = focus(page([short, on_topic(3)]), TERMS, COUNTER, source_id=source_id, ledger=ledger)
        assert short in kept.text


def test_a_sentence_another_source_gave_is_left_out_of_a_paragraph_that_goes_on() -> None:
    stock = (
        "Heat pumps have become the default recommendation of most energy advisers in the "
        "last few years."
    )
    ledger = RepeatLedger()
    focus(page([stock + " " + on_topic(1)]), TERMS, COUNTER, source_id="a", ledger=ledger)
    second = focus(page([stock + " " + on_topic(2)]), TERMS, COUNTER, source_id="b", ledger=ledger)

    assert stock not in second.text and second.repeats == 1
    assert second.text == f"{ELISION} {on_topic(2)}"


def test_a_source_made_only_of_repeats_keeps_its_opening_as_a_pointer() -> None:
    ledger = RepeatLedger()
    text = page([BOILERPLATE])
    focus(text, TERMS, COUNTER, source_id="a", ledger=ledger)
    again = focus(text, TERMS, COUNTER, source_id="b", ledger=ledger)
    assert again.text == BOILERPLATE and again.repeats == 2


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
