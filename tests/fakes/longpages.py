"""A search corpus of long pages with planted facts, for measuring recall under token budgets.

Eight comparison questions ("Compare A, B, C and D for X", three or four items each; the fake
planner decomposes them into one sub-question per item). Each item has a few long pages
(three by default, of 2,500-6,000 words) of deterministic, varied prose built from sentence
templates. Like most long pages on the web, a page is broad: it is about its item, and only some
of its sections are about the question's topic (20-50% of its words, drawn per page; the rest are
about other uses of the item, such as Redis for job queues on a page found for Redis session
caching). On-topic sections fill the templates with the item, another item of the question, the
topic and its aspects; off-topic sections with the item, another use, and alternatives outside
the question. ``on_topic_share=1.0`` builds pages about nothing but the topic.

Each page plants three distinctive fact sentences, tagged ``FACT-<item>-<n>`` and naming their
item and topic (as :mod:`tests.fakes.planted` does), at about 10%, 50% and 90% of its words, each
in an on-topic section (a section spanning one of those depths is always on the topic). Pages
are realistic in two more ways a product must cope with:

* boilerplate: the same navigation bar, cookie notice, newsletter footer and related-reading
  block open and close every page (no fact in them);
* repetition: a few "syndicated" paragraphs (no fact in them either) appear word for word on
  two pages of two different items, so two different queries serve them.

Search behaves like :class:`tests.fakes.planted.PlantedCorpus`: a query naming one item finds
that item's pages, rotated by a query-dependent start (different searches rank differently); a
query naming several finds them interleaved; a query naming none finds nothing. Results carry
the page text as ``raw_content`` and its opening sentences as the snippet (``content``).

Use it as ``fake_tavily(LongPageCorpus(QUESTIONS[0]))``; :meth:`LongPageCorpus.served_facts`
and :func:`facts_in` count the facts searches returned and a text holds. :func:`fact_summarizer`
is a summarizer for the fake brain that, like a careful model, keeps the fact sentences it reads.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .brain import ResearchBrain
from .planted import FACT_RE, ItemCorpus, facts_in, tag_name
from .providers import slugify

__all__ = [
    "FACT_RE",
    "QUESTIONS",
    "SUMMARIZER_MARKER",
    "LongPageCorpus",
    "Question",
    "fact_summarizer",
    "facts_in",
]

# The opening words of foundry-mcp's summarizer system prompt (prompts/summarizer.py).
SUMMARIZER_MARKER = "you shorten documents"
FACT_DEPTHS = (0.10, 0.50, 0.90)


@dataclass(frozen=True)
class Question:
    """A comparison question: its items, its topic and the topic's aspects (for filler), and
    the other uses of the same items that broad pages also cover (off-topic sections)."""

    items: tuple[str, ...]
    topic: str
    aspects: tuple[str, ...]
    other_uses: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """``Compare A, B, C and D for <topic>``."""
        return f"Compare {', '.join(self.items[:-1])} and {self.items[-1]} for {self.topic}"


QUESTIONS: tuple[Question, ...] = (
    Question(
        ("Redis", "Memcached", "Hazelcast", "Aerospike"),
        "session caching",
        (
            "eviction policy",
            "replication",
            "connection pooling",
            "memory overhead",
            "persistence",
            "cluster resharding",
            "client libraries",
            "key expiry",
        ),
        ("job queues", "real-time leaderboards", "pub/sub messaging", "geospatial lookups"),
    ),
    Question(
        ("PostgreSQL", "MySQL", "SQLite"),
        "embedded analytics",
        (
            "query planning",
            "index maintenance",
            "concurrent writers",
            "storage footprint",
            "backup tooling",
            "extension support",
            "aggregate performance",
            "schema migrations",
        ),
        ("web application backends", "mobile app storage", "full-text indexing", "geographic data"),
    ),
    Question(
        ("Kafka", "RabbitMQ", "NATS", "Pulsar"),
        "event streaming",
        (
            "consumer lag",
            "partition rebalancing",
            "message retention",
            "delivery guarantees",
            "broker storage",
            "schema evolution",
            "back pressure",
            "multi-tenancy",
        ),
        ("task queues", "IoT device messaging", "request-reply RPC", "log shipping"),
    ),
    Question(
        ("Nginx", "Envoy", "HAProxy"),
        "edge load balancing",
        (
            "TLS termination",
            "health checking",
            "connection draining",
            "configuration reloads",
            "rate limiting",
            "observability hooks",
            "HTTP/2 support",
            "retry budgets",
        ),
        (
            "static file serving",
            "service mesh sidecars",
            "API gateway plugins",
            "web application firewalls",
        ),
    ),
    Question(
        ("Prometheus", "InfluxDB", "TimescaleDB", "VictoriaMetrics"),
        "metrics storage",
        (
            "cardinality limits",
            "compaction",
            "downsampling",
            "query language",
            "retention tiers",
            "remote write",
            "disk usage",
            "alert evaluation",
        ),
        ("IoT sensor logging", "financial tick data", "log analytics", "capacity forecasting"),
    ),
    Question(
        ("Kubernetes", "Nomad", "Docker Swarm"),
        "container orchestration",
        (
            "scheduling",
            "service discovery",
            "secret management",
            "rolling updates",
            "network policy",
            "node autoscaling",
            "control plane upkeep",
            "multi-region setups",
        ),
        ("batch job scheduling", "device fleets", "developer laptops", "CI runners"),
    ),
    Question(
        ("Terraform", "Pulumi", "Ansible", "Chef"),
        "infrastructure provisioning",
        (
            "state management",
            "drift detection",
            "module reuse",
            "secret handling",
            "plan review",
            "provider coverage",
            "idempotence",
            "team workflows",
        ),
        ("application deployment", "compliance reporting", "laptop setup", "network automation"),
    ),
    Question(
        ("Elasticsearch", "OpenSearch", "Meilisearch"),
        "product search",
        (
            "relevance tuning",
            "index refresh",
            "shard sizing",
            "typo tolerance",
            "faceting",
            "ingest pipelines",
            "query latency",
            "synonym handling",
        ),
        ("log analytics", "security analytics", "document archives", "geospatial queries"),
    ),
)

# What each fact says: one template filled with its item, topic and figures.
_FACT_TEMPLATES = (
    "{tag}: In the {year} {topic} benchmark, {item} sustained {a},{b}00 operations a second "
    "on a single eight-core node.",
    "{tag}: {item} kept its p99 latency under {a} ms throughout the {topic} soak test of {year}.",
    "{tag}: A {topic} deployment of {item} needed {b} GB of memory per million entries in the "
    "vendor-neutral trial.",
    "{tag}: {item} recovered from a forced node failure in {a} seconds during the {topic} "
    "resilience drill.",
    "{tag}: {b}0 percent of the teams surveyed in {year} run {item} for {topic} in production.",
    "{tag}: {item} lost no acknowledged writes across {a} network partition tests for {topic}.",
    "{tag}: Upgrading {item} between major versions took {a} minutes of planned downtime in the "
    "{topic} case study.",
    "{tag}: The {topic} cost model put {item} at {a}0 dollars a month for a three-node cluster.",
)

# Filler: plausible prose about the item and topic, none of it a tagged fact.
_FILLER = (
    "{item} is often the first name that comes up when teams plan {topic}, and the reasons are "
    "partly historical.",
    "Most of the {topic} guidance written about {item} assumes a small cluster and a "
    "predictable workload.",
    "When people discuss {item} for {topic}, the conversation usually turns to {aspect} within "
    "the first few minutes.",
    "The documentation for {item} covers {aspect} in detail but says little about how it "
    "interacts with {aspect2}.",
    "Anyone evaluating {item} for {topic} should read the release notes of the last few "
    "versions before deciding.",
    "The {topic} community around {item} has grown steadily since {year}, with regular meetups "
    "and a busy issue tracker.",
    "Early versions of {item} treated {aspect} as an afterthought, which still shapes how many "
    "teams configure it.",
    "The project behind {item} changed its governance model around {year}, and that change "
    "still colours how people talk about it.",
    "Version {version} of {item} reworked {aspect}, so several older tutorials on {topic} are "
    "now misleading.",
    "In day-to-day operation, {role} spend most of their time on {aspect} rather than on "
    "{aspect2}.",
    "A typical {topic} setup with {item} runs {n} nodes behind a load balancer, with {aspect} "
    "tuned per environment.",
    "The runbooks we reviewed for {item} devote whole chapters to {aspect}, which says "
    "something about where the pain is.",
    "Monitoring {item} for {topic} mostly means watching {aspect} and alerting before "
    "{aspect2} becomes a problem.",
    "Capacity planning for {item} starts with an honest estimate of {aspect}, and most teams "
    "underestimate it at first.",
    "Rolling restarts of {item} are routine for {role}, provided {aspect} has been configured "
    "with some headroom.",
    "Backups and restores are where {item} deployments for {topic} differ most from the "
    "defaults in the documentation.",
    "The {role} we spoke to were broadly positive about {item}, though few of them would call "
    "it effortless.",
    "One engineer described {item} as boring in the best sense for {topic}, which is high "
    "praise in operations.",
    "Opinions on {item} split along familiar lines: those who value {aspect} and those who "
    "care more about {aspect2}.",
    "Several {role} told us that {aspect} in {item} is good enough for {topic} but not "
    "something they would build a product on.",
    "For {team}, the deciding factor in adopting {item} was not speed but {aspect}.",
    "None of this means {item} is a poor fit for {topic}; it means the defaults deserve scrutiny.",
    "The figures vendors quote for {item} rarely account for {aspect}, so treat them as an "
    "upper bound.",
    "It is worth repeating that {topic} workloads vary widely, and a result for one team may "
    "not carry over to another.",
    "Misconfigured {aspect} explains a surprising share of the {item} incidents we read about.",
    "Licensing questions around {item} come up regularly, and a legal review is worth "
    "scheduling early.",
    "Compared with {other}, {item} asks more of its operators up front but springs fewer "
    "surprises later, at least for {topic}.",
    "Teams moving from {other} to {item} usually cite {aspect} as the reason, and {aspect2} as "
    "the surprise.",
    "{other} and {item} converge on many {topic} features, so the differences show up mostly "
    "in {aspect}.",
    "Where {other} favours simplicity, {item} exposes more knobs for {aspect}, which cuts both "
    "ways.",
    "Our review drew on public postmortems, conference talks and {n} interviews with {role} "
    "who run {item} for {topic}.",
    "The load profiles discussed here mimic {topic} traffic, with a mix of reads and writes "
    "and occasional bursts.",
    "Every measurement of {item} mentioned here was repeated at least {n} times, and outliers "
    "are discussed rather than dropped.",
    "We focus on {aspect} and {aspect2} because those are where {topic} deployments most often "
    "go wrong.",
    "In an informal poll of {n}0 readers, roughly {pct} percent said they had run {item} in "
    "some form.",
    "The median {topic} cluster in our sample ran {item} version {version} or later.",
    "About {pct} percent of the {item} issues filed last year mentioned {aspect} in the title.",
    "That history matters for {topic}, because {aspect} is exactly where the older design shows.",
    "The practical consequence is that {aspect} needs attention long before traffic grows.",
    "This is not unique to {item}, but it is more visible there than in most alternatives.",
    "Put differently, {item} rewards teams that invest in {aspect} early.",
    "There is a learning curve with {item}, and it is steepest around {aspect}.",
    "The trade-off is real, and the right answer depends on how much {aspect2} the team can "
    "tolerate.",
    "Tooling around {item} has improved, with better dashboards and clearer error messages "
    "for {aspect}.",
    "The upgrade path from older releases of {item} is documented, though the {aspect} "
    "changes need care.",
    "For {topic} specifically, the interaction between {aspect} and {aspect2} is the detail "
    "most worth testing.",
    "Small teams tend to run {item} with defaults, while larger ones rewrite most of the "
    "{aspect} settings.",
    "Hosted offerings of {item} hide some of the {aspect} work but add their own limits on "
    "{aspect2}.",
    "A proof of concept with {item} takes days; a production-ready {topic} deployment usually "
    "takes months.",
    "Security reviews of {item} tend to focus on {aspect}, authentication and the exposure of "
    "admin interfaces.",
)

# Openings that vary the filler sentences (the template's first word is then lower-cased).
_OPENINGS = (
    "",
    "",
    "",
    "In practice, ",
    "According to the operators we interviewed, ",
    "Perhaps unsurprisingly, ",
    "On the other hand, ",
    "Admittedly, ",
    "As of {year}, ",
    "In our experience, ",
    "By most accounts, ",
    "For what it is worth, ",
)
# Filler that already opens with a connective takes no opening.
_CONNECTIVES = (
    "Put ",
    "That ",
    "This ",
    "The trade-off",
    "The practical",
    "None ",
    "It is",
    "For ",
    "When ",
    "Where ",
    "Compared ",
    "In ",
)
_ROLES = (
    "site reliability engineers",
    "platform engineers",
    "backend developers",
    "database administrators",
    "infrastructure leads",
    "on-call engineers",
)
_TEAMS = (
    "a payments team at a mid-sized bank",
    "the platform group of an online retailer",
    "a two-person startup",
    "a public-sector digital service",
    "a game studio with seasonal peaks",
    "a logistics company running three regions",
)
_TITLES = (
    "a field report",
    "lessons from production",
    "benchmark notes",
    "an operator's guide",
    "a deep dive",
    "what we learned in a year",
)
_SITES = (
    "fieldnotes.example.com",
    "opsreview.example.org",
    "benchmarks.example.net",
    "engineering.example.io",
)

# Boilerplate every page carries, word for word.
NAVIGATION = (
    "Home | Guides | Benchmarks | Case studies | Newsletter | About us | Search this site. "
    "Skip to main content."
)
COOKIE_NOTICE = (
    "We use cookies and similar technologies to keep this site working, to understand how it "
    "is used and to show you relevant content. You can accept all cookies, reject the optional "
    "ones, or choose which categories to allow in the settings. Your choice is stored for "
    "twelve months and you can change it at any time from the link in the footer. Accept all | "
    "Reject optional | Cookie settings."
)
NEWSLETTER = (
    "Enjoyed this article? Subscribe to our weekly newsletter for hands-on guides, benchmark "
    "results and interviews with the engineers who run production systems. We send one email "
    "a week, never share your address, and every issue has a one-click unsubscribe link. "
    "Subscribe now."
)
RELATED = (
    "Related reading: Choosing a datastore without regrets | Ten questions to ask before a "
    "migration | How we load test | Reading postmortems well. Copyright Field Notes Media. All "
    "rights reserved. Privacy policy | Terms of use | Cookie settings | Contact."
)
HEADER = (NAVIGATION, COOKIE_NOTICE)
FOOTER = (NEWSLETTER, RELATED)
SHARED_PER_QUESTION = 3  # syndicated paragraphs, each on two pages of two different items

# How much of a page is about the question's topic: drawn per page from this range, unless the
# corpus is built with a fixed share (1.0: every section on the topic).
ON_TOPIC_SHARE = (0.2, 0.5)
_PARAGRAPH_WORDS = 100  # a filler paragraph's usual length, to foresee a section's span

# Off-topic sections: another use of the item, with aspects any product has, compared with
# alternatives outside the question.
_OFF_TOPIC_FILLER = (
    *(t for t in _FILLER if "{other}" not in t),
    "Compared with {other}, {item} asks more of its operators up front for {topic}.",
    "Teams moving from {other} to {item} for {topic} usually cite {aspect} as the reason.",
)
_OFF_TOPIC_ASPECTS = (
    "pricing tiers",
    "release cadence",
    "vendor support",
    "documentation quality",
    "training courses",
    "hosting options",
    "community plugins",
    "upgrade tooling",
)
_ALTERNATIVES = (
    "a home-grown tool",
    "the previous system",
    "a managed cloud service",
    "an older open-source project",
)


class LongPageCorpus(ItemCorpus):
    """A callable Tavily corpus for one :class:`Question`: ``query -> results`` (see module).

    ``on_topic_share`` fixes the share of every page that is about the question's topic
    (``None``: drawn per page from ``ON_TOPIC_SHARE``; ``1.0``: pages about nothing else).
    """

    def __init__(
        self,
        question: Question,
        *,
        pages_per_item: int = 3,
        min_words: int = 2500,
        max_words: int = 6000,
        seed: int = 0,
        on_topic_share: float | None = None,
    ) -> None:
        super().__init__(question.items)
        self.question = question
        self.seed = seed
        self.on_topic_share = on_topic_share
        self.shared = [self._shared_paragraph(k) for k in range(SHARED_PER_QUESTION)]
        self.pages = {
            item: [self._page(item, n, min_words, max_words) for n in range(1, pages_per_item + 1)]
            for item in question.items
        }

    @property
    def depths(self) -> dict[str, float]:
        """Each fact's nominal depth in its page (one of ``FACT_DEPTHS``)."""
        return {
            tag: depth
            for page in self.all_pages()
            for tag, depth in zip(page["facts"], FACT_DEPTHS, strict=True)
        }

    def all_pages(self) -> list[dict[str, Any]]:
        """Every page, item by item."""
        return [page for pages in self.pages.values() for page in pages]

    def rank_seed(self, query: str) -> int:
        return _digest(f"{self.seed}|{' '.join(query.lower().split())}")

    # ------------------------------------------------------------------ page building

    def _page(self, item: str, number: int, min_words: int, max_words: int) -> dict[str, Any]:
        rng = random.Random(f"{self.seed}|{self.question.text}|{item}|{number}")
        words = rng.randint(min_words, max_words)
        share = self.on_topic_share
        if share is None:
            share = rng.uniform(*ON_TOPIC_SHARE)
        body, kinds = self._body(rng, item, words, share)
        self._insert_shared(body, kinds, item, number)
        facts = [
            self._fact(item, (number - 1) * len(FACT_DEPTHS) + k + 1)
            for k in range(len(FACT_DEPTHS))
        ]
        header_words = sum(len(p.split()) for p in HEADER)
        _plant(body, kinds, [sentence for _, sentence in facts], header_words)
        text = "\n\n".join([*HEADER, *(" ".join(p) for p in body), *FOOTER])
        site = _SITES[_digest(item + str(number)) % len(_SITES)]
        body_words = [len(" ".join(p).split()) for p in body]
        on_words = sum(n for n, kind in zip(body_words, kinds, strict=True) if kind != "off")
        subject = f"{item} for {self.question.topic}" if share >= 0.5 else item
        return {
            "title": f"{subject}: {_TITLES[(number - 1) % len(_TITLES)]}",
            "url": f"https://{site}/{slugify(item)}/{slugify(self.question.topic)}-{number}",
            "content": " ".join([s for s in body[0] if not FACT_RE.search(s)][:2]),
            "raw_content": text,
            "facts": [tag for tag, _ in facts],
            "depths": [round(text.index(sentence) / len(text), 3) for _, sentence in facts],
            "words": len(text.split()),
            "on_topic_share": round(on_words / max(1, sum(body_words)), 3),
        }

    def _body(
        self, rng: random.Random, item: str, words: int, share: float
    ) -> tuple[list[list[str]], list[str]]:
        """Paragraphs (as sentences) of about ``words`` words, in sections of two to four, and
        each paragraph's kind: ``on`` (the question's topic), ``off`` (another use of the item)
        or ``shared`` (a syndicated paragraph).

        About ``share`` of the words are on the topic; a section that spans one of the fact
        depths is always on it, so each fact sits in on-topic prose near its nominal depth.
        """
        frame = sum(len(p.split()) for p in HEADER + FOOTER)
        body: list[list[str]] = []
        kinds: list[str] = []
        used: set[str] = set()
        count = on_words = 0
        header = sum(len(p.split()) for p in HEADER)
        pending = list(FACT_DEPTHS)  # depths no on-topic section has reached yet
        while frame + count < words:
            paragraphs = rng.randint(2, 4)
            reach = (header + count + paragraphs * _PARAGRAPH_WORDS) / words
            on = any(depth < reach for depth in pending) or on_words < share * count
            use = rng.choice(self.question.other_uses) if self.question.other_uses else None
            on = on or use is None
            for _ in range(paragraphs):
                body.append(self._paragraph(rng, item, used, use=None if on else use))
                kinds.append("on" if on else "off")
                words_added = sum(len(s.split()) for s in body[-1])
                count += words_added
                on_words += words_added if on else 0
            if on:
                pending = [d for d in pending if d >= (header + count) / words]
        return body, kinds

    def _insert_shared(
        self, body: list[list[str]], kinds: list[str], item: str, number: int
    ) -> None:
        """Put the syndicated paragraphs this page carries into its first on-topic third."""
        for k, paragraph in enumerate(self.shared):
            if number == self._shared_page(k, item):
                at = len(body) // 3 + k
                body.insert(at, [paragraph])
                kinds.insert(at, "shared")

    def _paragraph(
        self, rng: random.Random, item: str, used: set[str], use: str | None = None
    ) -> list[str]:
        """Four to seven filler sentences, none already used on the page: about the question's
        topic, or about ``use`` (another use of the item) when given."""
        templates = _FILLER if use is None else _OFF_TOPIC_FILLER
        sentences = []
        for template in rng.sample(templates, rng.randint(4, 7)):
            for _ in range(4):
                sentence = self._sentence(rng, item, template, use)
                if sentence not in used:
                    used.add(sentence)
                    sentences.append(sentence)
                    break
        return sentences

    def _sentence(
        self, rng: random.Random, item: str, template: str, use: str | None = None
    ) -> str:
        others = [i for i in self.question.items if i != item]
        aspect, aspect2 = rng.sample(
            self.question.aspects if use is None else _OFF_TOPIC_ASPECTS, 2
        )
        opening = "" if template.startswith(_CONNECTIVES) else rng.choice(_OPENINGS)
        if opening and not template.startswith("{"):
            template = opening + template[0].lower() + template[1:]
        elif opening:
            template = opening + template
        return template.format(
            item=item,
            other=rng.choice(others if use is None else _ALTERNATIVES),
            topic=self.question.topic if use is None else use,
            aspect=aspect,
            aspect2=aspect2,
            role=rng.choice(_ROLES),
            team=rng.choice(_TEAMS),
            n=rng.randint(3, 12),
            pct=rng.randint(12, 88),
            year=rng.randint(2016, 2024),
            version=f"{rng.randint(2, 9)}.{rng.randint(0, 12)}",
        )

    def _shared_paragraph(self, k: int) -> str:
        items = self.question.items
        first, second = items[k % len(items)], items[(k + 1) % len(items)]
        rng = random.Random(f"{self.seed}|{self.question.text}|shared|{k}")
        sentences = [
            f"This section is syndicated from the {self.question.topic} quarterly review, where "
            f"{first} and {second} were discussed side by side.",
            *(self._sentence(rng, rng.choice((first, second)), t) for t in rng.sample(_FILLER, 5)),
        ]
        return " ".join(sentences)

    def _shared_page(self, k: int, item: str) -> int | None:
        """The page of ``item`` that carries shared paragraph ``k`` (page 2 of one item, page 3
        of the next), if any."""
        count = len(self.question.items)
        index = self.question.items.index(item)
        if index == k % count:
            return 2
        if index == (k + 1) % count:
            return 3
        return None

    def _fact(self, item: str, n: int) -> tuple[str, str]:
        """The tag and sentence of fact ``n`` of ``item``."""
        tag = f"FACT-{tag_name(item)}-{n}"
        digest = hashlib.sha256(f"{self.question.text}|{item}|{n}".encode()).digest()
        template = _FACT_TEMPLATES[(n - 1 + digest[3]) % len(_FACT_TEMPLATES)]
        return tag, template.format(
            tag=tag,
            item=item,
            topic=self.question.topic,
            a=digest[0] % 90 + 10,
            b=digest[1] % 9 + 1,
            year=2019 + digest[2] % 7,
        )


def _plant(body: list[list[str]], kinds: list[str], facts: list[str], header_words: int) -> None:
    """Insert each fact after the on-topic sentence nearest to its depth (``FACT_DEPTHS``).

    Facts never open a paragraph (a fact follows a sentence of its paragraph), so sentence
    splitting always finds them whole; off-topic and shared paragraphs are left as they are.
    """
    total = header_words + sum(len(s.split()) for p in body for s in p)
    for depth, fact in zip(FACT_DEPTHS, facts, strict=True):
        target = depth * total
        seen = header_words
        spots: list[tuple[float, int, int]] = []  # (distance to the target, paragraph, sentence)
        for number, paragraph in enumerate(body):
            for index, sentence in enumerate(paragraph):
                seen += len(sentence.split())
                if kinds[number] == "on":
                    spots.append((abs(seen - target), number, index))
        if not spots:
            raise ValueError("a page needs an on-topic paragraph for its facts")
        _, number, index = min(spots)
        body[number].insert(index + 1, fact)


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


# --------------------------------------------------------------------------- summarizer

_DOCUMENT_RE = re.compile(r"<document\b[^>]*>\n(.*)\n</document>", re.DOTALL)
_WORDS_RE = re.compile(r"\b(?:about|at most) (\d+) words\b")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def fact_summarizer(brain: ResearchBrain) -> Callable[[str, str], str]:
    """A handler for ``brain.overrides["other"]`` that answers summarizer prompts.

    Like a careful model told to keep facts and figures, it keeps every fact sentence of the
    document it reads (in order), then fills up to the asked number of words with the
    document's other sentences from the start. Other prompts get the brain's default answer.
    """

    def answer(system: str, user: str) -> str:
        if SUMMARIZER_MARKER not in system.lower():
            return "This is a deterministic answer from the fake research brain."
        document = _DOCUMENT_RE.search(user)
        text = " ".join((document.group(1) if document else user).split())
        asked = _WORDS_RE.search(user)
        budget = int(asked.group(1)) if asked else 100
        sentences = _SENTENCE_RE.split(text)
        kept = {i for i, s in enumerate(sentences) if FACT_RE.search(s)}
        words = sum(len(sentences[i].split()) for i in kept)
        for i, sentence in enumerate(sentences):
            if words >= budget:
                break
            if i not in kept:
                kept.add(i)
                words += len(sentence.split())
        return " ".join(sentences[i] for i in sorted(kept))

    return answer
