"""The degradation ladder with fake summarizers: sizes, fall-through, truncation, cache."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from foundry_mcp.context.cache import SummaryCache
from foundry_mcp.context.ladder import SUMMARY_MAX_TOKENS, TRUNCATION_MARK, Ladder
from foundry_mcp.context.levels import ContentLevel
from foundry_mcp.context.tokens import EstimateCounter, counter_for_model
from foundry_mcp.errors import ProviderError
from foundry_mcp.research.llm.calls import CallLog, ResearchLLM
from foundry_mcp.research.models import ResearchState
from foundry_mcp.research.prompts.summarizer import SUMMARY_PROMPT_VERSION, summarizer_prompts
from foundry_mcp.research.workflow.fitting.fitter import Fitting

pytestmark = pytest.mark.anyio

COUNTER = EstimateCounter()
WORDS = re.compile(r"(?:about|at most) (\d+) words")
DOCUMENT = re.compile(r"<document[^>]*>\n(.*)\n</document>", re.DOTALL)

PROMPTS = {"prompts": summarizer_prompts, "prompt_version": SUMMARY_PROMPT_VERSION}


def source_text(paragraphs: int = 40) -> str:
    """About 60 tokens a paragraph of varied, sentence-shaped text."""
    topics = ["battery", "recycling", "lithium", "cathode", "smelting", "policy", "cost"]
    return "\n\n".join(
        f"Paragraph {n} discusses {topics[n % len(topics)]} in detail. Researchers measured "
        f"outcome {n} across several plants and found a {n % 9 + 1}% change in yield."
        for n in range(paragraphs)
    )


class EchoSummarizer:
    """Answers with as many words of the document as the prompt asks for."""

    def __init__(self, label: str = "fake:echo") -> None:
        self.label = label
        self.prompts: list[str] = []

    async def summarize(self, system: str, user: str, max_tokens: int) -> str:
        self.prompts.append(user)
        words = int(WORDS.search(user).group(1))  # type: ignore[union-attr]
        document = DOCUMENT.search(user).group(1)  # type: ignore[union-attr]
        return " ".join(document.split()[:words])


class Failing:
    def __init__(self, label: str, error: Exception) -> None:
        self.label = label
        self.error = error
        self.calls = 0

    async def summarize(self, system: str, user: str, max_tokens: int) -> str:
        self.calls += 1
        raise self.error


class Slow:
    label = "fake:slow"

    async def summarize(self, system: str, user: str, max_tokens: int) -> str:
        await anyio.sleep(10)
        return "too late"


class Verbose:
    """Ignores the requested size: repeats the document until asked for a headline."""

    label = "fake:verbose"

    def __init__(self) -> None:
        self.levels: list[str] = []

    async def summarize(self, system: str, user: str, max_tokens: int) -> str:
        asked_headline = "one sentence" in user
        self.levels.append("headline" if asked_headline else "other")
        if asked_headline:
            return "Recycling yields changed by a few percent across plants."
        return DOCUMENT.search(user).group(1) * 3  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "level",
    [
        ContentLevel.CONDENSED,
        ContentLevel.COMPRESSED,
        ContentLevel.KEY_POINTS,
        ContentLevel.HEADLINE,
    ],
)
async def test_each_level_lands_near_its_target(level: ContentLevel) -> None:
    text = source_text(40)
    original = COUNTER.count(text)
    target = round(level.ratio * original)
    assert target <= SUMMARY_MAX_TOKENS
    ladder = Ladder(COUNTER, [EchoSummarizer()], **PROMPTS)
    result = await ladder.degrade(text, level, target, "lithium battery recycling yield")
    assert result.method == "summary" and result.summarizer == "fake:echo"
    assert result.level is level
    assert 0.5 * target <= result.tokens <= 1.3 * target + 16


async def test_full_and_dropped_need_no_summary() -> None:
    ladder = Ladder(COUNTER, [EchoSummarizer()], **PROMPTS)
    text = source_text(5)
    full = await ladder.degrade(text, ContentLevel.FULL, 10, "q")
    assert full.text == text.strip() and full.method == "full"
    dropped = await ladder.degrade(text, ContentLevel.DROPPED, 0, "q")
    assert dropped.text == "" and dropped.tokens == 0 and dropped.method == "dropped"
    short = await ladder.degrade("A short text.", ContentLevel.HEADLINE, 100, "q")
    assert short.method == "full"  # already within its target


async def test_a_failing_summarizer_falls_through_to_the_next_provider() -> None:
    broken = Failing("fake:broken", ProviderError("down", provider="fake", kind="transient"))
    echo = EchoSummarizer("fake:second")
    ladder = Ladder(COUNTER, [broken, echo], **PROMPTS)
    text = source_text(40)
    result = await ladder.degrade(text, ContentLevel.KEY_POINTS, 500, "lithium")
    assert broken.calls == 1 and len(echo.prompts) == 1
    assert result.method == "summary" and result.summarizer == "fake:second"
    assert ladder.failures == ["fake:broken: down"]


async def test_when_every_provider_fails_the_text_is_truncated_with_a_mark() -> None:
    broken = Failing("fake:broken", ProviderError("down", provider="fake", kind="transient"))
    crashing = Failing("fake:crash", RuntimeError("sdk exploded"))
    ladder = Ladder(COUNTER, [broken, crashing, Slow()], **PROMPTS, timeout=0.05)
    text = source_text(40)
    result = await ladder.degrade(text, ContentLevel.KEY_POINTS, 300, "lithium cathode")
    assert result.method == "truncation"
    assert result.text.endswith(TRUNCATION_MARK)
    assert result.tokens <= 300
    assert [f.split(":")[1] for f in ladder.failures] == ["broken", "crash", "slow"]
    assert "no answer within 0.05 s" in ladder.failures[-1]


async def test_an_answer_far_too_long_is_asked_again_one_level_lower() -> None:
    verbose = Verbose()
    ladder = Ladder(COUNTER, [verbose], **PROMPTS)
    text = source_text(40)
    target = round(0.1 * COUNTER.count(text) * 2)  # key points of this text
    result = await ladder.degrade(text, ContentLevel.KEY_POINTS, target, "recycling")
    assert verbose.levels == ["other", "headline"]
    assert result.method == "summary" and result.tokens <= target


async def test_large_targets_are_met_by_passage_selection_without_a_summary() -> None:
    echo = EchoSummarizer()
    ladder = Ladder(COUNTER, [echo], **PROMPTS)
    text = source_text(200)
    target = SUMMARY_MAX_TOKENS + 1000
    result = await ladder.degrade(text, ContentLevel.CONDENSED, target, "lithium")
    assert result.method == "selection" and not echo.prompts
    assert result.tokens <= target and "[…]" in result.text


async def test_summaries_are_cached_across_ladders(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path)
    first, second = EchoSummarizer(), EchoSummarizer()
    text = source_text(40)
    one = await Ladder(COUNTER, [first], **PROMPTS, cache=cache).degrade(
        text, ContentLevel.HEADLINE, 200, "q"
    )
    two = await Ladder(COUNTER, [second], **PROMPTS, cache=cache).degrade(
        text, ContentLevel.HEADLINE, 200, "q"
    )
    assert len(first.prompts) == 1 and not second.prompts
    assert two.cached and two.text == one.text and two.summarizer == "fake:echo"
    assert (tmp_path / "context-cache.db").stat().st_mode & 0o777 == 0o600


async def test_the_summarizer_reads_the_relevant_passages_of_a_long_source() -> None:
    echo = EchoSummarizer()
    ladder = Ladder(COUNTER, [echo], **PROMPTS, focus_max_tokens=1500)
    text = source_text(300)
    key = "The decisive figure is a 97 percent lithium recovery rate at the Nevada pilot."
    paragraphs = text.split("\n\n")
    paragraphs[270] = key + " " + paragraphs[270]
    await ladder.degrade(
        "\n\n".join(paragraphs), ContentLevel.HEADLINE, 400, "lithium recovery rate Nevada"
    )
    assert key in echo.prompts[0]
    assert COUNTER.count(DOCUMENT.search(echo.prompts[0]).group(1)) <= 900  # type: ignore[union-attr]


def _thread_trips(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """From now on, the functions sent to a worker thread (``anyio.to_thread.run_sync``)."""
    trips: list[object] = []
    real = anyio.to_thread.run_sync

    async def counted(function: object, *args: object, **kwargs: object) -> object:
        trips.append(function)
        return await real(function, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    return trips


class _NoModel:
    name = "openai"

    async def complete(self, request: object) -> object:
        raise AssertionError("no call is made while a ladder is built")


@pytest.mark.anyio
async def test_a_research_opens_its_summary_cache_in_a_thread_once_then_takes_it_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first ladder opens the cache in a worker thread (it may open a database); every
    later one, before each analysis call, takes the opened cache without a thread's trip."""

    state = ResearchState(query="q", llm_provider="openai", llm_model="gpt-4.1-mini")
    state.options.token_budget.cache_dir = str(tmp_path / "research")
    fitting = await Fitting.open(ResearchLLM(_NoModel(), "gpt-4.1-mini", state, CallLog()), state)
    trips = _thread_trips(monkeypatch)

    first, second, third = [await fitting.ladder() for _ in range(3)]

    assert isinstance(first.cache, SummaryCache)
    assert first.cache is second.cache is third.cache
    assert len(trips) == 1


@pytest.mark.anyio
async def test_an_agent_takes_the_loaded_token_counter_without_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A counter is loaded once a process, in a worker thread (an encoding may be downloaded);
    every agent's fitting after that takes it without a thread's trip."""

    state = ResearchState(query="q", llm_provider="openai", llm_model="gpt-4.1-mini")
    loaded = await anyio.to_thread.run_sync(counter_for_model, "gpt-4.1-mini")
    trips = _thread_trips(monkeypatch)

    llm = ResearchLLM(_NoModel(), "gpt-4.1-mini", state, CallLog())
    fittings = [await Fitting.open(llm, state, phase) for phase in ("analysis", "synthesis")]

    assert all(fitting.counter is loaded for fitting in fittings)
    assert trips == []
