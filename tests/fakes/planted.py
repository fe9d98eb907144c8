"""A search corpus with planted facts, for measuring which facts a research carries to its report.

A comparison question ("Compare A, B, C and D for X") names items; each item has a few pages,
and every sentence of a page is a distinctive fact tagged ``FACT-<item>-<n>``. A query naming one
item finds that item's pages (in an order that depends on the query, as different searches rank
pages differently); a query naming several items (a whole-question search) finds a survey: the
pages of each item interleaved, from a point that depends on the query. Queries naming no item
find nothing.

Use it as ``fake_tavily(PlantedCorpus(items, topic))``; :meth:`PlantedCorpus.served_facts` and
:func:`facts_in` count the facts that searches returned and that a text (a report) holds.
:func:`fact_analyst` is an analyzer for the fake brain that reports every fact it reads.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from .brain import ResearchBrain, parts_for, source_sentences
from .http import RecordedRequest
from .providers import slugify

FACT_RE = re.compile(r"\bFACT-[A-Za-z0-9]+-\d+\b")

# What each fact sentence says; a fact is one template filled with its item and its figures.
_TEMPLATES = (
    "{tag}: {item} served {a},{b}00 requests a second per core in the {topic} load test.",
    "{tag}: {item} kept its p99 latency under {a} ms in the {topic} soak test of {year}.",
    "{tag}: {item} needed {b} GB of memory for one million entries in the {topic} trial.",
    "{tag}: {item} recovered from a node failure in {a} seconds during the {topic} drill.",
    "{tag}: {item} is used by {b}0 percent of surveyed teams for {topic} in {year}.",
    "{tag}: {item} lost no acknowledged writes in {a} partition tests for {topic}.",
)


def facts_in(text: str | None) -> set[str]:
    """The planted fact tags (``FACT-<item>-<n>``) a text holds."""
    return set(FACT_RE.findall(text or ""))


class ItemCorpus:
    """A callable Tavily corpus of pages about the items of a comparison (see module).

    A query naming one item finds that item's pages; a query naming several finds their pages
    interleaved; a query naming none finds nothing. The ranking starts at a point that depends
    on the query (:meth:`rank_seed`), as different searches rank pages differently.
    """

    RESULT_KEYS = ("title", "url", "content", "raw_content")

    def __init__(self, items: Iterable[str]) -> None:
        self.items = list(items)
        self.pages: dict[str, list[dict[str, Any]]] = {}

    @property
    def facts(self) -> set[str]:
        """Every planted fact tag."""
        return {tag for pages in self.pages.values() for page in pages for tag in page["facts"]}

    def rank_seed(self, query: str) -> int:
        """Where the ranking of ``query``'s results starts."""
        return _rank_seed(query)

    def __call__(self, query: str) -> list[dict[str, Any]]:
        named = [item for item in self.items if names(query, item)]
        if len(named) == 1:
            pages = self.pages[named[0]]
        else:
            pages = [
                page
                for group in zip(*(self.pages[i] for i in named), strict=True)
                for page in group
            ]
        start = self.rank_seed(query) % len(pages) if pages else 0
        ranked = pages[start:] + pages[:start]
        return [
            {key: page[key] for key in self.RESULT_KEYS} | {"score": round(0.95 - 0.05 * rank, 3)}
            for rank, page in enumerate(ranked)
        ]

    def served_facts(self, requests: Iterable[RecordedRequest]) -> set[str]:
        """The facts in the results the fake returned to these ``/search`` requests."""
        found: set[str] = set()
        for request in requests:
            body = request.json or {}
            limit = int(body.get("max_results") or 5)
            for result in self(str(body.get("query") or ""))[:limit]:
                found |= facts_in(result["raw_content"])
        return found


class PlantedCorpus(ItemCorpus):
    """Short pages whose every sentence is a planted fact (see module)."""

    def __init__(
        self,
        items: Iterable[str],
        topic: str,
        *,
        pages_per_item: int = 4,
        facts_per_page: int = 3,
    ) -> None:
        super().__init__(items)
        self.topic = topic
        self.pages = {
            item: [self._page(item, n, facts_per_page) for n in range(1, pages_per_item + 1)]
            for item in self.items
        }

    def _page(self, item: str, number: int, facts_per_page: int) -> dict[str, Any]:
        tags = []
        sentences = []
        for k in range(facts_per_page):
            n = (number - 1) * facts_per_page + k + 1
            digest = hashlib.sha256(f"{item}|{n}".encode()).digest()
            tag = f"FACT-{tag_name(item)}-{n}"
            template = _TEMPLATES[(n - 1) % len(_TEMPLATES)]
            sentences.append(
                template.format(
                    tag=tag,
                    item=item,
                    topic=self.topic,
                    a=digest[0] % 90 + 10,
                    b=digest[1] % 9 + 1,
                    year=2019 + digest[2] % 7,
                )
            )
            tags.append(tag)
        raw = " ".join(sentences)
        return {
            "title": f"{item} for {self.topic}: field report {number}",
            "url": f"https://reports.example.com/{slugify(item)}/{number}",
            "content": sentences[0],
            "raw_content": raw,
            "facts": tags,
        }


def tag_name(item: str) -> str:
    """An item's name as it appears in its fact tags."""
    return re.sub(r"[^A-Za-z0-9]+", "", item) or "item"


def names(query: str, item: str) -> bool:
    """Whether ``query`` names ``item`` (as a whole word, any case)."""
    return re.search(rf"\b{re.escape(item)}\b", query, re.IGNORECASE) is not None


def _rank_seed(query: str) -> int:
    return int(hashlib.sha256(" ".join(query.lower().split()).encode()).hexdigest()[:8], 16)


def fact_analyst(brain: ResearchBrain) -> Callable[[str, str], str]:
    """An analyzer for ``brain.overrides["analyzer"]`` that reports every planted fact it reads.

    The default fake analyst restates at most three sentences per call, whichever its position
    rule picks; this one, like a careful analyst, makes each fact sentence of each source a
    finding citing that source (gaps and source ratings as the default one gives them).
    """

    def analyze(system: str, user: str) -> str:
        answer = brain.analyze(user)
        findings = [
            {
                "content": sentence,
                "confidence": "high",
                "source_ids": [source_id],
                "parts": parts_for(user, sentence),
            }
            for source_id, sentences in source_sentences(user).items()
            for sentence in sentences
            if FACT_RE.search(sentence)
        ]
        return json.dumps({**answer, "findings": findings or answer["findings"]}, indent=2)

    return analyze
