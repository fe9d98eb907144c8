"""Suite-wide fixtures: the anyio backend, a fresh ResearchBrain and fake provider servers.

Also suite-wide: every test has a home of its own (``HOME``, so ``~/.foundry-mcp.toml`` and the
default research directory ``~/.foundry-mcp/research`` are its own, and empty), no test reaches
the network (only loopback connections and IP literals, see ``tests/network_guard.py``),
nothing is downloaded (``FOUNDRY_MCP_NO_DOWNLOADS``), and property tests are derandomized when
``HYPOTHESIS_PROFILE=ci`` (``.ci/run`` sets it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:  # make ``tests.fakes`` importable without a tests/__init__.py
    sys.path.insert(0, _ROOT)

from foundry_mcp.config import Settings, load_settings  # noqa: E402
from foundry_mcp.context.tokens import NO_DOWNLOADS_ENV  # noqa: E402
from tests.fakes import (  # noqa: E402
    FakeHTTPServer,
    ResearchBrain,
    fake_anthropic,
    fake_openai,
    fake_tavily,
)
from tests.network_guard import forbid_network  # noqa: E402

pytest_plugins = ["tests.postgres"]  # a throwaway PostgreSQL server: postgres_url

hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis_settings.register_profile("dev")
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

os.environ[NO_DOWNLOADS_ENV] = "1"  # this process; servers started by tests get research_env
forbid_network()


@pytest.fixture(autouse=True)
def own_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty home for every test: nothing a test writes under ``~`` reaches the user's
    home, and nothing an earlier test (or run) left there is found by a later one."""
    home = tmp_path_factory.mktemp("home")
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
    config = tmp_path / "foundry-mcp.toml"
    # Pages are not fetched: the fake search results carry their text, and a result without
    # it must never make the suite resolve a real host name.
    config.write_text(
        "[research.fetch]\nenabled = false\n\n"
        "[providers.openai]\nmax_retries = 0\n\n[providers.anthropic]\nmax_retries = 0\n\n"
        "[providers.tavily]\nmax_retries = 0\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp_path / "research"),
        "OPENAI_API_KEY": "sk-test-secret-openai",
        "OPENAI_BASE_URL": openai_server.base_url + "/v1",
        "TAVILY_API_KEY": "tvly-test-secret",
        "TAVILY_BASE_URL": tavily_server.base_url,
        NO_DOWNLOADS_ENV: "1",
        # A server started with this environment has no network guard: any HTTPS request (the
        # keyless web search's engines, say) goes to a closed port instead of the internet.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }


@pytest.fixture
def settings(research_env: dict[str, str], tmp_path: Path) -> Settings:
    """Settings loaded exactly as the server would load them from ``research_env``."""
    return load_settings(env=research_env, cwd=tmp_path, home=Path(research_env["HOME"]))
