"""A whole research with default fetch settings: search results that point at this machine,
its network or a cloud metadata service are refused, and the research still completes.

Nothing here reaches real DNS: ``resolve_host`` is replaced by a table, and every other
connection (the LLM and search fakes) is made to 127.0.0.1 by address.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.config import Settings, load_settings
from foundry_mcp.providers.pages import ssrf
from foundry_mcp.research.workflow.agents.gatherer import FETCH_ERRORS_KEY
from foundry_mcp.runtime import research_runtime
from tests.fakes import FakeHTTPServer, article_html, fake_pages, fake_tavily, html_page
from tests.support import TERMINAL, wait_until

pytestmark = pytest.mark.anyio

NAMES = {"localhost": ["127.0.0.1", "::1"], "intranet.example": ["10.0.0.5"]}
GOOD_TEXT = (
    "Ground-source heat pumps reach a seasonal COP of 3 to 4 in cold climates, according to "
    "field trials in Sweden and Canada. Borehole depth and soil conductivity matter most."
)


def _private_targets(port: int) -> dict[str, str]:
    """URL -> the refusal its fetch must report."""
    return {
        f"http://127.0.0.1:{port}/secret": "127.0.0.1 is a loopback address",
        f"http://localhost:{port}/admin": "localhost resolves to 127.0.0.1, a loopback address",
        "http://169.254.169.254/latest/meta-data/": "169.254.169.254 is a cloud metadata address",
        f"http://[::ffff:127.0.0.1]:{port}/mapped": "::ffff:7f00:1 is a loopback address",
        f"http://intranet.example:{port}/wiki": "intranet.example resolves to 10.0.0.5, a private",
    }


def _results(private_urls: list[str]) -> list[dict[str, Any]]:
    """Search results: the private URLs without page text (so they are fetched), then normal
    results with text (so the research has sources)."""
    hidden = [
        {"title": f"Internal page number {n} of the admin", "url": url, "content": "", "score": 0.9}
        for n, url in enumerate(private_urls, start=1)
    ]
    normal = [
        {
            "title": f"Heat pump field trial report {n}",
            "url": f"https://trials.example.org/heat-pumps/{n}",
            "content": GOOD_TEXT[:120],
            "raw_content": f"{GOOD_TEXT} Trial {n} measured {n + 2} sites over two winters.",
            "score": 0.8,
        }
        for n in range(1, 4)
    ]
    return hidden + normal


def _default_fetch_settings(
    tmp_path: Path, openai_server: FakeHTTPServer, tavily: FakeHTTPServer
) -> Settings:
    """Settings pointing at the fakes, with ``[research.fetch]`` as a user leaves it."""
    config = tmp_path / "foundry-mcp.toml"
    config.write_text(
        "[research.fetch]\nenabled = true\n\n"
        "[providers.openai]\nmax_retries = 0\n\n[providers.tavily]\nmax_retries = 0\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "FOUNDRY_MCP_CONFIG": str(config),
        "FOUNDRY_MCP_RESEARCH_DIR": str(tmp_path / "research"),
        "OPENAI_API_KEY": "sk-test-secret-openai",
        "OPENAI_BASE_URL": openai_server.base_url + "/v1",
        "TAVILY_API_KEY": "tvly-test-secret",
        "TAVILY_BASE_URL": tavily.base_url,
    }
    return load_settings(env=env, cwd=tmp_path, home=home)


async def test_research_with_default_settings_never_touches_private_addresses(
    tmp_path: Path, openai_server: FakeHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        if host in NAMES:
            return NAMES[host]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(ssrf, "resolve_host", resolver)
    article = article_html("Secret", ["Internal numbers that must never leave the network."])
    with fake_pages(
        {p: html_page(article) for p in ("/secret", "/admin", "/mapped", "/wiki")}
    ) as web:
        port = int(web.base_url.rsplit(":", 1)[1])
        targets = _private_targets(port)
        with fake_tavily(lambda query: _results(list(targets))) as tavily:
            settings = _default_fetch_settings(tmp_path, openai_server, tavily)
            assert settings.research.fetch.enabled
            assert not settings.research.fetch.allow_private_networks

            async with research_runtime(settings, warm=False) as service:
                started = await service.start(
                    "How well do heat pumps work in cold climates?",
                    max_iterations=1,
                    max_sources_per_query=10,
                )
                rid = started["research_id"]
                status = await wait_until(service, rid, TERMINAL)
                state = service.store.load(rid)
                service.store.load_pages(state)
                events = service.store.events(rid, after=0, limit=1000)
            assert tavily.requests_to("/search")
        assert web.requests == []  # not one request reached the page server

    assert status["status"] == "completed", status["error"]
    assert set(asked) == set(NAMES)  # only the names in the table were looked up
    fetches = {e.data["url"]: e.data for e in events if e.kind == "fetch"}
    assert set(fetches) == set(targets)  # the pages with text were not fetched
    for url, refusal in targets.items():
        assert not fetches[url]["ok"]
        assert fetches[url]["bytes"] == 0
        assert refusal in fetches[url]["error"], url
        assert "allow_private_networks" in fetches[url]["error"]
    by_url = {s.url: s for s in state.sources}
    recorded = state.metadata[FETCH_ERRORS_KEY]
    for url, refusal in targets.items():
        assert refusal in recorded[by_url[url].id]
        assert not by_url[url].content
    assert [s for s in state.sources if s.content and "seasonal COP" in s.content]
    assert state.report is not None
