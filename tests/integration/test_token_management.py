"""Token management end to end: budgets, the ladder, fidelity, dropping, archive, overflow.

Real SDKs talk to loopback fakes; the fake model's window is made small with
``model_context_overrides`` so that sources must be shortened to fit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.context.budget import TokenBudget
from foundry_mcp.context.errors import ContextExceededError
from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.options import TokenBudgetOptions
from foundry_mcp.context.runtime import ContextServices
from foundry_mcp.context.tokens import count_messages, estimate_tokens
from foundry_mcp.errors import ProviderError
from foundry_mcp.research.models import (
    Phase,
    ResearchState,
)
from foundry_mcp.research.workflow.fitting.fitter import Fitting, is_context_overflow
from foundry_mcp.research.workflow.supervisor import SupervisorHooks
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_tavily
from tests.fakes.http import FakeResponse, RecordedRequest
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

QUESTION = "How efficient is lithium battery recycling today?"
DOCUMENT_RE = re.compile(r"<document[^>]*>\n(.*)\n</document>", re.DOTALL)
WORDS_RE = re.compile(r"(?:about|at most) (\d+) words")


def long_page(query: str, n: int, sentences: int = 60) -> str:
    """About 2,000 estimated tokens of varied text, relevant to the question."""
    digest = hashlib.sha256(f"{query}|{n}".encode()).hexdigest()
    lines = []
    for i in range(sentences):
        figure = int(digest[i % 60 : i % 60 + 2], 16) % 90 + 5
        lines.append(
            f"Study {n}.{i} reports that lithium battery recycling recovered {figure} percent "
            f"of cathode metals in plant {i % 7 + 1} during trial {i}."
        )
    return "\n\n".join(" ".join(lines[i : i + 4]) for i in range(0, len(lines), 4))


def long_corpus(per_query: int, huge_last: bool = False, sentences: int = 60) -> Any:
    """Pages of ``sentences`` sentences (60: about 2,300 tokens); with ``huge_last`` each
    query's last page has 600 (about 23,000)."""

    def results(query: str) -> list[dict[str, Any]]:
        slug = hashlib.sha256(query.encode()).hexdigest()[:10]
        return [
            {
                "title": f"Recycling field report {slug} number {n}",
                "url": f"https://reports.example.org/{slug}/{n}",
                "content": f"Field report {n} on lithium battery recycling yields.",
                "score": round(0.9 - 0.05 * n, 3),
                "raw_content": long_page(
                    query, n, sentences=600 if huge_last and n == per_query else sentences
                ),
            }
            for n in range(1, per_query + 1)
        ]

    return results


def extractive_summary(system: str, user: str) -> str:
    """A fake summarizer: the document's first words, as many as asked, whole sentences."""
    document = DOCUMENT_RE.search(user)
    words = WORDS_RE.search(user)
    if document is None or words is None:
        return "This is a deterministic answer from the fake research brain."
    limit = int(words.group(1))
    kept: list[str] = []
    for sentence in re.split(r"(?<=\.)\s+", " ".join(document.group(1).split())):
        if "[…]" in sentence:
            continue
        if len(" ".join([*kept, sentence]).split()) > limit:
            break
        kept.append(sentence)
    return " ".join(kept) or " ".join(document.group(1).split()[:limit])


@pytest.fixture
def long_tavily() -> Iterator[FakeHTTPServer]:
    with fake_tavily(long_corpus(per_query=2)) as server:
        yield server


def make_settings(
    research_env: dict[str, str], tmp_path: Path, tavily: FakeHTTPServer, research: str
) -> Settings:
    config = tmp_path / "token-test.toml"
    config.write_text(
        "[providers.openai]\nmax_retries = 0\n\n[research]\n" + research.strip() + "\n"
    )
    env = {**research_env, "FOUNDRY_MCP_CONFIG": str(config), "TAVILY_BASE_URL": tavily.base_url}
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


# One analysis call may carry about 4,000 tokens of sources: a page of 2,300 is read whole, one
# of 11,000 (``sentences=300``) only in part.
SMALL_WINDOW = 'model_context_overrides = { "gpt-4.1-mini" = 8000 }'


async def test_sources_are_shortened_to_fit_and_fidelity_is_reported(
    research_env: dict[str, str], tmp_path: Path, brain: ResearchBrain
) -> None:
    brain.overrides["other"] = extractive_summary
    with fake_tavily(long_corpus(per_query=2, sentences=300)) as tavily:
        settings = make_settings(research_env, tmp_path, tavily, SMALL_WINDOW)
        async with research_runtime(settings, warm=False) as service:
            started = await service.start(QUESTION, max_iterations=1, max_sources_per_query=2)
            status = await wait_until(service, started["research_id"], TERMINAL)
            assert status["status"] == "completed", status["error"]
            report, _ = await service.report(started["research_id"])
            state = service.store.load(started["research_id"])

    options = state.options.token_budget
    assert options.context_window == 8_000 and options.limits_source == "override"
    budget = TokenBudget.from_options(options, state.llm_model, state.llm_provider)
    fidelity = status["fidelity"]
    assert fidelity["enabled"] is True
    assert 0 < fidelity["score"] < 1
    assert fidelity["band"] in {"condensed", "compressed", "minimal"}
    assert fidelity["items_degraded"] >= 5
    # More calls than the phase's share of one window would allow, each filling its own room.
    analysis = fidelity["phases"]["analysis"]
    assert analysis["tokens_available"] > 2 * budget.phase_budget("analysis")
    assert analysis["tokens_used"] <= analysis["tokens_available"]
    # Every analysis prompt fitted what one call may carry.
    limit = budget.input_limit(budget.output_tokens("analysis"))
    prompts = [(s, u) for agent, s, u in brain.history if agent == "analyzer"]
    assert len(prompts) >= 5
    for system, user in prompts:
        assert estimate_tokens(system) + estimate_tokens(user) <= limit
        assert "[…]" in user  # each page's most relevant passages, the rest marked
    # The report carries the per-item records.
    items = report["fidelity"]["content_fidelity"]
    assert items and all(
        {"original_tokens", "current_tokens", "current_level", "compression_ratio"} <= set(v)
        for v in items.values()
    )
    for record in state.content_fidelity.values():
        if record.item_type == "source":
            assert record.current_tokens <= record.original_tokens
            assert record.method == "selection" and record.compression_ratio < 1
            assert record.content_hash and record.content_hash.startswith("sha256:")
    assert report["fidelity"]["client_budget_tokens"] == budget.client_budget


async def test_runtime_overhead_shrinks_every_call_and_status_shows_the_figures(
    research_env: dict[str, str], tmp_path: Path, brain: ResearchBrain, long_tavily: FakeHTTPServer
) -> None:
    """The specification's fix for "context exceeded": raising runtime_overhead leaves less of
    the model's window to every call, and status says what is in effect."""
    brain.overrides["other"] = extractive_summary
    largest: dict[int, int] = {}
    figures: dict[int, dict[str, Any]] = {}
    for overhead in (0, 2_000):
        asked_before = len(brain.history)
        settings = make_settings(
            research_env, tmp_path, long_tavily, f"{SMALL_WINDOW}\nruntime_overhead = {overhead}"
        )
        async with research_runtime(settings, warm=False) as service:
            started = await service.start(QUESTION, max_iterations=1, max_sources_per_query=2)
            status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        figures[overhead] = status["token_budget"]
        largest[overhead] = max(
            estimate_tokens(s) + estimate_tokens(u)
            for agent, s, u in brain.history[asked_before:]
            if agent == "analyzer"
        )

    low, high = figures[0], figures[2_000]
    assert low["context_window"] == high["context_window"] == 8_000
    assert (low["runtime_overhead"], high["runtime_overhead"]) == (0, 2_000)
    assert high["available"] == low["available"] - 2_000
    assert high["phase_budgets"]["analysis"] < low["phase_budgets"]["analysis"]
    assert low["safety_margin"] == 0.15 and low["safety_margin_tokens"] == 1_200
    assert low["client_budget"] == high["client_budget"]  # the assistant's window is another
    # Every analysis prompt fits the smaller room, so the largest one shrank.
    assert largest[2_000] < largest[0]


async def test_content_exceeded_then_dropping_archive_and_restore(
    research_env: dict[str, str], tmp_path: Path, brain: ResearchBrain
) -> None:
    # Each query's last page (23,000 tokens) is far larger than one analysis call of an
    # 8,000-token window: the research reads its best passages instead of failing, with or
    # without allow_content_dropping.
    brain.overrides["other"] = extractive_summary
    with fake_tavily(long_corpus(per_query=5, huge_last=True)) as tavily:
        strict = make_settings(research_env, tmp_path, tavily, SMALL_WINDOW)
        async with research_runtime(strict, warm=False) as service:
            started = await service.start(QUESTION, max_iterations=1, max_sources_per_query=5)
            status = await wait_until(service, started["research_id"], TERMINAL)
            assert status["status"] == "completed", status["error"]
            first = service.store.load(started["research_id"])
        huge = [s.id for s in first.sources if s.url and s.url.endswith("/5")]
        assert huge and all(first.content_fidelity[i].method == "selection" for i in huge)
        assert not first.dropped_content_ids

        # With the archive on, the originals of the most shortened pages are kept, and a
        # restore brings one back for a resumed run to read in a roomier window.
        archive_dir = tmp_path / "kept-originals"
        relaxed = make_settings(
            research_env,
            tmp_path,
            tavily,
            SMALL_WINDOW
            + "\nallow_content_dropping = true\ncontent_archive_enabled = true"
            + f'\nresearch_archive_dir = "{archive_dir}"',
        )
        hooks = HoldBeforeSynthesis()
        async with research_runtime(relaxed, hooks, warm=False) as service:
            started = await service.start(QUESTION, max_iterations=1, max_sources_per_query=5)
            research_id = started["research_id"]
            with anyio.fail_after(30):
                await hooks.reached.wait()
            await service.cancel(research_id)
            state = service.store.load(research_id)
            assert state.status.value == "cancelled" and state.phase is Phase.SYNTHESIS
            archived = list(state.content_archive_hashes)
            assert archived and set(huge_urls(state)) <= set(archived)
            # The originals are kept in the research store, where every server reads them.
            assert not archive_dir.exists()
            for digest in state.content_archive_hashes.values():
                record = service.store.archived_content(research_id, digest)
                assert record is not None and record.content_hash == digest
            status = await service.status(research_id)
            assert status["fidelity"]["archived"] == len(archived)

            restored = await service.restore_content(research_id, archived[0])
            assert restored["reopened_analysis"]
            hooks.release.set()

        # A restored source must be read: resumed with a model whose window holds it.
        roomy = make_settings(
            research_env,
            tmp_path,
            tavily,
            'model_context_overrides = { "gpt-4.1-mini" = 64000 }'
            + f'\ncontent_archive_enabled = true\nresearch_archive_dir = "{archive_dir}"',
        )
        asked_before_resume = len(brain.history)
        async with research_runtime(roomy, warm=False) as service:
            await service.resume(research_id)
            status = await wait_until(service, research_id, TERMINAL)
            assert status["status"] == "completed", status["error"]
            state = service.store.load(research_id)
            service.store.load_pages(state)

    source = state.source_by_id()[archived[0]]
    assert source.analyzed and source.content
    assert archived[0] in state.protected_content_ids
    assert state.content_fidelity[archived[0]].current_level is not ContentLevel.DROPPED
    # The resumed run's analysis read it (and, after it, more of the pages read in part).
    resumed = [u for agent, _, u in brain.history[asked_before_resume:] if agent == "analyzer"]
    assert any(f'<source id="{archived[0]}">' in user for user in resumed)


def huge_urls(state: ResearchState) -> list[str]:
    """The ids of the research's huge pages (each query's fifth)."""
    return [s.id for s in state.sources if s.url and s.url.endswith("/5")]


class HoldBeforeSynthesis(SupervisorHooks):
    """Parks the run at the start of synthesis until released."""

    def __init__(self) -> None:
        self.reached = anyio.Event()
        self.release = anyio.Event()

    async def on_phase_start(self, state: ResearchState, phase: Phase) -> None:
        if phase is Phase.SYNTHESIS and not self.release.is_set():
            self.reached.set()
            await self.release.wait()


async def test_an_overflowing_prompt_is_shrunk_and_sent_again(
    settings: Settings, brain: ResearchBrain, openai_server: FakeHTTPServer
) -> None:
    original = openai_server._routes[("POST", "/v1/chat/completions")]
    # The model's real window is smaller than we were told: 1,250 prompt tokens, while the
    # analysis prompts here are about 600-1,560 (so some fit, and the largest fit once shrunk
    # a few times by 10%).
    limit = [1_250]
    rejected: list[int] = []

    def strict(request: RecordedRequest) -> FakeResponse:
        messages = (request.json or {}).get("messages") or []
        text = "".join(str(m.get("content", "")) for m in messages)
        tokens = len(text) // 4
        if "research analyst" in text and tokens > limit[0]:
            rejected.append(tokens)
            message = (
                f"This model's maximum context length is {limit[0]} tokens. However, your "
                f"messages resulted in {tokens} tokens. Please reduce the length."
            )
            return FakeResponse(
                400,
                {
                    "error": {
                        "message": message,
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": "context_length_exceeded",
                    }
                },
            )
        return original(request)

    openai_server.route("POST", "/v1/chat/completions", strict)
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
        events = (await service.events(started["research_id"], limit=500))["events"]
    assert status["status"] == "completed", status["error"]
    assert rejected
    overflow = [e["data"] for e in events if e["kind"] == "context_overflow"]
    assert overflow and overflow[0]["purpose"] == "analysis"
    assert all(e["tokens"] < e["tokens_before"] for e in overflow)
    assert all(e["attempt"] <= 3 for e in overflow)
    assert any("rejected the analysis prompt" in w for w in status["warnings"])
    accepted = [u for agent, s, u in brain.history if agent == "analyzer"]
    assert accepted and len(accepted[-1]) // 4 <= limit[0]


async def test_switching_token_management_off_restores_the_fixed_cut(
    research_env: dict[str, str], tmp_path: Path, brain: ResearchBrain, long_tavily: FakeHTTPServer
) -> None:
    settings = make_settings(
        research_env, tmp_path, long_tavily, "token_management_enabled = false\n" + SMALL_WINDOW
    )
    async with research_runtime(settings, warm=False) as service:
        started = await service.start(QUESTION, max_iterations=1, max_sources_per_query=2)
        status = await wait_until(service, started["research_id"], TERMINAL)
    assert status["status"] == "completed", status["error"]
    assert status["fidelity"] == {
        "enabled": False,
        "score": None,
        "band": None,
        "warning": None,
        "items_total": 0,
    }
    prompts = [u for agent, _, u in brain.history if agent == "analyzer"]
    assert prompts and all("[...]" in u and "Note: shortened" not in u for u in prompts)
    assert brain.calls["other"] == 0


# --------------------------------------------------------------------------- the call guard


class ScriptedLLM:
    """Rejects prompts longer than ``limit`` estimated tokens as a context overflow."""

    def __init__(self, limit: int, kind: str = "context_overflow") -> None:
        self.limit = limit
        self.kind = kind
        self.model = "gpt-4o"
        self.provider = type("P", (), {"name": "openai"})()
        self.sent: list[int] = []

    async def ask(
        self, purpose: str, system: str, user: str, *, json_mode: bool, max_tokens: int = 4096
    ) -> str:
        tokens = estimate_tokens(system) + estimate_tokens(user)
        self.sent.append(tokens)
        if tokens > self.limit:
            raise ProviderError(
                f"maximum context length is {self.limit} tokens", provider="openai", kind=self.kind
            )
        return "ok"


def _context(llm: ScriptedLLM, window: int = 128_000) -> Fitting:
    state = ResearchState(query="q", llm_provider="openai", llm_model="gpt-4o")
    state.options.token_budget = TokenBudgetOptions(context_window=window, max_output=16_384)
    budget = TokenBudget.from_options(state.options.token_budget, "gpt-4o", "openai")
    from foundry_mcp.context.tokens import EstimateCounter

    return Fitting(llm, state, EstimateCounter(), budget)  # type: ignore[arg-type]


async def test_the_guard_shrinks_about_ten_percent_per_retry() -> None:
    llm = ScriptedLLM(limit=7_500)
    context = _context(llm)
    user = "word " * 6_000  # 10,000 estimated tokens
    assert await context.ask("analysis", "sys", user, json_mode=True, max_tokens=4096) == "ok"
    assert len(llm.sent) == 4  # three rejections, then accepted
    ratios = [b / a for a, b in zip(llm.sent, llm.sent[1:], strict=False)]
    assert all(0.85 <= r <= 0.95 for r in ratios)
    assert context.state.warnings


async def test_the_guard_gives_up_after_three_retries_with_context_exceeded() -> None:
    llm = ScriptedLLM(limit=100)
    context = _context(llm)
    with pytest.raises(ContextExceededError) as raised:
        await context.ask("analysis", "sys", "word " * 30_000, json_mode=True, max_tokens=4096)
    assert len(llm.sent) == 4 and raised.value.error_code == "CONTEXT_EXCEEDED"


async def test_preflight_shrinks_a_prompt_before_it_is_sent() -> None:
    llm = ScriptedLLM(limit=10**9)
    context = _context(llm, window=20_000)
    user = "word " * 60_000
    calls: list[float] = []

    def rebuild(scale: float) -> tuple[str, str]:
        calls.append(scale)
        return "sys", "word " * int(60_000 * scale)

    await context.ask("analysis", "sys", user, json_mode=True, max_tokens=4096, rebuild=rebuild)
    limit = context.budget.input_limit(4096)
    assert len(llm.sent) == 1 and llm.sent[0] <= limit and calls
    assert count_messages(context.counter, "sys", "word " * int(60_000 * calls[-1])) <= limit


async def test_other_provider_errors_are_not_retried() -> None:
    llm = ScriptedLLM(limit=10, kind="auth")
    llm_error = ProviderError("bad key", provider="openai", kind="auth")
    assert not is_context_overflow(llm_error)
    assert is_context_overflow(
        ProviderError(
            "openai answered HTTP 400: prompt is too long", provider="x", kind="bad_request"
        )
    )
    with pytest.raises(ProviderError):
        await _context(llm).ask("analysis", "sys", "word " * 100, json_mode=True, max_tokens=10)
    assert len(llm.sent) == 1


# --------------------------------------------------------------------------- settings


def test_every_token_setting_reaches_the_research_options(
    research_env: dict[str, str], tmp_path: Path, tavily_server: FakeHTTPServer
) -> None:
    settings = make_settings(
        research_env,
        tmp_path,
        tavily_server,
        """
token_management_enabled = false
token_safety_margin = 0.2
runtime_overhead = 30000
assistant_overhead = 40000
summarization_provider = "openai:gpt-4o-mini"
summarization_providers = ["anthropic:claude-3-5-haiku"]
summarization_timeout = 12.5
summarization_cache_enabled = false
allow_content_dropping = true
content_archive_enabled = true
content_archive_ttl_hours = 24
research_archive_dir = "/tmp/foundry-archive-test"
model_context_overrides = { "gpt-4.1-mini" = 50000, client = 128000 }
""",
    )
    from foundry_mcp.providers.registry import ProviderRegistry

    options, warnings = ContextServices(settings, ProviderRegistry(settings)).token_options(
        "openai", "gpt-4.1-mini"
    )
    assert options.enabled is False
    assert options.safety_margin == 0.2 and options.runtime_overhead == 30_000
    assert options.assistant_overhead == 40_000
    assert options.summarization_providers == ["openai:gpt-4o-mini"]
    assert any("claude-3-5-haiku" in w and "not usable" in w for w in warnings)  # no key
    assert options.summarization_timeout == 12.5 and options.summarization_cache is False
    assert options.allow_content_dropping and options.archive_enabled
    assert options.archive_ttl_hours == 24
    assert options.archive_dir == "/tmp/foundry-archive-test"
    assert options.context_window == 50_000 and options.client_window == 128_000
    assert options.cache_dir == str(settings.research.research_dir)
