"""Suite-wide fixtures: the anyio backend, a fresh ResearchBrain and fake provider servers.

Also suite-wide: every test has a home of its own (``HOME``, so ``~/.foundry-mcp.toml`` and the
default research directory ``~/.foundry-mcp/research`` are its own, and empty), no test reaches
the network (only loopback connections and IP literals, see ``tests/network_guard.py``),
nothing is downloaded (``FOUNDRY_MCP_NO_DOWNLOADS``), no certificate authority is trusted (see
``UNTRUSTED_CA``), and property tests are derandomized when ``HYPOTHESIS_PROFILE=ci``
(``.ci/run`` sets it).
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:  # make ``tests.fakes`` importable without a tests/__init__.py
    sys.path.insert(0, _ROOT)

from foundry_mcp.config import Settings, load_settings  # noqa: E402
from foundry_mcp.context.tokens import NO_DOWNLOADS_ENV  # noqa: E402
from foundry_mcp.runtime import settle_heap  # noqa: E402
from tests.fakes import (  # noqa: E402
    FakeHTTPServer,
    ResearchBrain,
    fake_anthropic,
    fake_openai,
    fake_tavily,
)
from tests.network_guard import forbid_network  # noqa: E402
from tests.research_env import UNTRUSTED_CA, research_environment  # noqa: E402

# A throwaway PostgreSQL server (postgres_url); the test modules' asserts rewritten once per
# run, ahead of the pytest-xdist workers (tests/rewrite_ahead.py).
pytest_plugins = ["tests.postgres", "tests.rewrite_ahead"]

hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis_settings.register_profile("dev")
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The CA bundle of this process and of the servers tests start (``SSL_CERT_FILE``, which every
# SDK client and the page fetcher load when they are made): one certificate whose key was thrown
# away, so no server is trusted. No test reaches a TLS server but one it starts with a CA of its
# own (and names in its own SSL_CERT_FILE); the system's bundle, some 140 certificates, costs
# 30-100 ms for each client of each research a test runs, this one 2 ms.

os.environ[NO_DOWNLOADS_ENV] = "1"  # this process; servers started by tests get research_env
os.environ["SSL_CERT_FILE"] = UNTRUSTED_CA
forbid_network()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once the tests are collected, settle the heap as a started server does
    (``runtime.settle_heap``: what exists is frozen, full collections are ten times rarer).

    Every test then runs under the server's collector settings, whichever test ran before it
    (a warm-up used to settle them for the rest of its worker only), and no full collection
    walks the imported modules and the collected tests again: 13 s of full collections per
    worker, on a loaded machine, before."""
    gc.collect()
    settle_heap()


@pytest.fixture(scope="session")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder that holds every test's home, one per session (per pytest-xdist worker)."""
    return tmp_path_factory.mktemp("homes", numbered=False)


@pytest.fixture(autouse=True)
def own_home(homes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty home for every test: nothing a test writes under ``~`` reaches the user's
    home, and nothing an earlier test (or run) left there is found by a later one.

    ``mkdtemp`` names it at random, in a folder of its own: ``tmp_path_factory.mktemp`` would
    list every folder made so far to number the next one, a cost that grows with each test."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=homes))
    monkeypatch.setenv("HOME", str(home))
    return home


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


@pytest.fixture
def research_env(
    tmp_path: Path, openai_server: FakeHTTPServer, tavily_server: FakeHTTPServer
) -> dict[str, str]:
    """Environment variables that point foundry-mcp at the fakes and at a private store."""
    return research_environment(tmp_path, openai_server, tavily_server)


@pytest.fixture
def settings(research_env: dict[str, str], tmp_path: Path) -> Settings:
    """Settings loaded exactly as the server would load them from ``research_env``."""
    return load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))
