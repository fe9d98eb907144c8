"""PageFetcher against a fake page server on 127.0.0.1: extraction, caps, content types, SSRF.

The fakes live on loopback, which the SSRF guard refuses: tests that read pages turn the guard
off with ``allow_private_networks``; the SSRF tests keep it on, replace the resolver and, where a
page must be read through the guard, let it accept 127.0.0.1 (``_treat_as_public``) while
127.0.0.2 stands for a private host. The system resolver refuses every name here (``no_dns``).
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from foundry_mcp.config import FetchSettings, load_settings
from foundry_mcp.providers.pages import fetch as fetch_module
from foundry_mcp.providers.pages import ssrf
from foundry_mcp.providers.pages.fetch import PageFetcher
from foundry_mcp.providers.pages.ssrf import address_refusal
from tests.fakes import (
    FakeHTTPServer,
    FakeResponse,
    article_html,
    fake_pages,
    html_page,
    long_paragraphs,
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


FACT = "The deepest core sample dated the ice at 41,200 years."


async def test_a_400_kb_page_is_read_whole() -> None:
    """No fixed cut: the fact at 90% of a long page reaches the source's text."""
    paragraphs = long_paragraphs(400_000, FACT)
    markup = article_html("Ice cores", paragraphs, boilerplate=False)
    plain = FakeResponse(body="\n\n".join(paragraphs), headers={"content-type": "text/plain"})
    with fake_pages({"/core.html": html_page(markup), "/core.txt": plain}) as server:
        html = await _fetch_one(server, "/core.html")
        text = await _fetch_one(server, "/core.txt")
    assert html.ok and text.ok, (html.error, text.error)
    assert text.text == "\n\n".join(paragraphs)
    assert not text.truncated
    assert html.text is not None and len(html.text) > 390_000
    assert FACT in html.text and paragraphs[-1] in html.text


async def test_a_page_of_two_million_characters_is_kept_by_default() -> None:
    body = "\n\n".join(long_paragraphs(2_000_000, FACT, depth=0.99))[:2_000_000]
    plain = FakeResponse(body=body, headers={"content-type": "text/plain"})
    with fake_pages({"/book.txt": plain}) as server:
        result = await _fetch_one(server, "/book.txt")
    assert result.ok, result.error
    assert result.text == body and FACT in result.text


async def test_text_past_max_page_chars_is_cut_there() -> None:
    body = "\n\n".join(long_paragraphs(40_000, FACT))
    plain = FakeResponse(body=body, headers={"content-type": "text/plain"})
    with fake_pages({"/long.txt": plain}) as server:
        result = await _fetch_one(server, "/long.txt", max_page_chars=10_000)
    assert result.ok, result.error
    assert result.text == body[:10_000]
    assert result.truncated


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


async def test_a_redirect_out_of_the_bounds_is_not_followed() -> None:
    """A research's source bounds are asked about every hop: a page outside them is never
    requested, even when a page inside redirects to it."""
    pages = {"/start": redirect("/elsewhere"), "/elsewhere": html_page(ARTICLE)}
    with fake_pages(pages) as server:
        fetcher = _open()
        try:
            refused = await fetcher.fetch(
                server.base_url + "/start", lambda url: not url.endswith("/elsewhere")
            )
            followed = await fetcher.fetch(server.base_url + "/start", lambda url: True)
        finally:
            await fetcher.aclose()
    assert not refused.ok and refused.error == "outside the research's source bounds"
    assert followed.ok
    assert [r.path for r in server.requests] == ["/start", "/start", "/elsewhere"]


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

PRIVATE_PEER = "127.0.0.2"  # a second loopback address, standing for a host on the intranet


@pytest.fixture(autouse=True)
def no_dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail every lookup of a host name by the system resolver: no test may ask real DNS.

    Numeric hosts pass (the fakes are addressed by IP). A test that needs a name replaces
    ``ssrf.resolve_host``; with the guard on, that is the only resolver used.
    """
    real = socket.getaddrinfo
    asked: list[str] = []

    def numeric_only(host: bytes | str | None, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None:
            try:
                ipaddress.ip_address(name.split("%", 1)[0])
            except ValueError:
                asked.append(name)
                raise socket.gaierror(socket.EAI_NONAME, "no DNS in tests") from None
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", numeric_only)
    yield asked
    assert not asked, f"the system resolver was asked for {asked}"


def _resolver(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[list[str]]]) -> list[str]:
    """Replace ``resolve_host``: a name gets its answers in turn (the last repeats); others fail.

    Returns the names looked up, in order.
    """
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        turns = answers[host]
        return turns[min(asked.count(host), len(turns)) - 1]

    monkeypatch.setattr(ssrf, "resolve_host", resolver)
    return asked


def _treat_as_public(monkeypatch: pytest.MonkeyPatch, address: str) -> None:
    """A test-only allowance: the guard accepts ``address`` (where a fake runs) as public."""
    real = ssrf.address_refusal

    def refusal(candidate: str | ssrf.IPAddress) -> str | None:
        return None if str(candidate) == address else real(candidate)

    monkeypatch.setattr(ssrf, "address_refusal", refusal)


class _Listener:
    """A TCP listener that never answers: it counts the connections made to it."""

    def __init__(self, host: str, port: int = 0) -> None:
        self._socket = socket.create_server((host, port), backlog=16)
        self._socket.setblocking(False)
        self.port: int = self._socket.getsockname()[1]

    def connections(self) -> int:
        """How many TCP connections were made (the kernel completes them before accept)."""
        count = 0
        while True:
            try:
                connection, _ = self._socket.accept()
            except BlockingIOError:
                return count
            connection.close()
            count += 1

    def __enter__(self) -> _Listener:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._socket.close()


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.20", "private"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"),
        ("fec0::1", "site-local"),
        ("169.254.10.1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.170.2", "cloud metadata"),  # AWS ECS task metadata
        ("100.100.100.200", "cloud metadata"),  # Alibaba Cloud
        ("fd00:ec2::254", "cloud metadata"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "address"),  # reserved (Python files it as private too)
        ("0.1.2.3", "private"),  # "this network"
        ("198.18.0.1", "private"),  # benchmarking
        ("192.0.2.1", "private"),  # documentation
        ("2001:db8::1", "private"),  # documentation
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("::ffff:10.1.2.3", "private"),
        ("::ffff:100.64.0.1", "carrier-grade NAT"),
        ("2002:0a00:0001::1", "private"),  # 6to4 around 10.0.0.1
        ("2002:6440:1::1", "carrier-grade NAT"),  # 6to4 around 100.64.0.1
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo client 127.0.0.1
        ("64:ff9b::a9fe:a9fe", "cloud metadata"),  # NAT64 around 169.254.169.254
        ("64:ff9b::6440:1", "carrier-grade NAT"),  # NAT64 around 100.64.0.1
        ("64:ff9b:1::1", "reserved"),  # local-use NAT64 prefix
        ("::127.0.0.1", "reserved"),  # IPv4-compatible (deprecated)
    ],
)
def test_non_public_addresses_are_refused(address: str, reason: str) -> None:
    refusal = address_refusal(address)
    assert refusal is not None
    assert reason in refusal


@pytest.mark.parametrize(
    "address",
    [
        "93.184.216.34",
        "8.8.8.8",
        "100.63.255.255",  # just below carrier-grade NAT
        "100.128.0.1",  # just above it
        "2606:4700:4700::1111",
        "2a00:1450:4001:80b::200e",
        "2002:5db8:d822::1",  # 6to4 around a public address
    ],
)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_refusal(address) is None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:9/secret", "refused: 127.0.0.1 is a loopback address"),
        ("http://10.0.0.1/admin", "refused: 10.0.0.1 is a private address"),
        ("http://100.64.0.1/", "refused: 100.64.0.1 is a carrier-grade NAT address"),
        ("http://[fd00::1]/", "refused: fd00::1 is a unique-local address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata"),
        ("http://[::1]:9/", "refused: ::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]:9/", "::ffff:7f00:1 is a loopback address"),
        ("http://localhost:9/", "refused: localhost resolves to 127.0.0.1, a loopback address"),
    ],
)
async def test_guard_refuses_private_targets_before_connecting(
    url: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _resolver(monkeypatch, {"localhost": [["127.0.0.1", "::1"]]})
    fetcher = PageFetcher(FetchSettings(timeout=2.0))  # the guard is on by default
    try:
        result = await fetcher.fetch(url)
    finally:
        await fetcher.aclose()
    assert not result.ok
    assert expected in (result.error or "")
    assert "allow_private_networks" in (result.error or "")
    assert result.bytes == 0
    assert asked == (["localhost"] if "localhost" in url else [])  # IP literals need no DNS


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
    _resolver(monkeypatch, {})
    fetcher = PageFetcher(FetchSettings())
    try:
        result = await fetcher.fetch("https://no-such-host.invalid/page?token=secret")
    finally:
        await fetcher.aclose()
    assert result.error == "cannot resolve the host no-such-host.invalid"


async def test_refused_host_receives_no_request_and_no_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _resolver(monkeypatch, {"intranet.example": [["127.0.0.1"]]})
    with fake_pages({"/secret": html_page(ARTICLE)}) as server, _Listener("127.0.0.1") as bare:
        fetcher = PageFetcher(FetchSettings(timeout=5.0))
        try:
            results = await fetcher.fetch_many(
                [
                    f"http://intranet.example:{server.base_url.rsplit(':', 1)[1]}/secret",
                    f"http://intranet.example:{bare.port}/secret",
                ]
            )
        finally:
            await fetcher.aclose()
        assert server.requests == []
        assert bare.connections() == 0
    assert asked == ["intranet.example", "intranet.example"]
    for result in results:
        assert not result.ok
        assert result.error == (
            "refused: intranet.example resolves to 127.0.0.1, a loopback address "
            "(set [research.fetch] allow_private_networks = true to read such pages)"
        )


async def test_connection_goes_to_the_vetted_address_and_keeps_the_host_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only our resolver knows public.example (the system resolver refuses every name here):
    # the page can only be read if the connection goes to the address the guard vetted.
    _treat_as_public(monkeypatch, "127.0.0.1")
    asked = _resolver(monkeypatch, {"public.example": [["127.0.0.1"]]})
    with fake_pages({"/article": html_page(ARTICLE)}) as server:
        port = server.base_url.rsplit(":", 1)[1]
        fetcher = PageFetcher(FetchSettings(timeout=5.0))
        try:
            result = await fetcher.fetch(f"http://public.example:{port}/article")
        finally:
            await fetcher.aclose()
    assert result.ok, result.error
    assert result.final_url == f"http://public.example:{port}/article"
    assert asked == ["public.example"]  # resolved once, for the one connection
    assert [r.headers["host"] for r in server.requests] == [f"public.example:{port}"]


async def test_a_rebinding_answer_never_reaches_the_private_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The name first answers the (allowed) page server, then a private address, as a rebinding
    # DNS server would. A check-then-connect design would look up the name a second time and
    # connect to the private listener; here the one vetted answer is the one connected to.
    _treat_as_public(monkeypatch, "127.0.0.1")
    with fake_pages({"/article": html_page(ARTICLE)}) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        asked = _resolver(monkeypatch, {"rebind.example": [["127.0.0.1"], [PRIVATE_PEER]]})
        url = f"http://rebind.example:{port}/article"
        with _Listener(PRIVATE_PEER, port) as private:
            first = PageFetcher(FetchSettings(timeout=5.0))
            try:
                served = await first.fetch(url)
            finally:
                await first.aclose()
            # A new connection (a new fetcher has no kept-alive one) gets the private answer.
            second = PageFetcher(FetchSettings(timeout=5.0))
            try:
                refused = await second.fetch(url)
            finally:
                await second.aclose()
            assert private.connections() == 0
        assert len(server.requests) == 1
    assert served.ok, served.error
    assert asked == ["rebind.example", "rebind.example"]  # one lookup per connection
    assert not refused.ok
    assert f"rebind.example resolves to {PRIVATE_PEER}, a loopback address" in (refused.error or "")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata"),
        (f"http://{PRIVATE_PEER}:{{port}}/secret", f"{PRIVATE_PEER} is a loopback address"),
        (
            "http://intranet.example:{port}/secret",
            f"intranet.example resolves to {PRIVATE_PEER}, a loopback address",
        ),
        ("http://[::ffff:10.0.0.5]/", "::ffff:a00:5 is a private address"),
    ],
)
async def test_redirect_to_a_private_target_is_refused_before_it_is_reached(
    target: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _treat_as_public(monkeypatch, "127.0.0.1")
    asked = _resolver(
        monkeypatch,
        {"public.example": [["127.0.0.1"]], "intranet.example": [[PRIVATE_PEER]]},
    )
    with fake_pages({"/go": html_page(ARTICLE)}) as server, _Listener(PRIVATE_PEER) as private:
        location = target.format(port=private.port)
        server.route("GET", "/go", lambda r: redirect(location))
        port = server.base_url.rsplit(":", 1)[1]
        fetcher = PageFetcher(FetchSettings(timeout=5.0))
        try:
            result = await fetcher.fetch(f"http://public.example:{port}/go")
        finally:
            await fetcher.aclose()
        assert [r.path for r in server.requests] == ["/go"]
        assert private.connections() == 0
    assert not result.ok
    assert expected in (result.error or "")
    assert asked[0] == "public.example"


async def test_guard_off_uses_the_plain_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _resolver(monkeypatch, {})
    with fake_pages({"/article": html_page(ARTICLE)}) as server:
        result = await _fetch_one(server, "/article")  # allow_private_networks = true
    assert result.ok, result.error
    assert asked == []


# --------------------------------------------------------------------------- TLS


def _certificates(tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    """A test CA and a certificate for ``name`` signed by it: (ca.pem, cert.pem, key.pem)."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)

    def builder(subject: str, issuer: str, public_key: Any) -> Any:
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        builder("foundry-mcp test CA", "foundry-mcp test CA", ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        builder(name, "foundry-mcp test CA", key.public_key())
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = (tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


class _TLSPageHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _TLSPageServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    def do_GET(self) -> None:
        self.server.hosts.append(self.headers.get("host", ""))
        body = ARTICLE.encode()
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(body)


class _TLSPageServer(ThreadingHTTPServer):
    """ARTICLE over HTTPS on 127.0.0.1; records the SNI names and Host headers it received."""

    daemon_threads = True

    def __init__(self, cert: Path, key: Path) -> None:
        super().__init__(("127.0.0.1", 0), _TLSPageHandler)
        self.server_names: list[str | None] = []
        self.hosts: list[str] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.sni_callback = lambda _sock, name, _ctx: self.server_names.append(name)
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.port: int = self.server_address[1]
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> _TLSPageServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)


async def test_https_keeps_sni_and_the_certificate_check_on_the_host_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ca, cert, key = _certificates(tmp_path, "secure.example")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    _treat_as_public(monkeypatch, "127.0.0.1")
    _resolver(monkeypatch, {"secure.example": [["127.0.0.1"]], "impostor.example": [["127.0.0.1"]]})
    with _TLSPageServer(cert, key) as server:
        fetcher = PageFetcher(FetchSettings(timeout=5.0))
        try:
            good = await fetcher.fetch(f"https://secure.example:{server.port}/article")
            bad = await fetcher.fetch(f"https://impostor.example:{server.port}/article")
        finally:
            await fetcher.aclose()
    assert good.ok, good.error
    assert "seasonal COP above 2.5" in (good.text or "")
    assert server.hosts == [f"secure.example:{server.port}"]
    # The certificate names secure.example, not the address connected to: a name it does not
    # cover is refused by the client although the same server answered.
    assert server.server_names == ["secure.example", "impostor.example"]
    assert not bad.ok
    assert bad.error == "network error (ConnectError)"


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
