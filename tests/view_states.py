"""Researches for the tests of the research's page, built from the models (no run): a finished
one with checked sentences, quotes, readings, cost by phase, versions and a follow-up; the same
with hostile text in its titles, quotes and report; and a hierarchical one at each step of its
run."""

from __future__ import annotations

from datetime import timedelta

from foundry_mcp.research.models import (
    BranchStatus,
    ClaimCheck,
    EvidenceQuote,
    Finding,
    FollowUp,
    FollowUpQuote,
    LLMCallRecord,
    LLMUsage,
    PageRecord,
    Phase,
    ResearchMode,
    ResearchState,
    Source,
    SourceQuality,
    Status,
    SubQuery,
    SubQueryStatus,
    SubQuestion,
    Verdict,
)
from tests.report_versions import versioned_research
from tests.support import STATE_BASE

# Each cited sentence of versioned_research()'s latest report, as the fact-checker read it, with
# the source ids it cites and one quote of each.
CHECKED = [
    ("Buy them: bills fall by 30%.", Verdict.SUPPORTED, ["src-beta0002"]),
    (
        "The COP stays above 2 at -15 C, and 2026 models reach 1.8 at -30 C.",
        Verdict.PARTIAL,
        ["src-alpha001", "src-gamma003"],
    ),
    ("New 2026 models work colder.", Verdict.SUPPORTED, ["src-gamma003"]),
]
QUALITIES = [SourceQuality.HIGH, SourceQuality.HIGH, SourceQuality.MEDIUM, SourceQuality.LOW]
HOSTILE_TITLE = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>'
HOSTILE_QUOTE = "<script>window.__pwned=3</script> & <b>bold</b> \u2028 end"


def quote_of(sentence: str, source_id: str) -> str:
    """The passage the fixture quotes from ``source_id`` for ``sentence``."""
    return f"{source_id} says: {sentence.rstrip('.')} (measured)"


def usage(*phases: tuple[str, int, float]) -> LLMUsage:
    """Usage with one call per ``(phase, input tokens, cost)``."""
    booked = LLMUsage()
    for phase, tokens, cost in phases:
        booked.add(
            LLMCallRecord(
                provider="openai",
                model="gpt-test",
                phase=phase,
                purpose=phase,
                input_tokens=tokens,
                output_tokens=tokens // 10,
                cost_usd=cost,
            )
        )
    return booked


def finished_research() -> ResearchState:
    """versioned_research() with its sentences checked and quoted, pages read, cost by phase
    and one follow-up question."""
    state = versioned_research()
    state.claim_checks = [
        ClaimCheck(
            sentence=sentence,
            source_ids=ids,
            verdict=verdict,
            reason=f"{verdict.value} by the quoted passages",
            quotes=[
                EvidenceQuote(source_id=sid, text=quote_of(sentence, sid), start=0, end=10)
                for sid in ids
            ],
        )
        for sentence, verdict, ids in CHECKED
    ]
    state.readings = {
        "src-alpha001": PageRecord(passages=10, runs=[(0, 3)], tokens=1_200),
        "src-beta0002": PageRecord(passages=4, runs=[(0, 3)], tokens=800),
    }
    state.sources.append(Source(id="src-delta004", title="Delta forum", url="https://d.example/"))
    state.research_brief = "Compare heat pump performance below **-15 C** with gas boilers."
    state.llm_usage = usage(
        ("planning", 1_000, 0.004),
        ("gathering", 2_000, 0.006),
        ("analysis", 8_000, 0.026),
        ("synthesis", 4_000, 0.010),
    )
    for source, provider, quality in zip(
        state.sources, ["tavily", "semantic_scholar", "tavily", "tavily"], QUALITIES, strict=True
    ):
        source.provider, source.quality = provider, quality
    state.sub_queries = [
        SubQuery(
            query="heat pump COP below -15 C",
            status=SubQueryStatus.COMPLETED,
            source_ids=["src-alpha001", "src-gamma003"],
        ),
        SubQuery(
            query="heat pump running costs Norway",
            status=SubQueryStatus.COMPLETED,
            source_ids=["src-beta0002", "src-delta004"],
        ),
    ]
    assert state.completed_at is not None
    state.started_at = state.completed_at - timedelta(minutes=3, seconds=12)
    state.mode = ResearchMode.SIMPLE
    state.phase = Phase.SYNTHESIS
    state.follow_ups = [
        FollowUp(
            question="Do they work at -25 C?",
            answer="Yes, with a lower COP [2].",
            source_ids=["src-alpha001"],
            quotes=[FollowUpQuote(source_id="src-alpha001", number=2, quote="COP 1.9 at -25 C")],
        )
    ]
    return state


def hostile_research() -> ResearchState:
    """finished_research() whose first source's title, a quote, the report and a follow-up hold
    markup and scripts, and whose last source's address is a javascript: link."""
    state = finished_research()
    state.sources[0].title = HOSTILE_TITLE  # src-alpha001, cited [2]
    state.sources[-1].url = "javascript:window.__pwned=4"
    state.claim_checks[0].quotes[0].text = HOSTILE_QUOTE
    state.report = (state.report or "").replace(
        "## What changed",
        '<img src=x onerror="window.__pwned=5"> [a link](javascript:pwn) '
        "<script>window.__pwned=7</script>\n\n## What changed",
    )
    state.query = "<b>Heat pumps</b> & <i>cold</i>?"
    state.follow_ups[0].answer = "<img src=x onerror=window.__pwned=8> [2]"
    return state


def running_research(step: int) -> ResearchState:
    """A hierarchical research at ``step`` (0-3) of its run: one more of its three
    sub-questions done, its findings and its cost grown, at each step."""
    questions = ["How efficient are they?", "What do they cost?", "How are they installed?"]
    findings = [
        Finding(id=f"fnd-{i:08d}", content=f"Finding {i} of part {i // 2}", source_ids=[])
        for i in range(2 * step)
    ]
    parts = []
    for i, question in enumerate(questions):
        status = (
            BranchStatus.COMPLETED
            if i < step
            else BranchStatus.RESEARCHING
            if i == step
            else BranchStatus.PENDING
        )
        parts.append(
            SubQuestion(
                id=f"sqn-part{i:04d}",
                question=question,
                status=status,
                iteration_budget=2,
                iterations_used=2 if i < step else 0,
                phase="analysis" if status is BranchStatus.RESEARCHING else "synthesis",
                source_count=3 * (i < step) + (i == step),
                finding_ids=[f.id for f in findings if int(f.content.split()[-1]) == i],
            )
        )
    return ResearchState(
        id="deepres-0000000000b1",
        query="How well do heat pumps work in cold climates?",
        llm_provider="openai",
        llm_model="gpt-test",
        status=Status.RUNNING if step < 3 else Status.COMPLETED,
        phase=Phase.GATHERING if step < 3 else Phase.SYNTHESIS,
        mode=ResearchMode.HIERARCHICAL,
        created_at=STATE_BASE,
        started_at=STATE_BASE,
        completed_at=STATE_BASE + timedelta(minutes=3) if step == 3 else None,
        research_brief="Three parts: efficiency, cost, installation.",
        sub_questions=parts,
        findings=findings,
        llm_usage=usage(("planning", 1_000, 0.01), *[("analysis", 5_000, 0.02)] * step),
    )
