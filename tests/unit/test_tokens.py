"""Token counting, the model limits table and the per-call / per-phase budgets."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import pytest

from foundry_mcp.context import tokens as tokens_module
from foundry_mcp.context.budget import TokenBudget, runtime_overhead_for
from foundry_mcp.context.errors import ContextExceededError
from foundry_mcp.context.limits import (
    DEFAULT_CLIENT_WINDOW,
    client_window,
    known_models,
    model_limits,
)
from foundry_mcp.context.options import TokenBudgetOptions
from foundry_mcp.context.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    CachedCounter,
    EstimateCounter,
    TiktokenCounter,
    content_hash,
    count_messages,
    counter_for_model,
    encoding_for_model,
    estimate_tokens,
)

# --------------------------------------------------------------------------- counting


def test_the_estimate_is_one_token_per_three_characters_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcdef") == 2
    assert estimate_tokens("abcdefg") == 3
    assert EstimateCounter().count("x" * 3000) == 1000


def test_the_estimate_over_counts_json_compared_with_four_characters_a_token() -> None:
    payload = '{"findings": [{"content": "x", "confidence": "high", "source_ids": ["src-1"]}]}'
    assert estimate_tokens(payload) >= math.ceil(len(payload) / 4) * 1.3


def test_openai_models_map_to_their_encodings_and_others_to_none() -> None:
    assert encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("openai:gpt-4.1-mini") == "o200k_base"
    assert encoding_for_model("o3-mini") == "o200k_base"
    assert encoding_for_model("gpt-4-turbo") == "cl100k_base"
    assert encoding_for_model("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_for_model("claude-sonnet-4-5") is None
    assert encoding_for_model("gemini-2.5-flash") is None
    assert encoding_for_model("llama3.1:8b") is None


def test_counters_never_fail_and_fall_back_to_the_estimate() -> None:
    class Broken:
        def encode_ordinary(self, text: str) -> list[int]:
            raise ValueError("tokenizer bug")

    counter = TiktokenCounter(Broken(), "o200k_base")
    assert counter.count("hello world") == estimate_tokens("hello world")
    # Here tiktoken cannot download its files: OpenAI models are estimated, not failed.
    assert counter_for_model("gpt-4.1-mini").count("hello") >= 1
    assert counter_for_model("claude-sonnet-5").name == "estimate"


def test_a_hanging_encoding_download_is_abandoned_after_the_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tiktoken

    release = threading.Event()

    def hang(name: str) -> Any:
        release.wait(5)
        raise OSError("no network")

    monkeypatch.setattr(tiktoken, "get_encoding", hang)
    started = time.perf_counter()
    assert tokens_module._load_encoding("test-hanging-encoding", timeout=0.2) is None
    assert time.perf_counter() - started < 1.0
    release.set()
    # The failure is remembered: no second wait.
    started = time.perf_counter()
    assert tokens_module._load_encoding("test-hanging-encoding", timeout=0.2) is None
    assert time.perf_counter() - started < 0.15  # well under the 0.2 s wait


def test_a_loaded_encoding_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    monkeypatch.delenv(tokens_module.NO_DOWNLOADS_ENV, raising=False)

    class Words:
        def encode_ordinary(self, text: str) -> list[str]:
            return text.split()

    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: Words())
    monkeypatch.setattr(tokens_module, "_encodings", {})
    monkeypatch.setattr(tokens_module, "_counters", {})
    counter = counter_for_model("gpt-4o")
    assert counter.name == "tiktoken:o200k_base"
    assert counter.count("three short words") == 3


def test_no_tokenizer_file_is_fetched_when_downloads_are_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tiktoken

    asked: list[str] = []
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: asked.append(name))
    monkeypatch.setattr(tokens_module, "_encodings", {})
    monkeypatch.setattr(tokens_module, "_counters", {})
    monkeypatch.setenv(tokens_module.NO_DOWNLOADS_ENV, "1")
    counter = counter_for_model("gpt-4o")
    assert asked == [] and counter.name == "estimate"
    assert counter.count("x" * 30) == 10


def test_long_texts_are_counted_once_by_hash() -> None:
    calls: list[str] = []

    class Counting:
        name = "counting"

        def count(self, text: str) -> int:
            calls.append(text)
            return len(text)

    counter = CachedCounter(Counting())
    text = "a long source text " * 100
    assert counter.count(text) == counter.count(text) == len(text)
    assert len(calls) == 1 and counter.hits == 1
    assert counter.count("".join(list(text))) == len(text)  # an equal copy is known too
    assert len(calls) == 1 and counter.hits == 2
    twin = text[:-1] + "!"  # as long, another text
    assert counter.count(twin) == len(twin) and len(calls) == 2
    calls.clear()
    counter.count(text)
    assert calls == []
    counter.count("short")
    counter.count("short")
    assert len(calls) == 2  # short texts are not worth hashing
    other = "another long text " * 100
    counter.remember(other, 7)
    assert counter.count(other) == 7
    assert len(calls) == 2


def test_message_counts_add_the_per_message_overhead() -> None:
    counter = EstimateCounter()
    assert count_messages(counter, "abc", "abcdef") == 1 + 2 + MESSAGE_OVERHEAD_TOKENS


def test_content_hash_is_sha256_prefixed() -> None:
    digest = content_hash("text")
    assert digest.startswith("sha256:") and len(digest) == 7 + 64


# --------------------------------------------------------------------------- limits


def test_known_models_of_each_family_have_limits() -> None:
    assert model_limits("gpt-4o").context_window == 128_000
    assert model_limits("gpt-4.1-mini").context_window == 1_047_576
    assert model_limits("claude-3-5-sonnet-20241022").max_output == 8192
    assert model_limits("claude-sonnet-4-5").matched == "claude-sonnet-4"
    assert model_limits("gemini-2.5-pro").context_window == 1_048_576
    assert {"gpt-4o", "claude-sonnet-4", "gemini-2.5-flash"} <= set(known_models())


def test_a_model_matches_the_longest_prefix_and_unknown_ones_the_default() -> None:
    dated = model_limits("gpt-4o-mini-2024-07-18")
    assert dated.matched == "gpt-4o-mini" and dated.source == "table"
    assert model_limits("claude-future-9").matched == "claude-"
    unknown = model_limits("llama3.1:8b")
    assert unknown.source == "default"
    assert unknown.context_window == 32_000 and unknown.max_output == 4096


def test_overrides_replace_the_window_by_provider_model_name_or_prefix() -> None:
    overrides = {"ollama:llama3.1": 8192, "mistral": 65_536, "gpt-4o": 30_000}
    assert model_limits("llama3.1", "ollama", overrides).context_window == 8192
    assert model_limits("llama3.1", "vllm", overrides).source == "default"
    by_prefix = model_limits("mistral-small-latest", None, overrides)
    assert by_prefix.context_window == 65_536 and by_prefix.source == "override"
    small = model_limits("gpt-4o", "openai", overrides)
    assert small.context_window == 30_000
    assert small.max_output == 7_500  # at most a quarter of an overridden window


def test_the_client_window_is_the_client_override_or_200k() -> None:
    assert client_window({}) == DEFAULT_CLIENT_WINDOW == 200_000
    assert client_window({"client": 128_000}) == 128_000
    assert model_limits("gpt-4o", None, {"client": 5000}).context_window == 128_000


def test_the_limits_table_is_package_data() -> None:
    from importlib import resources

    data = resources.files("foundry_mcp").joinpath("data/model_limits.toml")
    assert data.is_file() and "[default]" in data.read_text("utf-8")


# --------------------------------------------------------------------------- budgets


def _budget(**options: Any) -> TokenBudget:
    given: dict[str, Any] = {"context_window": 128_000, "max_output": 16_384, **options}
    return TokenBudget.from_options(TokenBudgetOptions(**given), "gpt-4o", "openai")


def test_the_available_budget_is_window_minus_output_and_margin() -> None:
    budget = _budget()
    margin = math.ceil(0.15 * 128_000)
    assert budget.margin_tokens == margin
    assert budget.output_tokens("analysis") == 4096
    assert budget.output_tokens("synthesis") == 8192
    assert budget.input_limit(4096) == 128_000 - 4096 - margin
    assert budget.reserved_output == 8192
    assert budget.available == 128_000 - 8192 - margin
    assert budget.phase_budget("analysis") == math.floor(0.4 * budget.available)
    assert budget.phase_budget("planning") == math.floor(0.1 * budget.available)
    total = sum(budget.phase_budget(p) for p in ("planning", "analysis", "synthesis", "refinement"))
    assert budget.available - 4 <= total <= budget.available


def test_outputs_are_capped_by_the_model() -> None:
    budget = _budget(context_window=16_000, max_output=2000)
    assert budget.output_tokens("synthesis") == 2000
    assert budget.input_limit(8192) == 16_000 - 2000 - 2400


def test_assistant_overhead_bounds_the_report_for_the_client() -> None:
    assert _budget().client_budget == math.floor((200_000 - 60_000) * 0.85)
    tight = _budget(assistant_overhead=195_000)
    assert tight.client_budget == math.floor(5000 * 0.85)
    assert tight.output_tokens("synthesis") == 4250
    assert tight.output_tokens("analysis") == 4096  # our other calls are not the client's
    assert tight.input_limit(4096) == _budget().input_limit(4096)
    assert _budget(assistant_overhead=500_000).output_tokens("synthesis") == 1024


def test_runtime_overhead_is_taken_from_every_call() -> None:
    base, wrapped = _budget(), _budget(runtime_overhead=60_000)
    assert wrapped.input_limit(4096) == base.input_limit(4096) - 60_000
    assert wrapped.available == base.available - 60_000
    assert wrapped.phase_budget("analysis") == math.floor(0.4 * wrapped.available)
    assert wrapped.client_budget == base.client_budget
    figures = wrapped.describe()
    assert figures["runtime_overhead"] == 60_000 and figures["available"] == wrapped.available
    assert figures["phase_budgets"] == {
        phase: wrapped.phase_budget(phase)
        for phase in ("planning", "analysis", "synthesis", "refinement")
    }
    with pytest.raises(ContextExceededError, match="runtime overhead"):
        _budget(runtime_overhead=120_000).phase_budget("analysis")


def test_runtime_overhead_defaults_to_nothing_for_the_provider_apis() -> None:
    assert runtime_overhead_for("openai", None) == 0
    assert runtime_overhead_for("anthropic", None) == 0
    assert runtime_overhead_for("gemini", 20_000) == 20_000  # what is configured wins


def test_a_window_with_no_room_raises_context_exceeded() -> None:
    budget = _budget(context_window=9000, max_output=8000, safety_margin=0.5)
    with pytest.raises(ContextExceededError) as raised:
        budget.phase_budget("analysis")
    assert raised.value.error_code == "CONTEXT_EXCEEDED"
    # Dropping content cannot make room in a window with none: the fix is the window.
    assert "larger context window" in raised.value.remediation
    assert "allow_content_dropping" not in raised.value.remediation


def test_a_phase_routed_to_another_model_is_budgeted_for_that_model() -> None:
    options = TokenBudgetOptions(context_window=1_047_576, max_output=32_768)
    own = TokenBudget.from_options(options, "gpt-4.1-mini", "openai", own_model="gpt-4.1-mini")
    other = TokenBudget.from_options(options, "gpt-4o", "openai", own_model="gpt-4.1-mini")
    assert own.context_window == 1_047_576
    assert other.context_window == 128_000


def test_a_model_tag_with_a_colon_is_not_mistaken_for_a_provider_prefix() -> None:
    from foundry_mcp.context.limits import bare_model

    assert bare_model("openai:gpt-4o") == "gpt-4o"
    assert bare_model("qwen2.5:14b") == "qwen2.5:14b"
    assert bare_model("openrouter/anthropic/claude-sonnet-5") == "claude-sonnet-5"
