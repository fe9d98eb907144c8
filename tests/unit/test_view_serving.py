"""The live view's server (``foundry-mcp view --serve``) and the team server's signed view links:
the access token in the path, Host and Origin checks against DNS rebinding, the security
headers, the refusal to listen beyond loopback, and links that expire and open only their own
research for their own principal."""

from __future__ import annotations

import html
import json
import socket

import anyio
import httpx
import pytest

from foundry_mcp.errors import ConfigError, ResearchNotFoundError
from foundry_mcp.view.data import ViewData
from foundry_mcp.view.serving import (
    NO_TOKEN,
    LinkRefused,
    Listening,
    LiveView,
    ViewLinks,
    check_view_binding,
    local_security,
    serve_view,
)

pytestmark = pytest.mark.anyio

PORT = 8123
TOKEN = "k7Qx2mW9pL4vR8sT1nB6cY3zF5hJ0dGa"
HOST = f"127.0.0.1:{PORT}"
QUESTION = "<img src=x onerror=alert(1)> How do B-trees split?"


def _data(live: bool = True, research_id: str = "deepres-0123456789ab") -> ViewData:
    return ViewData(
        research_id=research_id,
        question=QUESTION,
        status="running" if live else "completed",
        live=live,
        phase="gathering",
        phase_index=2,
        created_at="2026-11-29T08:00:00+00:00",
        updated_at="2026-11-29T08:01:00+00:00",
    )


class _Research:
    """What the server reads: the research's data now, or an error."""

    def __init__(self) -> None:
        self.data = _data()
        self.missing = False
        self.reads = 0

    async def load(self) -> ViewData:
        self.reads += 1
        if self.missing:
            raise ResearchNotFoundError("No research with id deepres-0123456789ab.")
        return self.data


def _client(research: _Research) -> httpx.AsyncClient:
    app = LiveView(research.load, TOKEN, local_security(PORT))
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url=f"http://{HOST}", trust_env=False
    )


async def test_the_page_and_its_data_answer_behind_the_token_only() -> None:
    research = _Research()
    async with _client(research) as client:
        page = await client.get(f"/{TOKEN}/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        # The question is the page's data, never its markup.
        assert "<img src=x" not in page.text
        data = await client.get(f"/{TOKEN}/data")
        assert data.status_code == 200
        assert data.headers["content-type"].startswith("application/json")
        assert json.loads(data.text)["question"] == QUESTION
        assert json.loads(data.text)["live"] is True

        # The page's folder, so that its ./data resolves inside the token's path.
        folder = await client.get(f"/{TOKEN}")
        assert folder.status_code == 308 and folder.headers["location"] == f"{TOKEN}/"

        reads = research.reads
        for wrong in ("/", "/data", f"/{TOKEN[:-1]}/", f"/{TOKEN[:-1]}/data", f"/{TOKEN}x/data"):
            refused = await client.get(wrong)
            assert refused.status_code == 403, wrong
            assert refused.text == NO_TOKEN
            assert TOKEN not in refused.text
        assert research.reads == reads  # nothing was read for them

        assert (await client.get(f"/{TOKEN}/other")).status_code == 404
        assert (await client.post(f"/{TOKEN}/data", json={})).status_code == 405


async def test_every_answer_carries_the_security_headers() -> None:
    async with _client(_Research()) as client:
        for path in (f"/{TOKEN}/", f"/{TOKEN}/data", "/nothing"):
            answer = await client.get(path)
            assert answer.headers["x-content-type-options"] == "nosniff", path
            assert answer.headers["referrer-policy"] == "no-referrer", path
            assert answer.headers["cache-control"] == "no-store", path
            assert answer.headers["x-frame-options"] == "DENY", path
            policy = answer.headers["content-security-policy"]
            assert "default-src 'none'" in policy, path
        page = await client.get(f"/{TOKEN}/")
        policy = page.headers["content-security-policy"]
        # The page's own policy, as its <meta> declares it: its own origin only, for its feed.
        assert "connect-src 'self'" in policy
        declared = html.unescape(page.text.split('Content-Security-Policy" content="')[1])
        assert policy == declared.split('"')[0] + "; frame-ancestors 'none'"
        assert "unsafe-inline" not in policy and "script-src 'sha256-" in policy


async def test_a_foreign_host_or_origin_is_refused_before_anything_is_read() -> None:
    research = _Research()
    async with _client(research) as client:
        rebound = await client.get(f"/{TOKEN}/data", headers={"Host": f"rebind.example:{PORT}"})
        assert rebound.status_code == 421
        other_port = await client.get(f"/{TOKEN}/data", headers={"Host": "127.0.0.1:9"})
        assert other_port.status_code == 421
        elsewhere = await client.get(f"/{TOKEN}/data", headers={"Origin": "http://rebind.example"})
        assert elsewhere.status_code == 403
        assert research.reads == 0
        for name in ("localhost", "[::1]"):
            own = await client.get(
                f"/{TOKEN}/data",
                headers={"Host": f"{name}:{PORT}", "Origin": f"http://{name}:{PORT}"},
            )
            assert own.status_code == 200, name


async def test_an_unknown_research_is_a_plain_404() -> None:
    research = _Research()
    research.missing = True
    async with _client(research) as client:
        for path in (f"/{TOKEN}/", f"/{TOKEN}/data"):
            missing = await client.get(path)
            assert missing.status_code == 404
            assert missing.headers["content-type"].startswith("text/plain")
            assert missing.text.startswith("No research with id deepres-0123456789ab.\nfix: ")


def test_only_loopback_unless_allowed() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_view_binding(host, allow_remote=False)
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com"):
        with pytest.raises(ConfigError) as refused:
            check_view_binding(host, allow_remote=False)
        assert "Refusing to serve the research view" in refused.value.message
        assert "127.0.0.1" in refused.value.remediation
        check_view_binding(host, allow_remote=True)


async def test_serve_view_listens_on_loopback_prints_its_token_and_stops() -> None:
    research = _Research()
    stop = anyio.Event()
    heard: list[Listening] = []
    answers: list[httpx.Response] = []

    async def browse() -> None:
        while not heard:
            await anyio.sleep(0.01)
        async with httpx.AsyncClient(trust_env=False, timeout=10) as client:
            answers.append(await client.get(heard[0].url + "data"))
            answers.append(await client.get(heard[0].url.rsplit("/", 2)[0] + "/guess/data"))
        stop.set()

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(browse)
            await serve_view(research.load, on_ready=heard.append, stop=stop)
    where = heard[0]
    assert where.host == "127.0.0.1" and where.port > 0
    token = where.url.rstrip("/").rsplit("/", 1)[1]
    assert len(token) >= 40  # 32 random bytes
    assert [a.status_code for a in answers] == [200, 403]
    assert json.loads(answers[0].text)["research_id"] == "deepres-0123456789ab"


async def test_serve_view_refuses_a_taken_port_with_a_fix() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError) as refused:
            await serve_view(_Research().load, port=port)
    assert "--port" in refused.value.remediation


# ---------------------------------------------------------------------- signed links


class _Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_view_link_opens_its_research_for_its_principal_until_it_expires() -> None:
    clock = _Clock()
    links = ViewLinks(b"k" * 32, seconds=3600, clock=clock)
    link = links.issue("deepres-0123456789ab", "alice")
    assert link.path == f"/view/deepres-0123456789ab/{link.token}/"
    assert "alice" not in link.token  # the name is encoded, not shown
    checked = links.check(link.token, "deepres-0123456789ab")
    assert checked.principal == "alice" and checked.expires_at == clock.now + 3600

    clock.now += 3599
    links.check(link.token, "deepres-0123456789ab")
    clock.now += 1
    with pytest.raises(LinkRefused, match="expired"):
        links.check(link.token, "deepres-0123456789ab")


def test_a_view_link_is_bound_to_its_research_principal_expiry_and_key() -> None:
    clock = _Clock()
    links = ViewLinks(b"k" * 32, clock=clock)
    link = links.issue("deepres-0123456789ab", "alice")
    expiry, name, mac = link.token.split(".")
    bob = links.issue("deepres-0123456789ab", "bob").token.split(".")[1]
    forged = (
        f"{expiry}.{bob}.{mac}",  # another principal
        f"{int(expiry) + 86400}.{name}.{mac}",  # a later expiry
        f"{expiry}..{mac}",  # no principal (a server without tokens)
        f"{expiry}.{name}.{mac[:-1]}0" if mac[-1] != "0" else f"{expiry}.{name}.{mac[:-1]}1",
        f"{expiry}.{name}",
        "not-a-link",
        "",
    )
    for token in forged:
        with pytest.raises(LinkRefused):
            links.check(token, "deepres-0123456789ab")
    with pytest.raises(LinkRefused):
        links.check(link.token, "deepres-ba9876543210")  # another research
    with pytest.raises(LinkRefused):
        ViewLinks(b"x" * 32, clock=clock).check(link.token, "deepres-0123456789ab")
    anonymous = links.issue("deepres-0123456789ab", None)
    assert links.check(anonymous.token, "deepres-0123456789ab").principal is None
