"""How long this research's work takes: its LLM calls' measured pace, and the time to write
and check a report of a given size (what the time ceiling keeps for the report).

A call's latency is taken as ``base + per_token × output tokens`` fitted (least squares) to the
research's own finished calls, plus a slack: the 90th percentile of how much later than the fit
they answered. The report's calls are timed at the pace of the writing model's writer and
fact-checker calls (:meth:`Pace.of_writing`). Before one has answered, the report's long answers
are not extrapolated from the short answers of planning and reflection (whose fitted slope can
make a long answer look free): they are taken to be as slow per output token as the slowest kind
of call measured (:meth:`Pace.stand_in`). A call of a kind already measured (analysis,
reflection...) is expected to take what the 90th percentile of that kind took. Before any call
has answered, an assumed pace (``PRIOR``) stands in.

The report's size is counted in output tokens: ``FRAME_TOKENS`` for its frame (title, summary,
limitations) and ``TOKENS_PER_FINDING`` for each finding it states. Written in parts, the longest
part sets the time (parts past ``max_concurrent`` wait for a slot); the fact-check is the
verifier's batches (:func:`~foundry_mcp.research.verification.judge.spread`) in waves of
``max_concurrent`` calls, ``CHECK_TOKENS_PER_CLAIM`` a claim.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from foundry_mcp.research.models import LLMCallRecord, ResearchState
from foundry_mcp.research.verification.judge import spread

# A report of fewer findings is written in one call, not in parts (report/parts.py follows it).
MIN_FINDINGS = 4

FRAME_TOKENS = 150  # a report's title, summary, limitations and conclusion
SECTION_TOKENS = 40  # a section's heading and opening beyond its findings
TOKENS_PER_FINDING = 40  # one finding stated with its citation
CHECK_TOKENS = 20  # a fact-check answer's frame
CHECK_TOKENS_PER_CLAIM = 35  # one verdict with its reason
BASE_TOKENS = 80  # with calls of one size only, a call's fixed part is taken to cost this many
PRIOR_TOKENS = {"analysis": 400, "planning": 250, "refinement": 200, "reflection": 60}
PRIOR_SEARCH_S = 1.0
SLOW = 0.9  # the percentile of latencies a call is expected to answer within


def percentile(values: Sequence[float], share: float = SLOW) -> float:
    """The ``share`` percentile of ``values`` (nearest rank); 0.0 for none."""
    if not values:
        return 0.0
    ranked = sorted(values)
    return ranked[max(0, math.ceil(share * len(ranked)) - 1)]


@dataclass(frozen=True)
class Pace:
    """An LLM call's expected latency: ``base_s + per_token_s × output tokens + slack_s``."""

    base_s: float
    per_token_s: float
    slack_s: float = 0.0
    calls: int = 0  # the measured calls it rests on (0: the assumed pace)
    assumed_from: str | None = None  # the kind of call whose pace the writer is assumed to have

    @classmethod
    def of(cls, records: Iterable[LLMCallRecord]) -> Pace:
        """The pace of these finished calls (``PRIOR`` when there are none)."""
        samples = [(r.latency_s, float(r.output_tokens)) for r in records if r.latency_s > 0]
        if not samples:
            return PRIOR
        n = len(samples)
        mean_s = sum(s for s, _ in samples) / n
        mean_t = sum(t for _, t in samples) / n
        spread_t = sum((t - mean_t) ** 2 for _, t in samples)
        if spread_t < 1.0:  # one size of answer: split its time by BASE_TOKENS
            per_token = mean_s / (mean_t + BASE_TOKENS)
            base = per_token * BASE_TOKENS
        else:
            per_token = sum((t - mean_t) * (s - mean_s) for s, t in samples) / spread_t
            base = mean_s - per_token * mean_t
            if per_token < 0:  # longer answers were not slower: a fixed latency
                per_token, base = 0.0, mean_s
            elif base < 0:
                per_token = sum(s * t for s, t in samples) / sum(t * t for _, t in samples)
                base = 0.0
        late = [s - (base + per_token * t) for s, t in samples]
        return cls(base, per_token, max(0.0, percentile(late)), n)

    @classmethod
    def of_writing(
        cls, records: Sequence[LLMCallRecord], writer: tuple[str, str] | None = None
    ) -> Pace:
        """The pace of the report's calls, from those of the ``writer`` model (provider, model)
        when it has answered any, else from every call: the writer's and fact-checker's when
        measured; before that, the :meth:`stand_in` of every kind but the analysis (whose
        prompts carry whole sources, so their latency overstates a writer's), else of all."""
        own = [r for r in records if writer is None or (r.provider, r.model) == writer]
        pool = own or list(records)
        writing = [r for r in pool if _kind(r) in WRITING_KINDS]
        if writing:
            return cls.of(writing)
        return cls.stand_in([r for r in pool if _kind(r) != "analysis"] or pool)

    @classmethod
    def stand_in(cls, records: Iterable[LLMCallRecord]) -> Pace:
        """The pace of a kind of call not measured yet, as slow per output token as the slowest
        kind of ``records``: each call's latency spread over its output tokens and
        ``BASE_TOKENS`` for its fixed part, a kind's 90th percentile (``PRIOR`` for none)."""
        rates: dict[str, list[float]] = {}
        for r in records:
            if r.latency_s > 0:
                rates.setdefault(_kind(r), []).append(r.latency_s / (r.output_tokens + BASE_TOKENS))
        if not rates:
            return PRIOR
        kind = max(rates, key=lambda k: percentile(rates[k]))
        rate = percentile(rates[kind])
        calls = sum(len(measured) for measured in rates.values())
        return cls(rate * BASE_TOKENS, rate, 0.0, calls, assumed_from=kind)

    def seconds(self, output_tokens: float) -> float:
        """The expected latency of a call answering with ``output_tokens`` tokens."""
        return self.base_s + self.per_token_s * output_tokens + self.slack_s

    def figures(self) -> dict[str, float | int]:
        """What a ``time_ceiling`` decision records of this pace."""
        return {
            "latency_base_s": round(self.base_s, 3),
            "latency_per_token_ms": round(1000 * self.per_token_s, 3),
            "latency_slack_s": round(self.slack_s, 3),
            "measured_calls": self.calls,
        }

    def describe(self) -> str:
        rate = f"{self.base_s:.2f} s + {1000 * self.per_token_s:.1f} ms per output token"
        if not self.calls:
            return f"no call measured yet: an assumed {rate}"
        if self.assumed_from:
            return (
                f"no writer call measured yet: {rate}, as slow per output token as the slowest "
                f"kind of call measured ({self.assumed_from}, of {self.calls} call(s))"
            )
        return f"this research's {self.calls} measured LLM call(s): {rate}"


PRIOR = Pace(1.0, 0.01)
WRITING_KINDS = frozenset({"synthesis", "verification"})


def _kind(record: LLMCallRecord) -> str:
    return record.purpose.partition(":")[0]


def kind_seconds(kind: str, records: Sequence[LLMCallRecord], pace: Pace) -> float:
    """How long a call of ``kind`` (a purpose's head) is expected to take: the 90th percentile
    of that kind's measured calls, else the pace at the kind's usual answer size."""
    measured = [r.latency_s for r in records if _kind(r) == kind]
    if measured:
        return percentile(measured)
    return pace.seconds(PRIOR_TOKENS.get(kind, FRAME_TOKENS))


@dataclass(frozen=True)
class WritingTime:
    """The estimated time to write and check a report of ``findings`` findings."""

    findings: int
    writing_s: float = 0.0
    checking_s: float = 0.0
    parts: int = 0  # writer calls
    longest_tokens: int = 0  # the longest part's output tokens
    check_calls: int = 0
    check_waves: int = 0

    @property
    def total_s(self) -> float:
        return self.writing_s + self.checking_s

    def describe(self) -> str:
        if not self.parts:
            return "no writer call"
        text = (
            f"writing {self.writing_s:.1f} s ({self.parts} call(s), the longest about "
            f"{self.longest_tokens} output tokens)"
        )
        if self.check_calls:
            text += (
                f", fact-check {self.checking_s:.1f} s ({self.check_calls} call(s) in "
                f"{self.check_waves} wave(s))"
            )
        return text


def writing_time(
    state: ResearchState, groups: Sequence[int], pace: Pace, *, check: bool = True
) -> WritingTime:
    """The time to write (in one wave of parts, as under the ceiling) and, with ``check`` and
    ``verify_citations``, to fact-check a report whose findings fall into topics of ``groups``
    sizes."""
    findings = sum(groups)
    if findings <= 0:
        return WritingTime(0)
    slots = max(1, state.limits.max_concurrent)
    sizes = [size for size in groups if size > 0]
    if state.options.parallel_writing and findings >= MIN_FINDINGS and len(sizes) >= 2:
        sizes = merged_sizes(sizes, max(1, slots - 1))
        longest = max(FRAME_TOKENS, SECTION_TOKENS + TOKENS_PER_FINDING * max(sizes))
        parts = 1 + len(sizes)
    else:
        longest, parts = FRAME_TOKENS + TOKENS_PER_FINDING * findings, 1
    writing_s = math.ceil(parts / slots) * pace.seconds(longest)
    if not (check and state.options.verify_citations):
        return WritingTime(findings, writing_s, 0.0, parts, longest)
    checking_s, calls, waves = check_time(
        min(findings, max(0, state.options.max_verified_claims)), slots, pace
    )
    return WritingTime(findings, writing_s, checking_s, parts, longest, calls, waves)


def check_time(claims: int, slots: int, pace: Pace) -> tuple[float, int, int]:
    """The time to fact-check ``claims`` claims on ``slots`` concurrent calls: (seconds, calls,
    waves)."""
    batches = spread(list(range(claims)), slots)
    if not batches:
        return 0.0, 0, 0
    waves = math.ceil(len(batches) / max(1, slots))
    tokens = CHECK_TOKENS + CHECK_TOKENS_PER_CLAIM * max(len(b) for b in batches)
    return waves * pace.seconds(tokens), len(batches), waves


def merged_sizes(sizes: Sequence[int], limit: int) -> list[int]:
    """Topic sizes merged as the report's sections are, the smallest into its smaller
    neighbour, until at most ``limit`` remain (see ``report.parts.merge_smallest``)."""
    kept = list(sizes)
    while len(kept) > max(1, limit):
        i = min(range(len(kept)), key=kept.__getitem__)
        if i == 0:
            j = 1
        elif i == len(kept) - 1:
            j = i - 1
        else:
            j = i - 1 if kept[i - 1] <= kept[i + 1] else i + 1
        first, second = sorted((i, j))
        kept[first : second + 1] = [kept[first] + kept[second]]
    return kept


def finding_groups(state: ResearchState) -> list[int]:
    """The research's findings by the topic the report gives them a section under: its
    sub-questions' (hierarchical, the researchers' findings included while they run), else the
    sub-query that found each finding's first source."""
    if state.sub_questions:
        counted = [len(sq.finding_ids) for sq in state.sub_questions]
        if sum(counted) >= len(state.findings):
            return counted
    found_by = {s.id: s.sub_query_id for s in state.sources}
    groups: dict[str | None, int] = {}
    for finding in state.findings:
        key = next((found_by[sid] for sid in finding.source_ids if sid in found_by), None)
        groups[key] = groups.get(key, 0) + 1
    return list(groups.values())
