"""The research view in the reference host of MCP Apps: the ``AppBridge`` of
``@modelcontextprotocol/ext-apps`` (npm), in headless Chromium.

The test is the host. It reads the ``ui://`` page from our server over a real stdio session
that declared the extension, shows it in a sandboxed frame of a small page of its own
(``app_host/host.html``, with the package's host bridge bundled by esbuild), passes it the
research tool's arguments and result, and answers the requests the view makes through the
bridge (``resources/read``, ``tools/call``) from the same session. The view then shows the
research: from the start result of a research still running, it reads the research through the
host until it completes.

The npm packages are installed once into ``.test-servers/`` (as ``tests/npm_servers.py`` installs
servers) at pinned versions. Without Node.js, Chromium or Playwright the tests are skipped,
saying so; under ``FOUNDRY_MCP_REQUIRE_NODE=1`` / ``FOUNDRY_MCP_REQUIRE_CHROMIUM=1`` they fail.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.extension import advertise

from foundry_mcp.view.app import APP_MIME, APP_URI, EXTENSION
from tests.browser import async_chromium, unavailable
from tests.e2e.conftest import call, run_to_end
from tests.fakes import FakeHTTPServer
from tests.npm_servers import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.stdio]

HOST_FILES = Path(__file__).parent / "app_host"
# The reference SDK and the base MCP SDK it needs (its peers), pinned; esbuild bundles them.
PACKAGES = (
    "@modelcontextprotocol/ext-apps@2.0.4",
    "@modelcontextprotocol/client@2.4.0",
    "@modelcontextprotocol/core@2.4.0",
    "zod@4.6.7",
    "esbuild@0.28.2",
)
QUESTION = "How does WAL mode work in SQLite?"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@functools.cache
def _host_bridge() -> Path:
    """The folder of the host page with the reference AppBridge bundled beside it."""
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        unavailable(
            "Node.js (node and npm) is not installed: the MCP Apps host bridge needs it",
            "FOUNDRY_MCP_REQUIRE_NODE",
        )
    assert npm is not None
    prefix = ROOT / f"ext-apps-host@{PACKAGES[0].rpartition('@')[2]}"
    bundle = prefix / "bridge.js"
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not bundle.exists():
            install = [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix"]
            done = subprocess.run(
                [*install, str(prefix), *PACKAGES], capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, f"npm install failed:\n{done.stderr}"
            esbuild = prefix / "node_modules" / ".bin" / "esbuild"
            built = subprocess.run(
                [
                    str(esbuild),
                    str(HOST_FILES / "entry.js"),
                    "--bundle",
                    "--format=iife",
                    "--global-name=ExtApps",
                    "--platform=browser",
                    f"--outfile={bundle}.part",
                ],
                cwd=prefix,
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, "NODE_PATH": str(prefix / "node_modules")},
            )
            assert built.returncode == 0, f"esbuild failed:\n{built.stderr}"
            Path(f"{bundle}.part").replace(bundle)
    return prefix


class _HostFiles(http.server.SimpleHTTPRequestHandler):
    """The host page and the bundle, nothing else."""

    files: ClassVar[dict[str, Path]] = {}

    def do_GET(self) -> None:
        path = self.files.get(self.path)
        if path is None:
            self.send_error(404)
            return
        body = path.read_bytes()
        self.send_response(200)
        kind = "text/html" if path.suffix == ".html" else "text/javascript"
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def host_url() -> Iterator[str]:
    """The test host's page, served on 127.0.0.1."""
    prefix = _host_bridge()
    handler = type(
        "Files",
        (_HostFiles,),
        {"files": {"/host.html": HOST_FILES / "host.html", "/bridge.js": prefix / "bridge.js"}},
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/host.html"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """Headless Chromium, driven by Playwright."""
    async with async_chromium() as launched:
        yield launched


def app_client(env: dict[str, str]) -> Client:
    """A client of our server over stdio that renders MCP Apps, as such a host declares."""
    base = {key: os.environ[key] for key in ("PATH", "LANG") if key in os.environ}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "foundry_mcp"], env={**base, **env}
    )
    return Client(
        params, mode="legacy", extensions=[advertise(EXTENSION, {"mimeTypes": [APP_MIME]})]
    )


def _wire(result: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


class Host:
    """The test host's side in Python: the page in Chromium, and the server behind it (the
    requests the view makes through the bridge, answered from ``client``)."""

    def __init__(self, client: Client, page: Any) -> None:
        self.client = client
        self.page = page
        self.forwarded: list[str] = []  # the methods the view asked the server for
        self.statuses: list[str] = []  # the status of each view data it read
        self.errors: list[str] = []
        self.view = page.frame_locator("#view")

    async def mcp_server(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.forwarded.append(method)
        if method == "resources/read":
            read = _wire(await self.client.read_resource(params["uri"]))
            self.statuses.append(json.loads(read["contents"][0]["text"])["status"])
            return read
        assert method == "tools/call" and params["name"] == "research", params
        return _wire(await self.client.call_tool("research", params.get("arguments") or {}))

    async def show(self, url: str, arguments: dict[str, Any], result: Any) -> None:
        """Load the ``ui://`` page and pass it one call of the research tool."""
        (resource,) = (await self.client.read_resource(APP_URI)).contents
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        await self.page.expose_function("mcpServer", self.mcp_server)
        await self.page.goto(url)
        await self.page.evaluate(
            "([resource, args, result]) => window.showView(resource, args, result, 'dark')",
            [_wire(resource), arguments, _wire(result)],
        )

    async def text(self, selector: str) -> str:
        return str(await self.view.locator(selector).first.inner_text())

    async def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await self.page.screenshot(path=str(ARTIFACTS / name), full_page=True)


async def test_the_view_renders_a_running_research_from_its_tool_result_until_it_completes(
    host_url: str, browser: Any, research_env: dict[str, str], openai_server: FakeHTTPServer
) -> None:
    # A model slow enough that the view reads the research while it runs, whatever the
    # machine's load; quick once it has (the test lets it go, not a clock).
    openai_server.latency = 2.0
    async with app_client(research_env) as client:
        arguments = {"action": "deep-research", "query": QUESTION}
        started = await client.call_tool("research", arguments)
        assert started.structured_content is not None
        assert started.structured_content["data"]["status"] == "queued", started
        host = Host(client, await browser.new_page())
        await host.show(host_url, arguments, started)
        with anyio.fail_after(60):
            while not host.statuses:
                await anyio.sleep(0.05)
        openai_server.latency = 0.05

        # The start result names the research; the view reads it through the host, again
        # every two seconds while it runs, until it is done: its question, status, citations.
        await host.view.locator("#top .badge.s-completed").wait_for(timeout=90_000)
        assert await host.text("h1") == QUESTION
        assert await host.view.locator("#report button.cite").count() > 0
        assert "[1]" in await host.text("#report")
        await host.screenshot("view_app_host.png")
        assert host.statuses[0] in {"queued", "running"} and host.statuses[-1] == "completed"
        assert set(host.forwarded) == {"resources/read"}  # nothing else asked of the server
        # The host's context: its theme on the view's root; the view's size told to the host.
        assert await host.view.locator("html").get_attribute("data-theme") == "dark"
        assert await host.page.evaluate("window.hostLog.sizes.length") > 0
        assert host.errors == []


async def test_a_follow_up_question_and_a_link_go_through_the_host(
    host_url: str, browser: Any, research_env: dict[str, str]
) -> None:
    async with app_client(research_env) as client:
        started = await call(client, action="deep-research", query=QUESTION)
        research_id = started["data"]["research_id"]
        await run_to_end(client, research_id)
        arguments = {"action": "deep-research-report", "research_id": research_id}
        report = await client.call_tool("research", arguments)
        host = Host(client, await browser.new_page())
        await host.show(host_url, arguments, report)
        await host.view.locator("#top .badge.s-completed").wait_for(timeout=30_000)
        assert host.statuses == ["completed"]  # a finished research is read once

        follow_up = "What share of practitioners consider this a priority?"
        await host.view.locator("#ask-query").fill(follow_up)
        await host.view.get_by_role("button", name="Ask").click()
        await host.view.locator("#followups").get_by_text(follow_up).wait_for(timeout=30_000)
        assert host.forwarded.count("tools/call") == 1
        asked = await call(client, action="deep-research-status", research_id=research_id)
        assert asked["success"]

        link = host.view.locator("#sources a[href^='http']").first
        url = await link.get_attribute("href")
        await link.click()
        assert await host.page.evaluate("window.hostLog.opened") == [url]
        assert host.errors == []
