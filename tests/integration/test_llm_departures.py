"""The LLM adapters report a request as it leaves (see ``providers.llm.departures``), through their
real SDKs against loopback fakes: a fan-out starts its next call then, not when every sibling's
prompt is built, nor when the answer comes back."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from foundry_mcp.providers.llm.anthropic import AnthropicProvider
from foundry_mcp.providers.llm.base import LLMProvider, LLMRequest
from foundry_mcp.providers.llm.departures import Departure, departure_of
from foundry_mcp.providers.llm.gemini import GeminiProvider
from foundry_mcp.providers.llm.openai import OpenAIProvider
from tests.fakes import FakeHTTPServer, ResearchBrain, fake_anthropic, fake_gemini, fake_openai

pytestmark = pytest.mark.anyio

ANSWER_SECONDS = 2.0  # the model's time to answer: the request left long before

ADAPTERS: dict[str, tuple[Callable[[], FakeHTTPServer], Callable[[str], LLMProvider]]] = {
    "openai": (
        lambda: fake_openai(ResearchBrain()),
        lambda base: OpenAIProvider("openai", "sk-test", base + "/v1", 10.0),
    ),
    "anthropic": (
        lambda: fake_anthropic(ResearchBrain()),
        lambda base: AnthropicProvider("anthropic", "sk-test", base, 10.0),
    ),
    "gemini": (
        lambda: fake_gemini(ResearchBrain()),
        lambda base: GeminiProvider("gemini", "gemini-test-key", base, 10.0),
    ),
}


@pytest.mark.parametrize("name", sorted(ADAPTERS))
async def test_an_adapter_reports_its_request_as_it_leaves_not_when_answered(name: str) -> None:
    start, build = ADAPTERS[name]
    request = LLMRequest(
        system="You are the research planner of a deep research system.",
        user="Research question: How do heat pumps perform in cold climates?",
        model="model-test",
        json_mode=True,
    )
    with start() as server:
        server.delay = lambda recorded, response: ANSWER_SECONDS
        adapter = build(server.base_url)
        departure = Departure()
        async with anyio.create_task_group() as group:
            with departure_of(departure):
                group.start_soon(adapter.complete, request)
            with anyio.fail_after(ANSWER_SECONDS * 0.75):
                await departure.left.wait()
            assert departure.sending  # the answer is still awaited
            group.cancel_scope.cancel()
