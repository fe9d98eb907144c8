"""Suite-wide fixtures: the anyio backend, a fresh ResearchBrain and fake provider servers."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:  # make ``tests.fakes`` importable without a tests/__init__.py
    sys.path.insert(0, _ROOT)

from tests.fakes import (  # noqa: E402
    FakeHTTPServer,
    ResearchBrain,
    fake_anthropic,
    fake_openai,
    fake_tavily,
)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Run ``pytest.mark.anyio`` tests on asyncio only."""
    return "asyncio"


@pytest.fixture
def brain() -> ResearchBrain:
    """A fresh deterministic LLM stand-in."""
    return ResearchBrain()


@pytest.fixture
def openai_server(brain: ResearchBrain) -> Iterator[FakeHTTPServer]:
    """A fake OpenAI server answering with ``brain``; SDK base_url is ``base_url + '/v1'``."""
    with fake_openai(brain) as server:
        yield server


@pytest.fixture
def anthropic_server(brain: ResearchBrain) -> Iterator[FakeHTTPServer]:
    """A fake Anthropic server answering with ``brain``."""
    with fake_anthropic(brain) as server:
        yield server


@pytest.fixture
def tavily_server() -> Iterator[FakeHTTPServer]:
    """A fake Tavily server with the default deterministic corpus."""
    with fake_tavily() as server:
        yield server
