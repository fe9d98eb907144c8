"""The documentation-page corpus of ``benchmarks/docpages/bench.py`` keeps its promises."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from tests.fakes import RecordedRequest
from tests.fakes.docpages import DOC_QUESTIONS, FACT_DEPTHS, DocCorpus
from tests.fakes.planted import FACT_RE, facts_in

QUESTION = DOC_QUESTIONS[1]  # multiprocessing.Pool, ..., multiprocessing.pool.ThreadPool


@pytest.fixture(scope="module")
def corpus() -> DocCorpus:
    return DocCorpus(QUESTION)


def search(query: str, *, raw: bool = True, limit: int = 3) -> RecordedRequest:
    body = {"query": query, "max_results": limit, "include_raw_content": raw}
    return RecordedRequest("POST", "/search", {}, body, b"", 0.0)


def digest(corpus: DocCorpus) -> str:
    pages = [(page["url"], page["content"], page["raw_content"]) for page in corpus.all_pages()]
    return hashlib.sha256(repr(pages).encode()).hexdigest()


def test_pages_are_20_to_400_kb_and_several_are_over_150_kb(corpus: DocCorpus) -> None:
    sizes = [len(page["raw_content"]) for page in corpus.all_pages()]
    assert len(sizes) == 3 * len(QUESTION.items)
    assert min(sizes) >= 20_000
    assert max(sizes) <= 410_000
    assert sum(size > 150_000 for size in sizes) >= 3


def test_each_page_fact_sits_once_at_its_promised_depth(corpus: DocCorpus) -> None:
    texts = {page["url"]: page["raw_content"] for page in corpus.all_pages()}
    page_facts = [fact for fact in corpus.planted.values() if not fact.snippet_only]
    assert len(page_facts) == len(texts) * len(FACT_DEPTHS)
    for fact in page_facts:
        text = texts[fact.url]
        assert text.count(fact.sentence) == 1
        assert fact.at is not None and fact.depth is not None
        assert fact.at == pytest.approx(text.index(fact.sentence) / len(text), abs=1e-3)
        assert abs(fact.at - fact.depth) <= 0.01, fact
        assert fact.sentence.startswith(f"{fact.tag}: ") and fact.sentence.endswith(".")


def test_snippet_only_facts_are_in_a_snippet_and_in_no_page_text(corpus: DocCorpus) -> None:
    only = [fact for fact in corpus.planted.values() if fact.snippet_only]
    assert len(only) == len(QUESTION.items)
    every_text = "\n".join(page["raw_content"] for page in corpus.all_pages())
    for fact in only:
        assert fact.tag not in every_text
        page = next(p for p in corpus.all_pages() if p["url"] == fact.url)
        assert page["content"].startswith(fact.sentence)
        assert len(page["content"]) < 500  # the analyzer prompt shows 500 snippet characters


def test_pages_read_like_documentation(corpus: DocCorpus) -> None:
    for page in corpus.all_pages():
        text = page["raw_content"]
        assert "```python" in text or ".. code-block:: python" in text
        assert "|---|" in text and ">>> " in text
        lines = [line for line in text.splitlines() if line.strip()]
        unfinished = [line for line in lines if not line.rstrip().endswith(".")]
        assert len(unfinished) > len(lines) / 2  # code, signatures, rows and headings
        assert "multiprocessing.get_context" in text or "Pool.map" in text


def test_the_corpus_is_deterministic_and_the_seed_changes_it(corpus: DocCorpus) -> None:
    assert digest(DocCorpus(QUESTION)) == digest(corpus)
    assert digest(DocCorpus(QUESTION, seed=1)) != digest(corpus)


def test_a_query_finds_the_pages_of_the_whole_names_it_names(corpus: DocCorpus) -> None:
    def parts(query: str) -> set[Any]:
        return {FACT_RE.findall(result["raw_content"])[0].split("-")[1] for result in corpus(query)}

    assert parts("multiprocessing.Pool start-up cost") == {"multiprocessingPool"}
    assert parts("How does multiprocessing.pool.ThreadPool perform?") == {
        "multiprocessingpoolThreadPool"
    }
    assert len(parts(QUESTION.text)) == 3
    assert corpus("the Python standard library") == []


def test_served_facts_count_snippets_and_page_texts_when_asked(corpus: DocCorpus) -> None:
    query = "concurrent.futures.ProcessPoolExecutor memory use"
    results = corpus(query)
    in_snippets = facts_in(" ".join(result["content"] for result in results))
    assert corpus.served_facts([search(query, raw=False, limit=9)]) == in_snippets
    served = corpus.served_facts([search(query, limit=9)])
    assert len(served) == 3 * len(FACT_DEPTHS) + 1
    assert corpus.served_facts([search(query, limit=1)]) < served


def test_a_corpus_of_one_page_size() -> None:
    small = DocCorpus(QUESTION, pages_per_item=1, page_chars=20_000)
    assert all(19_000 <= len(p["raw_content"]) <= 22_000 for p in small.all_pages())
    assert {fact.size_bucket for fact in small.planted.values()} == {"20-50 KB"}
