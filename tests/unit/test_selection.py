"""Query-focused passage selection, and the BM25 it shares with citation verification."""

from __future__ import annotations

import gc
import random

import pytest

from foundry_mcp.context.ladder import Ladder
from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.reading import focus, parsed, passages
from foundry_mcp.context.reading.selection import ELISION, query_terms, select_passages
from foundry_mcp.context.tokens import EstimateCounter
from foundry_mcp.research import verification
from foundry_mcp.research.prompts.summarizer import SUMMARY_PROMPT_VERSION, summarizer_prompts

COUNTER = EstimateCounter()
QUESTION = "What recovery rates do lithium battery recycling plants reach?"
SUB_QUERY = "hydrometallurgical lithium recovery rate pilot plant"
KEY = (
    "The hydrometallurgical pilot plant recovered 96 percent of the lithium, the highest "
    "recovery rate reported for battery recycling so far."
)
FILLER = [
    "The committee met on Tuesday to review the annual budget and travel plans.",
    "Weather in the northern region was mild for most of the season.",
    "Several employees attended a workshop about office software and email etiquette.",
    "The cafeteria introduced a new menu with seasonal vegetables and soups.",
    "Parking arrangements changed after the construction of the east wing began.",
    "A local band performed at the summer festival near the river.",
    "The library extended its opening hours during the examination period.",
]

PROMPTS = {"prompts": summarizer_prompts, "prompt_version": SUMMARY_PROMPT_VERSION}


def long_source(target_tokens: int, keys: dict[float, str], seed: int = 7) -> str:
    """Filler paragraphs of about ``target_tokens`` with ``keys`` placed at given depths."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    while COUNTER.count("\n\n".join(paragraphs)) < target_tokens:
        paragraphs.append(" ".join(rng.choice(FILLER) for _ in range(4)))
    for depth, sentence in keys.items():
        index = min(len(paragraphs) - 1, int(depth * len(paragraphs)))
        paragraphs[index] = f"{paragraphs[index]} {sentence}"
    return "\n\n".join(paragraphs)


def test_a_relevant_sentence_at_90_percent_depth_survives_key_points() -> None:
    text = long_source(30_000, {0.9: KEY})
    original = COUNTER.count(text)
    assert 29_000 <= original <= 31_000
    assert text.index(KEY) / len(text) > 0.85
    budget = round(ContentLevel.KEY_POINTS.ratio * original)
    selected = select_passages(text, query_terms(QUESTION, SUB_QUERY), budget, COUNTER)
    assert KEY in selected.text
    assert selected.tokens <= budget
    assert selected.elided and ELISION in selected.text


@pytest.mark.anyio
async def test_the_ladder_keeps_it_at_key_points_too() -> None:
    text = long_source(30_000, {0.9: KEY})
    target = round(ContentLevel.KEY_POINTS.ratio * COUNTER.count(text))
    result = await Ladder(COUNTER, [], **PROMPTS).degrade(
        text, ContentLevel.KEY_POINTS, target, f"{QUESTION} {SUB_QUERY}"
    )
    assert KEY in result.text and result.tokens <= target
    assert result.method == "selection"


def test_selection_keeps_document_order_and_marks_each_gap() -> None:
    keys = {
        0.1: "Early trials recovered 80 percent of the lithium in the recycling plant.",
        0.5: "Midway, the lithium recovery rate in recycling rose to 90 percent.",
        0.9: KEY,
    }
    text = long_source(8_000, keys)
    selected = select_passages(text, f"{QUESTION} {SUB_QUERY}", 800, COUNTER)
    positions = [selected.text.index(sentence) for sentence in keys.values()]
    assert positions == sorted(positions)
    assert selected.text.count(ELISION) >= 3  # before, between and after the kept passages
    assert "\n\n\n" not in selected.text


def test_a_text_that_fits_is_returned_whole() -> None:
    text = "First paragraph about lithium.\n\nSecond paragraph about recycling."
    selected = select_passages(text, QUESTION, 1000, COUNTER)
    assert selected.text == text and not selected.elided


def test_without_matching_words_the_opening_is_kept() -> None:
    text = long_source(3_000, {})
    selected = select_passages(text, "quantum chromodynamics lattice", 300, COUNTER)
    assert selected.text.startswith(text[:40])
    assert selected.tokens <= 300


def test_a_single_oversized_passage_is_cut_to_the_budget() -> None:
    sentence = "lithium " * 3000  # one passage-free run of words
    selected = select_passages(sentence, "lithium", 100, COUNTER)
    assert selected.tokens <= 100
    assert selected.text.endswith(ELISION)


def test_verification_uses_the_shared_bm25() -> None:
    assert verification.content_words is passages.content_words
    assert verification.split_passages is passages.split_passages
    assert verification.PassageIndex is passages.PassageIndex
    index = passages.PassageIndex.build(long_source(2_000, {0.5: KEY}))
    best = index.best(passages.content_words("lithium recovery rate"), 1)
    assert KEY[:40] in best[0]


def _collector_work(root: object) -> int:
    """References the garbage collector follows in a full collection, among the containers it
    tracks that ``root`` holds (its class and everything beyond are not counted)."""
    gc.collect()  # tuples and dictionaries of plain values are untracked here
    work, seen, pending = 0, {id(root)}, [root]
    while pending:
        item = pending.pop()
        referents = gc.get_referents(item)
        work += len(referents)
        for referent in referents:
            if (
                gc.is_tracked(referent)
                and not isinstance(referent, type)
                and id(referent) not in seen
            ):
                seen.add(id(referent))
                pending.append(referent)
    return work


def test_an_index_of_a_long_page_costs_the_garbage_collector_little() -> None:
    """A research keeps an index per source it checks: a collection must not walk every
    posting of a long page (it did, on the event loop of a busy team worker)."""
    rng = random.Random(5)
    vocabulary = [f"term{number}" for number in range(400)]
    page = "\n\n".join(
        " ".join(rng.choice(vocabulary) for _ in range(80)) + "." for _ in range(1500)
    )
    index = passages.PassageIndex.build(page)
    postings = sum(len(found) // 2 for found in index.postings.values())
    assert postings > 50 * len(index.postings)  # many more postings than terms
    assert _collector_work(index) < 4 * len(index.postings) + 50
    assert index.best(["term7", "term9"], 1)  # and it still ranks


def test_a_parsed_statement_holds_exactly_the_stems_content_words_would_give() -> None:
    """A page's parse stems each distinct word once: across many statements sharing words, the
    stems each statement holds are its content words, each once."""
    rng = random.Random(7)
    words = "Indexes indexing index indexed The the a I 9 x Throughput throughputs writes writing"
    vocabulary = [*words.split(), "written", "LMDB", "lmdb's", "sizes", "sized", "classes"]
    vocabulary += ["class", "glasses", "2026", "v2", "we're", "don't"]
    lines = [
        " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 12))) for _ in range(300)
    ]
    page = parsed.parse_uncached("\n\n".join(f"{line}." for line in lines))
    assert len(page.statement_texts) >= 100
    for text, stems in zip(page.statement_texts, page.statement_stems, strict=True):
        assert sorted(stems) == sorted(set(passages.content_words(text))), text


def test_a_page_is_parsed_once_and_the_cache_keeps_only_its_bound_of_text() -> None:
    """The same text twice gives the same parse; past the cache's bound the least recently
    used page is parsed again; a parse is a few containers, not one for each sentence."""
    cache = parsed._ParseCache(limit=2_500)
    pages = [f"Page {n} says 12 ms. " * 50 for n in range(3)]  # 1,000 characters each
    first = cache.parse(pages[0])
    assert cache.parse(pages[0]) is first
    second = cache.parse(pages[1])
    cache.parse(pages[0])  # used again: page 1 is now the least recent
    cache.parse(pages[2])  # past the bound: page 1 is dropped
    assert cache.parse(pages[0]) is first
    assert cache.parse(pages[1]) is not second
    assert cache.parse(pages[1]) == second
    assert len(first.statement_texts) == 50 and first.states_figure(49)  # "12 ms": a figure
    assert len(gc.get_referents(first)) < 10


def test_a_parse_splits_each_passage_into_the_sentences_splitting_it_again_would_give() -> None:
    """The parse takes a passage's sentences from the pieces it was built of (no second
    split); headings that run on into the next paragraph, quotes, long unbroken runs cut by
    length, and Unicode spacing give what splitting the passage again gives, and each
    sentence's key is the key of that sentence."""
    rng = random.Random(11)
    tokens = ["alpha", "Beta.", "gamma!", "Delta?", "## Heading", "- item", "1. Step", "```x```"]
    tokens += ['"Quoted."', "(Paren)", "[Note]", "e.g.", "U.S.", "3.14", "v2.0.", "42", "A"]
    tokens += ["x" * 700, "end." + "Y" * 650, "| a | b |", "İstanbul", "\u00a0", "\t", "'tis"]
    for _ in range(150):
        paragraphs = [
            " ".join(rng.choice(tokens) for _ in range(rng.randint(1, 90)))
            for _ in range(rng.randint(1, 10))
        ]
        text = rng.choice(["\n\n", "\n \n", "\n"]).join(paragraphs).strip()
        page = parsed.parse_uncached(text)
        assert page.passages == tuple(passages.split_passages_with_breaks(text))
        for number, (passage, _) in enumerate(page.passages):
            again = passages.split_sentences(passage)
            keys = [page.sentence_keys[s] for s in page.sentences_of(number)]
            assert keys == [focus.sentence_key(sentence) for sentence in again], passage
            texts = [
                " ".join(page.statement_texts[n] for n in page.statements_of(s))
                for s in page.sentences_of(number)
            ]
            assert texts == [sentence.lower() for sentence in again], passage
