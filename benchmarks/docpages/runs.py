"""One research on documentation pages, measured: the fakes, the settings, the figures.

:func:`research_once` researches one question of ``tests/fakes/docpages.py`` in process
(``research_runtime`` + ``ResearchService``, the OpenAI and Tavily fakes with the latency of
``benchmarks/simulated.py``) at a budget, and reads what happened from the fakes and from the
saved state: the facts at each stage, the claim checks, the state bytes written. The models are
careful fakes, so a fact is lost where foundry-mcp leaves it out: the analyst makes a finding of
every fact sentence it is shown (page text or snippet), the summarizer keeps fact sentences,
the writer restates every finding, and the fact-checker passes a claim whose words and figures
are in its excerpts. :class:`Pool` pools runs for the figures ``benchmarks/docpages/bench.py`` prints.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.simulated import research_to_end, run_settings, simulate_latency
from foundry_mcp.config import DEFAULT_MODELS, Settings
from foundry_mcp.context.limits import model_limits
from foundry_mcp.research.models import EvidenceQuote, ResearchState
from foundry_mcp.research.verification.section import EVIDENCE_HEADING
from foundry_mcp.runtime import research_runtime

try:  # the JSON a store writes of a state (without page text, once pages are kept apart)
    from foundry_mcp.research.store.states import Snapshot
except ImportError:  # before saves wrote snapshots
    Snapshot = None
try:
    from foundry_mcp.research.store.states import encode_state
except ImportError:  # a store that writes the whole state, or snapshots
    encode_state = None
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_openai, fake_tavily
from tests.fakes.brain import SOURCE_TEXT_RE, parts_for
from tests.fakes.docpages import DocCorpus, PlantedFact
from tests.fakes.longpages import fact_summarizer
from tests.fakes.planted import facts_in
from tests.fakes.sent import page_text_sent

OPTIONS: dict[str, Any] = {
    "max_concurrent": 4,
    "max_sub_queries": 3,
    "max_sources_per_query": 3,
    "max_iterations": 1,
}
MODEL = DEFAULT_MODELS["openai"]
STAGES = ("searched", "analysis prompts", "findings", "writer prompts", "report")
# A fact sentence as the analyst reads it: from its tag to its full stop (dotted names and
# figures such as 3.12 do not end it).
FACT_SENTENCE_RE = re.compile(r"FACT-[A-Za-z0-9]+-\d+:[^\n]*?\.(?=\s|$)")
CITATION_RE = re.compile(r"\s*\[(?:src-[0-9a-f]{8}|\d+)(?:[,;\s]+(?:src-[0-9a-f]{8}|\d+))*\]")
REPORT_CITATION_RE = re.compile(r"\[(\d+)\]")


def default_window() -> int:
    """The context window of the default OpenAI model."""
    return int(model_limits(MODEL, "openai").context_window)


BUDGETS: dict[str, int | None] = {
    "full": None,
    "10%": max(1000, default_window() // 10),
    "16k": 16_000,
    "8k": 8_000,
}


@dataclass
class StateWrites:
    """The state JSON the store was asked to write (saves, creates, branch saves)."""

    saves: int = 0
    bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, state: Any) -> None:
        if Snapshot is not None:  # a run's snapshot, or a state the store takes one of
            stored = (state if isinstance(state, Snapshot) else Snapshot.of(state)).json
        else:
            stored = (encode_state or ResearchState.model_dump_json)(state)
        size = len(stored.encode())
        with self._lock:
            self.saves += 1
            self.bytes += size


def count_state_writes(store: Any) -> StateWrites:
    """Wrap the store instance's ``save``, ``create`` and ``save_branch`` to count bytes."""
    writes = StateWrites()
    for name in ("save", "create", "save_branch"):
        original: Callable[..., Any] = getattr(store, name)

        def wrapped(state: Any, *args: Any, _call: Any = original, **kw: Any) -> Any:
            writes.count(state)
            return _call(state, *args, **kw)

        setattr(store, name, wrapped)
    return writes


@dataclass
class Claim:
    """One checked claim bearing on the figures: its verdict and where its quotes came from."""

    sentence: str
    verdict: str
    facts: set[str]
    quoted_fields: set[str] | None  # None: the product does not record which field
    verbatim_in: str | None  # "page text", "snippet" or None: its cited sources lack it


@dataclass
class Run:
    """What one research measured."""

    number: int
    mode: str
    budget: str
    page_chars: int | None = None
    status: str = "not run"
    error: str | None = None
    wall: float = 0.0
    llm_calls: int = 0
    searches: int = 0
    prompt_tokens: int = 0
    facts: dict[str, set[str]] = field(default_factory=dict)  # stage -> facts
    claims: list[Claim] = field(default_factory=list)
    citations: int = 0  # distinct numbered citations in the report
    writes: StateWrites = field(default_factory=StateWrites)
    effort: str = "standard"
    sent: int = 0  # characters of page text in the analysis prompts, every time sent
    distinct: int = 0  # characters of the distinct page text among them

    @property
    def resent(self) -> float:
        """Page text sent to the analyst over the distinct text sent (1.0: each read once)."""
        return self.sent / self.distinct if self.distinct else 1.0

    def reached(self, stage: str) -> set[str]:
        return self.facts.get(stage, set()) & self.facts.get("searched", set())


def fact_analyst(brain: ResearchBrain) -> Callable[[str, str], str]:
    """An analyst that makes a finding of each fact sentence of each source it is shown, in
    the page text or the snippet (the planted analyst reads only the ``Content:`` part)."""

    def analyze(system: str, user: str) -> str:
        answer = brain.analyze(user)
        findings = [
            {
                "content": sentence,
                "confidence": "high",
                "source_ids": [source_id],
                "parts": parts_for(user, sentence),
            }
            for source_id, block in SOURCE_TEXT_RE.findall(user)
            for sentence in dict.fromkeys(FACT_SENTENCE_RE.findall(block))
        ]
        return json.dumps({**answer, "findings": findings or answer["findings"]}, indent=2)

    return analyze


def careful_brain() -> ResearchBrain:
    """The fake models of a run (see the module)."""
    brain = ResearchBrain()
    brain.check_figures = True
    brain.overrides.update(analyzer=fact_analyst(brain), other=fact_summarizer(brain))
    return brain


def settings_for(
    tmp: Path,
    llm: FakeHTTPServer,
    search: FakeHTTPServer,
    budget: str,
    reading_budget: int | None = None,
) -> Settings:
    """Settings against the fakes: no page fetching, no retries, the budget's window, and the
    configuration's reading budget when one is given."""
    lines = ["[research]"]
    if reading_budget is not None:
        lines.append(f"deep_research_reading_budget = {reading_budget}")
    window = BUDGETS[budget]
    if window is not None:
        lines += [
            f'model_context_overrides = {{ "{MODEL}" = {window} }}',
            "allow_content_dropping = true",
        ]
    lines += ["", "[research.fetch]", "enabled = false", ""]
    lines += ["[providers.openai]", "max_retries = 0", "", "[providers.tavily]", "max_retries = 0"]
    return run_settings(tmp, llm, search, "\n".join(lines) + "\n")


async def research_once(
    number: int,
    corpus: DocCorpus,
    mode: str,
    budget: str,
    effort: str = "standard",
    reading_budget: int | None = None,
) -> Run:
    """Research ``corpus``'s question in ``mode`` at ``budget`` and ``effort`` (its other
    limits fixed by :data:`OPTIONS`, so only what it reads differs) and measure it."""
    run = Run(number, mode, budget, corpus.page_chars, effort=effort)
    options = {**OPTIONS, **({"effort": effort} if effort != "standard" else {})}
    brain = careful_brain()
    with (
        fake_openai(brain) as llm,
        fake_tavily(corpus) as search,
        tempfile.TemporaryDirectory(prefix="docpages-") as tmp,
    ):
        simulate_latency(llm, search)
        async with research_runtime(
            settings_for(Path(tmp), llm, search, budget, reading_budget)
        ) as service:
            run.writes = count_state_writes(service.store)
            run.wall, status, state = await research_to_end(
                service, corpus.question.text, mode=mode, **options
            )
            branches = list(service.store.load_branches(state.id).values())
        run.status, run.error = status["status"], status.get("error")
        run.prompt_tokens = int(status["usage"]["total"]["input_tokens"])
        run.llm_calls = len(llm.requests_to("/v1/chat/completions"))
        searches = search.requests_to("/search")
        run.searches = len(searches)
        prompts = {agent: "" for agent in ("analyzer", "writer")}
        for agent, _, user in brain.history:
            if agent in prompts:
                prompts[agent] += user + "\n"
        texts = {page["url"]: page["raw_content"] for page in corpus.all_pages()}
        read = {
            source.id: texts[source.url]
            for s in (state, *branches)
            for source in s.sources
            if source.url in texts
        }
        run.sent, run.distinct = page_text_sent(
            (user for agent, _, user in brain.history if agent == "analyzer"), read
        )
        findings = [f.content for s in (state, *branches) for f in s.findings]
        run.facts = {
            "searched": corpus.served_facts(searches),
            "analysis prompts": facts_in(prompts["analyzer"]),
            "findings": facts_in("\n".join(findings)),
            "writer prompts": facts_in(prompts["writer"]),
            "report": facts_in(report_body(state.report)),
        }
        run.claims = read_claims((state, *branches), corpus)
        run.citations = len(set(REPORT_CITATION_RE.findall(report_body(state.report))))
    return run


def read_claims(states: tuple[ResearchState, ...], corpus: DocCorpus) -> list[Claim]:
    """The research's claim checks (``states[0]``'s), each with where its sentence is verbatim
    in the sources it cites (the page text and snippet the search served for their address)."""
    pages = {page["url"]: page for page in corpus.all_pages()}
    sources = {source.id: source for state in states for source in state.sources}
    state = states[0]
    recorded = "field" in EvidenceQuote.model_fields
    claims = []
    for check in state.claim_checks:
        said = _plain(CITATION_RE.sub("", check.sentence).lstrip("-*• ").rstrip(". "))
        verbatim: str | None = None
        for source_id in check.source_ids:
            source = sources.get(source_id)
            page = pages.get(source.url or "") if source else None
            text = page["raw_content"] if page else ""
            snippet = page["content"] if page else (source.snippet if source else "")
            if said and said in _plain(text):
                verbatim = "page text"
                break
            if said and said in _plain(snippet):
                verbatim = verbatim or "snippet"
        fields = {str(getattr(q, "field", "?")) for q in check.quotes} if recorded else None
        verdict = getattr(check.verdict, "value", str(check.verdict))
        claims.append(Claim(check.sentence, verdict, facts_in(check.sentence), fields, verbatim))
    return claims


def report_body(report: str | None) -> str:
    """The report up to its Evidence Quality section, which quotes the claims it removed."""
    return (report or "").split(f"\n{EVIDENCE_HEADING}", 1)[0]


def quoted_from_snippet(state_claims: list[Claim], tag: str) -> bool | None:
    """Whether a checked claim stating ``tag`` had a quote from the snippet (None: the product
    does not record which field a quote came from)."""
    stating = [claim for claim in state_claims if tag in claim.facts]
    if any(claim.quoted_fields is None for claim in stating):
        return None
    return any("snippet" in (claim.quoted_fields or set()) for claim in stating)


def _plain(text: str) -> str:
    """``text`` without Markdown emphasis (claims lose their backticks) and with single spaces."""
    return " ".join(text.replace("`", "").replace("*", "").split())


# --------------------------------------------------------------------------- pooled runs


class Pool:
    """Runs pooled, with the planted facts of their questions by tag."""

    def __init__(self, runs: list[Run], planted: dict[str, PlantedFact]) -> None:
        self.runs, self.planted = runs, planted

    def count(self, stage: str, facts: Iterable[str] | None = None) -> tuple[int, int]:
        """(reached ``stage``, searched) over the runs, of ``facts`` only when given."""
        wanted = None if facts is None else set(facts)
        reached = searched = 0
        for run in self.runs:
            served = run.facts.get("searched", set())
            served = served if wanted is None else served & wanted
            searched += len(served)
            reached += len(run.facts.get(stage, set()) & served)
        return reached, searched

    def recall(self, stage: str, facts: Iterable[str] | None = None) -> float | None:
        reached, searched = self.count(stage, facts)
        return reached / searched if searched else None

    def buckets(self, key: str) -> dict[str, list[str]]:
        """The planted facts grouped by ``depth_bucket``, ``size_bucket`` or ``place``."""
        found: dict[str, list[str]] = {}
        for tag, fact in self.planted.items():
            found.setdefault(getattr(fact, key), []).append(tag)
        return found

    def by_bucket(self, stage: str, key: str, order: Sequence[str]) -> str:
        groups = self.buckets(key)
        parts = []
        for name in order:
            reached, searched = self.count(stage, groups.get(name, []))
            if searched:
                parts.append(f"{name} {reached}/{searched}")
        return ", ".join(parts)

    def worst(self, stage: str, *, page_facts_only: bool = True) -> tuple[float | None, str]:
        """The lowest recall into ``stage`` of any depth or size bucket, and which."""
        worst: tuple[float | None, str] = (None, "none")
        for key in ("depth_bucket", "size_bucket"):
            for name, tags in self.buckets(key).items():
                if page_facts_only:
                    tags = [t for t in tags if not self.planted[t].snippet_only]
                value = self.recall(stage, tags)
                if value is not None and (worst[0] is None or value < worst[0]):
                    worst = (value, name)
        return worst


@dataclass
class SnippetClaims:
    """Snippet-only facts that became checked claims: how many were kept in the report and
    quoted from the snippet (``recorded`` False: quotes do not say which field they are of)."""

    claimed: int = 0
    kept: int = 0
    quoted: int = 0
    recorded: bool = True

    def quotes(self) -> str:
        return f"{self.quoted}/{self.claimed} quoted" if self.recorded else "quotes not recorded"


def snippet_claims(pool: Pool) -> SnippetClaims:
    found = SnippetClaims()
    tags = {t for t, f in pool.planted.items() if f.snippet_only}
    for run in pool.runs:
        for tag in run.facts.get("searched", set()) & tags:
            if any(tag in claim.facts for claim in run.claims):
                answer = quoted_from_snippet(run.claims, tag)
                found.claimed += 1
                found.kept += tag in run.facts.get("report", set())
                found.quoted += bool(answer)
                found.recorded = found.recorded and answer is not None
    return found


def removals(runs: Iterable[Run]) -> tuple[int, Counter[str]]:
    """Claims removed as unsupported, and of them those verbatim in their cited source."""
    removed = 0
    verbatim: Counter[str] = Counter()
    for run in runs:
        for claim in run.claims:
            if claim.verdict == "unsupported":
                removed += 1
                if claim.verbatim_in:
                    verbatim[claim.verbatim_in] += 1
    return removed, verbatim
