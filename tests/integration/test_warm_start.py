"""Warm start: what is readied before the first research, without a request, and never in the way.

The timings themselves are printed by ``benchmarks/latency/startup.py``; these tests check behaviour.
"""

from __future__ import annotations

import gc
import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from foundry_mcp import runtime
from foundry_mcp.config import Settings, load_settings
from foundry_mcp.context.runtime import opened_summary_cache
from foundry_mcp.providers import warming
from foundry_mcp.providers.llm.anthropic import AnthropicProvider
from foundry_mcp.providers.llm.gemini import GeminiProvider
from foundry_mcp.providers.llm.openai import OpenAIProvider
from foundry_mcp.providers.registry import ProviderRegistry
from foundry_mcp.research.service.research_service import ResearchService
from foundry_mcp.runtime import research_runtime
from foundry_mcp.server import create_server
from tests.fakes import FakeHTTPServer, fake_gemini
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio


def _settings(research_env: dict[str, str], tmp_path: Path, **extra: str) -> Settings:
    env = {**research_env, **extra}
    return load_settings(env=env, cwd=tmp_path, home=Path(env["HOME"]))


@pytest.mark.parametrize(
    ("adapter", "model"),
    [
        (OpenAIProvider, "gpt-4.1-mini"),
        (AnthropicProvider, "claude-sonnet-5"),
        (GeminiProvider, "gemini-2.5-flash"),
    ],
)
def test_rehearsing_an_sdk_sends_nothing(adapter: Any, model: str) -> None:
    # No base_url: the real API's host. The suite refuses every connection and name lookup
    # but loopback, so a rehearsal that reached for the network would raise here.
    adapter.warm_up(model, None)


@pytest.fixture
def unsettled_heap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The heap as before any warm-up: nothing frozen and Python's default of ten middle
    collections per full one (tests/conftest.py settles it for the whole suite), so that a
    warm-up is seen to settle it; settled again afterwards, whatever the test did."""
    gc.unfreeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 10)
    monkeypatch.setattr(runtime, "_heap_settled", False)
    yield
    runtime.settle_heap()


@pytest.mark.usefixtures("unsettled_heap")
def test_warm_up_builds_the_configured_providers_without_a_request(
    research_env: dict[str, str],
    tmp_path: Path,
    openai_server: FakeHTTPServer,
    anthropic_server: FakeHTTPServer,
    tavily_server: FakeHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = _settings(
        research_env,
        tmp_path,
        ANTHROPIC_API_KEY="sk-ant-test",
        ANTHROPIC_BASE_URL=anthropic_server.base_url,
    )
    counted: list[str] = []
    monkeypatch.setattr(runtime, "counter_for_model", counted.append)
    fetchers: list[ProviderRegistry] = []
    original_fetcher = ProviderRegistry.fetcher

    def fetcher(registry: ProviderRegistry) -> Any:
        fetchers.append(registry)
        return original_fetcher(registry)

    monkeypatch.setattr(ProviderRegistry, "fetcher", fetcher)
    providers = ProviderRegistry(settings)
    research_dir = Path(str(settings.research.research_dir))  # as a research's options name it
    assert opened_summary_cache(research_dir) is None

    runtime.warm_up(providers)

    assert providers.warmed.is_set()
    assert providers.is_built("openai")  # the default, rehearsed
    assert providers.is_built("tavily")
    assert providers.is_built("anthropic")  # has a key: ready for provider_id='anthropic'
    assert not providers.is_built("gemini")  # no key: its SDK is never touched
    assert fetchers == [providers]
    assert counted == ["gpt-4.1-mini"]
    assert opened_summary_cache(research_dir) is not None  # the first analysis call's ladder
    for server in (openai_server, anthropic_server, tavily_server):
        assert server.requests == []
    # What start-up built is out of the collector's way: no full collection walks it again,
    # and full collections of what research builds are rarer than Python's default.
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[2] == runtime.MIDDLE_COLLECTIONS_PER_FULL > 10


def test_a_stopped_warm_up_builds_nothing_more(settings: Settings) -> None:
    stop = threading.Event()
    stop.set()  # the runtime closed before warming began
    providers = ProviderRegistry(settings)
    runtime.warm_up(providers, stop)
    assert providers.warmed.is_set()
    assert not providers.is_built("openai") and not providers.is_built("tavily")


def test_an_encoding_asked_for_twice_at_once_is_loaded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The warm-up and a first research may ask for the same tiktoken encoding together.
    import tiktoken

    from foundry_mcp.context import tokens

    loads: list[str] = []

    def get_encoding(name: str) -> object:
        loads.append(name)
        time.sleep(0.2)  # as a real encoding takes a while to load
        return object()

    monkeypatch.delenv(tokens.NO_DOWNLOADS_ENV, raising=False)
    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_loading", {})
    found: list[object] = []
    askers = [
        threading.Thread(target=lambda: found.append(tokens._load_encoding("test-shared")))
        for _ in range(3)
    ]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(10)
    assert loads == ["test-shared"]
    assert len(found) == 3 and found[0] is not None and found.count(found[0]) == 3


async def test_a_failed_warm_up_leaves_research_working(
    settings: Settings,
    openai_server: FakeHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*_: Any) -> None:
        raise RuntimeError("the SDK would not load")

    monkeypatch.setattr(warming, "_warm_llm", broken)
    monkeypatch.setattr(runtime, "counter_for_model", broken)
    caplog.set_level(logging.DEBUG, logger="foundry_mcp")
    async with research_runtime(settings) as service:  # warms in the background
        assert await anyio.to_thread.run_sync(service.providers.warmed.wait, 30)
        started = await service.start("How do heat pumps work?", max_iterations=1)
        status = await wait_until(service, started["research_id"], TERMINAL)
    assert status["status"] == "completed", status["error"]
    assert openai_server.requests_to("/v1/chat/completions")
    assert "warming the openai LLM failed" in caplog.text


async def test_the_first_call_waits_for_the_service_and_gets_it(settings: Settings) -> None:
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        result = await client.call_tool("research", {"action": "deep-research-list"})
    envelope = result.structured_content
    assert envelope is not None and envelope["success"], envelope


async def test_a_service_that_cannot_open_fails_calls_instead_of_hanging(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    @asynccontextmanager
    async def broken(_: Settings) -> AsyncIterator[ResearchService]:
        raise RuntimeError("the store exploded")
        yield  # pragma: no cover

    monkeypatch.setattr(runtime, "research_runtime", broken)
    async with Client(create_server(lambda: settings), mode="legacy") as client:
        with anyio.fail_after(10):
            result = await client.call_tool("research", {"action": "deep-research-list"})
    envelope = result.structured_content
    assert envelope is not None and not envelope["success"]
    assert "could not start" in envelope["error"]


async def test_warm_up_readies_gemini_too(
    research_env: dict[str, str], tmp_path: Path, tavily_server: FakeHTTPServer
) -> None:
    with fake_gemini() as gemini:
        settings = _settings(
            research_env,
            tmp_path,
            GEMINI_API_KEY="gm-test",
            GOOGLE_GEMINI_BASE_URL=gemini.base_url,
            FOUNDRY_MCP_DEFAULT_PROVIDER="gemini",
        )
        async with research_runtime(settings) as service:
            assert await anyio.to_thread.run_sync(service.providers.warmed.wait, 30)
            assert service.providers.is_built("gemini")
            assert gemini.requests == []
            started = await service.start("What limits battery recycling?", max_iterations=1)
            status = await wait_until(service, started["research_id"], TERMINAL)
        assert status["status"] == "completed", status["error"]
        assert gemini.requests


def test_answering_initialize_needs_no_research_code_and_no_sdk() -> None:
    # What `python -m foundry_mcp` imports before it can answer `initialize`: the research
    # code, the provider SDKs and tiktoken are imported later, in the background.
    script = (
        "import json, sys\n"
        "import foundry_mcp.cli.main\n"
        "from foundry_mcp.server import create_server\n"
        "from foundry_mcp.server.stdio import serve_stdio\n"
        "create_server()\n"
        "heavy = ['foundry_mcp.runtime', 'foundry_mcp.research.service.research_service',\n"
        "         'foundry_mcp.research.models', 'openai', 'anthropic', 'google.genai',\n"
        "         'tavily', 'tiktoken', 'ddgs', 'primp']\n"
        "print(json.dumps([name for name in heavy if name in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == []
