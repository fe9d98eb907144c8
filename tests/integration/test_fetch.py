"""PageFetcher against a fake page server on 127.0.0.1: extraction, caps, content types, SSRF.

The fakes live on loopback, which the SSRF guard refuses: tests that read pages turn the guard
off with ``allow_private_networks``; the SSRF tests keep it on and replace the resolver.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from foundry_mcp.config import FetchSettings, load_settings
from foundry_mcp.providers import fetch as fetch_module
from foundry_mcp.providers.fetch import PageFetcher, address_refusal
from tests.fakes import (
    FakeHTTPServer,
    FakeResponse,
    article_html,
    fake_pages,
    html_page,
    make_pdf,
    redirect,
)

pytestmark = pytest.mark.anyio

ARTICLE = article_html(
    "Heat pumps in cold climates",
    [
        "Field trials in Norway found that air-source heat pumps kept a seasonal COP above 2.5 "
        "even when outdoor temperatures fell below minus 20 degrees.",
        "Defrost cycles cost between 5 and 10 percent of the delivered heat in humid climates.",
    ],
)


def _open(**settings: object) -> PageFetcher:
    values: dict[str, object] = {"allow_private_networks": True, "timeout": 5.0}
    values.update(settings)
    return PageFetcher(FetchSettings.model_validate(values))


async def _fetch_one(
    server: FakeHTTPServer, path: str, **settings: object
) -> fetch_module.FetchResult:
    fetcher = _open(**settings)
    try:
        return await fetcher.fetch(server.base_url + path)
    finally:
        await fetcher.aclose()


# --------------------------------------------------------------------------- reading pages


async def test_html_main_text_is_extracted_without_boilerplate() -> None:
    with fake_pages({"/article": html_page(ARTICLE)}) as server:
        result = await _fetch_one(server, "/article")
    assert result.ok, result.error
    assert result.text is not None
    assert "seasonal COP above 2.5" in result.text
    assert "Defrost cycles" in result.text
    assert "do not extract me" not in result.text  # script
    assert "color: red" not in result.text  # style
    assert "All rights reserved" not in result.text  # footer boilerplate
    assert result.title == "Heat pumps in cold climates"
    assert result.content_type == "text/html"
    assert result.bytes == len(ARTICLE.encode())
    assert result.error is None
    assert result.latency_s >= 0


async def test_stdlib_fallback_when_trafilatura_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import trafilatura

    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("extractor bug")

    monkeypatch.setattr(trafilatura, "extract", broken)
    with fake_pages({"/article": html_page(ARTICLE)}) as server:
        result = await _fetch_one(server, "/article")
    assert result.ok
    assert "seasonal COP above 2.5" in (result.text or "")
    assert "do not extract me" not in (result.text or "")


async def test_page_without_readable_text_is_a_failure() -> None:
    page = "<html><head><script>render()</script></head><body><div id=app></div></body></html>"
    with fake_pages({"/app": html_page(page)}) as server:
        result = await _fetch_one(server, "/app")
    assert not result.ok
    assert result.error == "no readable text on the page"


async def test_plain_text_and_declared_charset() -> None:
    latin = "Température moyenne: -5 °C".encode("latin-1")
    pages = {
        "/notes.txt": FakeResponse(body="Plain notes.\nSecond line.", headers={}),
        "/latin": FakeResponse(body=latin, headers={"content-type": "text/plain; charset=latin-1"}),
    }
    with fake_pages(pages) as server:
        plain = await _fetch_one(server, "/notes.txt")
        decoded = await _fetch_one(server, "/latin")
    assert plain.text == "Plain notes.\nSecond line."
    assert decoded.text == "Température moyenne: -5 °C"


async def test_pdf_pages_are_extracted() -> None:
    pdf = make_pdf(["Borehole temperatures stay near 10 C.", "Page two: costs."], title="Geo")
    headers = {"content-type": "application/pdf"}
    with fake_pages({"/paper.pdf": FakeResponse(body=pdf, headers=headers)}) as server:
        result = await _fetch_one(server, "/paper.pdf")
    assert result.ok, result.error
    assert result.text == "Borehole temperatures stay near 10 C.\n\nPage two: costs."
    assert result.title == "Geo"
    assert result.content_type == "application/pdf"


async def test_damaged_pdf_is_a_failure_not_a_crash() -> None:
    headers = {"content-type": "application/pdf"}
    with fake_pages({"/bad.pdf": FakeResponse(body=b"%PDF-1.4 garbage", headers=headers)}) as s:
        result = await _fetch_one(s, "/bad.pdf")
    assert not result.ok
    assert "PDF" in (result.error or "")


async def test_unsupported_content_type_is_refused() -> None:
    png = FakeResponse(body=b"\x89PNG\r\n\x1a\n", headers={"content-type": "image/png"})
    with fake_pages({"/image": png}) as server:
        result = await _fetch_one(server, "/image")
    assert not result.ok
    assert result.error == "unsupported content type image/png"


async def test_http_error_status_is_reported() -> None:
    with fake_pages({"/broken": FakeResponse(500, body="oops")}) as server:
        result = await _fetch_one(server, "/broken")
    assert not result.ok
    assert result.error == "the server answered HTTP 500"
    assert result.status_code is None  # no page was read


# --------------------------------------------------------------------------- limits


async def test_body_is_cut_at_max_bytes() -> None:
    big = article_html("Big", ["A sentence of the long article body. " * 30] * 200)
    assert len(big) > 200_000
    with fake_pages({"/big": html_page(big)}) as server:
        result = await _fetch_one(server, "/big", max_bytes=50_000)
    assert result.ok, result.error
    assert result.bytes == 50_000
    assert result.truncated
    assert "A sentence of the long article body." in (result.text or "")


async def test_pdf_over_max_bytes_is_refused() -> None:
    pdf = make_pdf(["x" * 100] * 40)
    headers = {"content-type": "application/pdf"}
    with fake_pages({"/big.pdf": FakeResponse(body=pdf, headers=headers)}) as server:
        result = await _fetch_one(server, "/big.pdf", max_bytes=1000)
    assert not result.ok
    assert "larger than 1000 bytes" in (result.error or "")


async def test_redirects_are_followed_up_to_the_cap() -> None:
    pages = {f"/hop{n}": redirect(f"/hop{n + 1}") for n in range(6)}
    pages["/hop6"] = html_page(ARTICLE)
    with fake_pages(pages) as server:
        followed = await _fetch_one(server, "/hop4", max_redirects=2)
        refused = await _fetch_one(server, "/hop0", max_redirects=3)
        base = server.base_url
    assert followed.ok
    assert followed.final_url == base + "/hop6"
    assert not refused.ok
    assert refused.error == "more than 3 redirects ([research.fetch] max_redirects)"
    # Hops 0..3 were requested, and not one more.
    assert [r.path for r in server.requests[-4:]] == ["/hop0", "/hop1", "/hop2", "/hop3"]


async def test_slow_page_times_out() -> None:
    with fake_pages({"/slow": html_page(ARTICLE)}) as server:
        server.latency = 3.0
        started = time.perf_counter()
        result = await _fetch_one(server, "/slow", timeout=0.4)
    assert time.perf_counter() - started < 2.0
    assert not result.ok
    assert result.error == "timed out after 0.4 s"


async def test_concurrent_fetches_are_bounded() -> None:
    pages = {f"/p{n}": html_page(ARTICLE) for n in range(6)}
    with fake_pages(pages) as server:
        server.latency = 0.3
        fetcher = _open(max_concurrent=2)
        urls = [f"{server.base_url}/p{n}" for n in range(6)]
        started = time.perf_counter()
        try:
            results = await fetcher.fetch_many(urls)
        finally:
            await fetcher.aclose()
        elapsed = time.perf_counter() - started
    assert all(r.ok for r in results)
    assert [r.url for r in results] == urls
    assert 0.85 < elapsed < 3.0  # three waves of two, not one wave of six


# --------------------------------------------------------------------------- SSRF guard


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("10.0.0.1", "private"),
        ("192.168.1.20", "private"),
        ("172.16.5.4", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("169.254.10.1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped IPv6
        ("::ffff:10.1.2.3", "private"),
        ("2002:0a00:0001::1", "private"),  # 6to4 around 10.0.0.1
        ("64:ff9b::a9fe:a9fe", "cloud metadata"),  # NAT64 around 169.254.169.254
        ("fe80::1%eth0", "link-local"),
        ("100.64.0.1", "not a public address"),  # carrier-grade NAT
        ("240.0.0.1", "address"),  # reserved (Python files it as private too)
    ],
)
def test_non_public_addresses_are_refused(address: str, reason: str) -> None:
    refusal = address_refusal(address)
    assert refusal is not None
    assert reason in refusal


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_refusal(address) is None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:9/secret", "127.0.0.1, a loopback address"),
        ("http://10.0.0.1/admin", "10.0.0.1, a private address"),
        ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
        ("http://[::1]:9/", "::1, a loopback address"),
        ("http://localhost:9/", "a loopback address"),
    ],
)
async def test_guard_refuses_private_targets_before_connecting(url: str, expected: str) -> None:
    fetcher = PageFetcher(FetchSettings(timeout=2.0))  # the guard is on by default
    try:
        result = await fetcher.fetch(url)
    finally:
        await fetcher.aclose()
    assert not result.ok
    assert expected in (result.error or "")
    assert "allow_private_networks" in (result.error or "")
    assert result.bytes == 0


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.org/file", "gopher://x/", "javascript:alert(1)"]
)
async def test_only_http_and_https_are_fetched(url: str) -> None:
    fetcher = PageFetcher(FetchSettings(allow_private_networks=True))
    try:
        result = await fetcher.fetch(url)
    finally:
        await fetcher.aclose()
    assert not result.ok
    assert (result.error or "").startswith(("only http and https", "the URL has no host"))


async def test_unresolvable_host_is_a_page_error(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_such_host(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(fetch_module, "resolve_host", no_such_host)
    fetcher = PageFetcher(FetchSettings())
    try:
        result = await fetcher.fetch("https://no-such-host.invalid/page")
    finally:
        await fetcher.aclose()
    assert result.error == "cannot resolve the host no-such-host.invalid"


def _pretend_public(monkeypatch: pytest.MonkeyPatch, hostname: str) -> list[str]:
    """Make ``hostname`` resolve to a public address for the guard; others resolve normally."""
    real = fetch_module.resolve_host
    checked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        checked.append(host)
        if host == hostname:
            return ["93.184.216.34"]
        return await real(host, port)

    monkeypatch.setattr(fetch_module, "resolve_host", resolver)
    return checked


async def test_redirect_from_a_public_host_to_a_private_one_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with fake_pages({"/secret": html_page(ARTICLE)}) as server:
        port = server.base_url.rsplit(":", 1)[1]
        server.route("GET", "/go", lambda r: redirect(f"http://127.0.0.1:{port}/secret"))
        checked = _pretend_public(monkeypatch, "localhost")
        # The fake is really on loopback; the connected-peer check would (rightly) refuse the
        # first hop too. Switch it off so this test isolates the per-hop resolution check.
        monkeypatch.setattr(fetch_module, "_check_peer", lambda response, host: None)
        fetcher = PageFetcher(FetchSettings(timeout=5.0))
        try:
            result = await fetcher.fetch(f"http://localhost:{port}/go")
        finally:
            await fetcher.aclose()
        requested = [r.path for r in server.requests]
    assert checked == ["localhost", "127.0.0.1"]  # every hop was resolved and checked
    assert requested == ["/go"]  # the private target was never requested
    assert not result.ok
    assert "127.0.0.1, a loopback address" in (result.error or "")


async def test_connection_reaching_a_private_peer_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # DNS rebinding: the check saw a public address, the connection went to loopback.
    with fake_pages({"/secret": html_page(ARTICLE)}) as server:
        port = server.base_url.rsplit(":", 1)[1]
        _pretend_public(monkeypatch, "localhost")
        fetcher = PageFetcher(FetchSettings(timeout=5.0))
        try:
            result = await fetcher.fetch(f"http://localhost:{port}/secret")
        finally:
            await fetcher.aclose()
    assert not result.ok
    assert "the connection to localhost reached 127.0.0.1" in (result.error or "")
    assert result.text is None and result.bytes == 0


async def test_allow_private_networks_from_the_environment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"FOUNDRY_MCP_FETCH_ALLOW_PRIVATE": "1", "FOUNDRY_MCP_CONFIG": str(tmp_path / "c.toml")}
    (tmp_path / "c.toml").write_text("")
    settings = load_settings(env=env, cwd=tmp_path, home=home)
    assert settings.research.fetch.allow_private_networks
    with fake_pages({"/article": html_page(ARTICLE)}) as server:
        fetcher = PageFetcher(settings.research.fetch)
        try:
            result = await fetcher.fetch(server.base_url + "/article")
        finally:
            await fetcher.aclose()
    assert result.ok, result.error
