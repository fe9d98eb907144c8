"""The research view as an MCP App (extension ``io.modelcontextprotocol/ui``), negotiated over a
real stdio session: a client that declares the extension sees the research tool link its
``ui://`` page and can read that page; any other client gets the very bytes it got before the
app existed.

The golden file ``golden/tools_list_plain.jsonl`` holds the raw ``tools/list`` answers (one JSON-RPC
line each) of a plain client. It was written from the server as it was before the app, and
changes only on purpose: when the research tool itself changes (its description, its schema),
regenerate it with ``FOUNDRY_MCP_REGENERATE_GOLDEN=1 pytest tests/e2e/test_view_app.py`` and
review the diff: the only change must be the one you made to the tool.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.extension import advertise
from mcp.shared.exceptions import MCPError
from mcp.types import ClientCapabilities, TextResourceContents

from foundry_mcp.view.app import APP_URI, client_wants_apps, research_id_of
from tests.e2e.conftest import call, run_to_end
from tests.e2e.teamserver import TeamServer, mcp_client
from tests.e2e.test_http_server import ALICE, BOB, UNKNOWN_ID, _finished
from tests.fakes import FakeHTTPServer
from tests.research_env import research_environment

pytestmark = [pytest.mark.stdio]

GOLDEN = Path(__file__).parent / "golden" / "tools_list_plain.jsonl"
REGENERATE = "FOUNDRY_MCP_REGENERATE_GOLDEN"
# The protocol versions editors speak today; a plain client of each must see what it saw.
PLAIN_VERSIONS = ("2025-06-18", "2025-11-25")
APP_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME = "text/html;profile=mcp-app"


class LineSession:
    """``python -m foundry_mcp`` over stdio, spoken to line by line, keeping each answer's raw
    bytes (the SDK's client would parse them, and a byte-for-byte comparison needs them raw)."""

    def __init__(self, env: dict[str, str], version: str, capabilities: dict[str, Any]) -> None:
        base = {key: os.environ[key] for key in ("PATH", "LANG") if key in os.environ}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "foundry_mcp"],
            env={**base, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._ids = iter(range(1, 1_000))
        threading.Thread(target=self._read, daemon=True).start()
        self.initialized = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities,
                "clientInfo": {"name": "golden", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def raw(self, method: str, params: dict[str, Any] | None = None) -> bytes:
        """The raw line answering ``method``."""
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            line = self._lines.get(timeout=30)
            answer = json.loads(line)
            if answer.get("id") == request_id and "method" not in answer:
                return line

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = json.loads(self.raw(method, params))
        assert "error" not in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def app_env(
    tmp_path_factory: pytest.TempPathFactory,
    shared_openai: FakeHTTPServer,
    shared_tavily: FakeHTTPServer,
) -> dict[str, str]:
    return research_environment(tmp_path_factory.mktemp("app"), shared_openai, shared_tavily)


def session(env: dict[str, str], version: str, capabilities: dict[str, Any]) -> LineSession:
    return LineSession(env, version, capabilities)


@pytest.fixture(scope="module")
def plain_lines(app_env: dict[str, str]) -> Iterator[list[bytes]]:
    """The raw ``tools/list`` answer of a plain client, one per protocol version (read once:
    the tests only read them)."""
    lines = []
    for version in PLAIN_VERSIONS:
        plain = session(app_env, version, {})
        try:
            lines.append(plain.raw("tools/list"))
        finally:
            plain.close()
    yield lines


def test_a_plain_client_sees_the_tool_list_byte_for_byte_as_before(
    plain_lines: list[bytes],
) -> None:
    if os.environ.get(REGENERATE) == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_bytes(b"".join(plain_lines))
    golden = GOLDEN.read_bytes().splitlines(keepends=True)
    assert plain_lines == golden, (
        f"tools/list changed for a client without {APP_EXTENSION}; if the research tool changed "
        f"on purpose, regenerate with {REGENERATE}=1 (see this module's docstring)"
    )


APPS = {"extensions": {APP_EXTENSION: {"mimeTypes": [APP_MIME]}}}


@pytest.fixture(scope="module")
def apps_session(app_env: dict[str, str]) -> Iterator[LineSession]:
    """A session of a client that renders MCP Apps, as such a host declares it (shared: the
    tests only read through it)."""
    apps = session(app_env, "2025-11-25", APPS)
    try:
        yield apps
    finally:
        apps.close()


def test_a_client_that_renders_apps_sees_the_tool_link_the_page(
    apps_session: LineSession, plain_lines: list[bytes]
) -> None:
    (tool,) = apps_session.request("tools/list")["tools"]
    assert tool["_meta"]["ui"] == {"resourceUri": APP_URI}
    assert tool["_meta"]["ui/resourceUri"] == APP_URI  # the flat key of older hosts
    # Nothing else of the tool changed: the plain client's tool plus the link.
    (plain,) = json.loads(plain_lines[1])["result"]["tools"]
    assert {**tool, "_meta": plain["_meta"]} == plain
    assert {k: v for k, v in tool["_meta"].items() if not k.startswith("ui")} == plain["_meta"]

    listed = apps_session.request("resources/list")["resources"]
    (page,) = [r for r in listed if r["uri"] == APP_URI]
    assert page["mimeType"] == APP_MIME
    templates = apps_session.request("resources/templates/list")["resourceTemplates"]
    assert "research://{research_id}/view" in [t["uriTemplate"] for t in templates]


def test_the_page_reads_as_an_app_under_a_policy_that_allows_no_other_origin(
    apps_session: LineSession,
) -> None:
    (content,) = apps_session.request("resources/read", {"uri": APP_URI})["contents"]
    assert content["uri"] == APP_URI and content["mimeType"] == APP_MIME
    csp = content["_meta"]["ui"]["csp"]
    assert csp == {
        "connectDomains": [],
        "resourceDomains": [],
        "frameDomains": [],
        "baseUriDomains": [],
    }
    html = content["text"]
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert "ui/initialize" in html and "ui/notifications/tool-result" in html  # the bridge
    assert "FoundryView" in html  # the view it feeds
    assert "http://" not in html.replace("http://www.w3.org", "")  # nothing fetched elsewhere


def test_a_client_without_the_extension_finds_nothing_new(app_env: dict[str, str]) -> None:
    for capabilities in (
        {},
        # The extension, but not this MIME type (another kind of app): nothing either.
        {"extensions": {APP_EXTENSION: {"mimeTypes": ["text/html+skybridge"]}}},
    ):
        plain = session(app_env, "2025-11-25", capabilities)
        try:
            (tool,) = plain.request("tools/list")["tools"]
            assert "ui" not in tool["_meta"] and "ui/resourceUri" not in tool["_meta"]
            resources = plain.request("resources/list")["resources"]
            assert all(not r["uri"].startswith("ui://") for r in resources)
            templates = plain.request("resources/templates/list")["resourceTemplates"]
            assert all(not t["uriTemplate"].endswith("/view") for t in templates)
            unknown = json.loads(plain.raw("resources/read", {"uri": APP_URI}))
            assert "error" in unknown, unknown
        finally:
            plain.close()


@pytest.mark.anyio
async def test_the_view_data_of_a_research_reads_through_a_client_that_renders_apps(
    app_env: dict[str, str],
) -> None:
    async with apps_client(app_env) as client:
        started = await call(client, action="deep-research", query="What is a bloom filter?")
        research_id = started["data"]["research_id"]
        await run_to_end(client, research_id)
        (content,) = (await client.read_resource(f"research://{research_id}/view")).contents
        assert isinstance(content, TextResourceContents)
        assert content.mime_type == "application/json"
        data = json.loads(content.text)
        assert data["research_id"] == research_id
        assert data["question"] == "What is a bloom filter?"
        assert data["status"] == "completed" and not data["live"]
        assert data["report"] and data["sources"]
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("research://nope/view")
        assert "nope" in str(unknown.value) or "not found" in str(unknown.value).lower()


def apps_client(env: dict[str, str]) -> Client:
    """The SDK's client over stdio, declaring that it renders MCP Apps."""
    base = {key: os.environ[key] for key in ("PATH", "LANG") if key in os.environ}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "foundry_mcp"], env={**base, **env}
    )
    return Client(params, mode="legacy", extensions=[advertise(APP_EXTENSION, APPS_SETTINGS)])


APPS_SETTINGS = APPS["extensions"][APP_EXTENSION]


@pytest.mark.parametrize(
    ("extensions", "wanted"),
    [
        (None, False),
        ({}, False),
        ({APP_EXTENSION: {}}, False),
        ({APP_EXTENSION: {"mimeTypes": "text/html;profile=mcp-app"}}, False),
        ({APP_EXTENSION: {"mimeTypes": ["text/html"]}}, False),
        ({"io.example/ui": {"mimeTypes": [APP_MIME]}}, False),
        ({APP_EXTENSION: {"mimeTypes": ["text/html", APP_MIME]}}, True),
    ],
)
def test_only_the_extension_with_the_app_mime_type_asks_for_the_app(
    extensions: dict[str, Any] | None, wanted: bool
) -> None:
    capabilities = ClientCapabilities(extensions=extensions)
    assert client_wants_apps(capabilities) is wanted
    assert client_wants_apps(None) is False


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_on_a_team_server_the_view_data_is_its_owners_alone(
    research_env: dict[str, str], mode: str
) -> None:
    # Over streamable HTTP, in the legacy handshake and in the stateless protocol (whose
    # requests each carry the client's capabilities), with a principal per bearer token.
    team_env = {**research_env, "FOUNDRY_MCP_TOKENS": f"alice:{ALICE},bob:{BOB}"}
    apps = [advertise(APP_EXTENSION, APPS_SETTINGS)]
    with TeamServer(team_env) as server:
        async with mcp_client(server.url, ALICE, mode=mode, extensions=apps) as alice:
            (tool,) = (await alice.list_tools()).tools
            assert tool.meta is not None and tool.meta["ui"] == {"resourceUri": APP_URI}
            research_id = await _finished(alice)
            (content,) = (await alice.read_resource(f"research://{research_id}/view")).contents
            assert isinstance(content, TextResourceContents)
            assert json.loads(content.text)["research_id"] == research_id
        async with mcp_client(server.url, BOB, mode=mode, extensions=apps) as bob:
            refused = []
            for rid in (research_id, UNKNOWN_ID):
                with pytest.raises(MCPError) as error:
                    await bob.read_resource(f"research://{rid}/view")
                refused.append(str(error.value).replace(rid, "ID"))
            assert refused[0] == refused[1]  # alice's research is not there for bob
        async with mcp_client(server.url, ALICE, mode=mode) as plain:
            (tool,) = (await plain.list_tools()).tools
            assert tool.meta is not None and "ui" not in tool.meta


@pytest.mark.parametrize(
    ("uri", "research_id"),
    [
        ("research://deepres-0123456789ab/view", "deepres-0123456789ab"),
        ("research://deepres-0123456789ab/report", None),
        ("research://a/b/view", None),  # not one research's
        ("research:///view", None),
        ("ui://foundry-mcp/research", None),
    ],
)
def test_a_view_address_names_one_research(uri: str, research_id: str | None) -> None:
    assert research_id_of(uri) == research_id
