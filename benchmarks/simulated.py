"""Realistic provider latency for the loopback fakes, and the settings of a benchmark run.

The LLM answers in 0.4 s plus 5 ms per output token (the fake's token count of its answer), a
search in 0.3 s. ``run_settings`` points foundry-mcp at a pair of fakes, with SDK retries off.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from foundry_mcp.config import Settings, load_settings
from tests.fakes import FakeHTTPServer, FakeResponse, RecordedRequest

if TYPE_CHECKING:
    from foundry_mcp.research.models import ResearchState
    from foundry_mcp.research.service.research_service import ResearchService

LLM_BASE_SECONDS = 0.4
LLM_SECONDS_PER_TOKEN = 0.005
SEARCH_SECONDS = 0.3


def llm_delay(request: RecordedRequest, response: FakeResponse) -> float:
    """0.4 s plus 5 ms per output token of the answer."""
    usage = response.json.get("usage", {}) if isinstance(response.json, dict) else {}
    return LLM_BASE_SECONDS + LLM_SECONDS_PER_TOKEN * int(usage.get("completion_tokens", 0))


def search_delay(request: RecordedRequest, response: FakeResponse) -> float:
    """0.3 s for every search."""
    return SEARCH_SECONDS


def simulate_latency(llm: FakeHTTPServer, search: FakeHTTPServer) -> None:
    """Give the fakes the latencies above."""
    llm.delay = llm_delay
    search.delay = search_delay


def run_settings(
    tmp: Path, llm: FakeHTTPServer, search: FakeHTTPServer, config_text: str | None = None
) -> Settings:
    """Settings for a research in ``tmp`` against the OpenAI and Tavily fakes (``config_text``:
    the run's own configuration file, else SDK retries off)."""
    config = tmp / "foundry-mcp.toml"
    config.write_text(config_text or "[providers.openai]\nmax_retries = 0\n")
    env = {
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp / "research"),
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": llm.base_url + "/v1",
        "TAVILY_API_KEY": "tvly-bench",
        "TAVILY_BASE_URL": search.base_url,
    }
    return load_settings(env=env, cwd=tmp, home=tmp)


async def research_to_end(
    service: ResearchService, question: str, **options: Any
) -> tuple[float, dict[str, Any], ResearchState]:
    """Start one research once the providers are warm and wait for its end: its wall time from
    the start call, its final status and its saved state (with its sources' page text)."""
    await anyio.to_thread.run_sync(service.providers.warmed.wait, 30)
    began = time.perf_counter()
    started = await service.start(question, **options)
    job = service.jobs.get(started["research_id"])
    assert job is not None
    await job.done.wait()
    wall = time.perf_counter() - began
    status = await service.status(started["research_id"])
    state = service.store.load(started["research_id"])
    service.store.load_pages(state)  # its sources' page text, kept apart from the state
    return wall, status, state
