"""Reading the pages behind search results: bounded, guarded downloads and text extraction.

``PageFetcher`` downloads with one ``httpx.AsyncClient`` and never raises for a page: every
problem (refused address, too many redirects, wrong content type, timeout, HTTP error, nothing
readable) comes back as ``FetchResult(ok=False, error=...)``.

Limits (``[research.fetch]``): ``max_concurrent`` downloads at a time, ``max_bytes`` per body
(read as a stream and stopped there), ``max_redirects`` hops (followed one by one so each is
checked), ``timeout`` per page. Only HTML, plain text and PDF are read. Text is extracted in a
worker thread (trafilatura for HTML with a stdlib fallback, pypdf for PDF), so a large page never
blocks the event loop.

SSRF guard (unless ``allow_private_networks``): only ``http``/``https`` URLs, and httpx opens
every TCP connection (first request and each redirect hop alike) through ``_VettingBackend``. It
resolves the host once per connection with ``resolve_host`` (an IP-literal host is judged as it
is, without DNS), refuses the page when any address is loopback, private, carrier-grade NAT,
unique-local, site-local, link-local, multicast, reserved, unspecified, a cloud metadata address
or otherwise not public (IPv4-mapped, 6to4, Teredo and NAT64 IPv6 addresses are also refused
when the IPv4 address they carry is), and otherwise connects to those vetted addresses, never to
the name. Nothing resolves the name a second time, so a DNS answer that changes after the check
(DNS rebinding) cannot steer the connection, and a refused host receives no byte, not even a TCP
handshake. The Host header, TLS SNI and the certificate check still use the host name. A
kept-alive connection serves only its own origin (scheme, host, port), vetted when it opened.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import socket
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

import anyio
import httpcore
import httpx

from foundry_mcp.config import FetchSettings
from foundry_mcp.providers.extract import PDFError, html_title, html_to_text, read_pdf

log = logging.getLogger(__name__)

USER_AGENT = "Mozilla/5.0 (compatible; foundry-mcp/0.1; deep research)"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.1"
MAX_TEXT_CHARS = 60_000  # the same cap as a search provider's page text
EXTRACT_THREADS = 2  # extraction is CPU-bound; more threads only contend for the GIL
REDIRECT_STATUSES = {301, 302, 303, 307, 308}
METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Not covered by is_private on Python 3.11 (CGNAT) or named explicitly for a clear reason.
_CARRIER_GRADE_NAT = ipaddress.ip_network("100.64.0.0/10")
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_TEXT_TYPES = {"text/plain", "text/markdown", "text/x-markdown", "text/x-rst", "text/csv"}
_PDF_TYPES = {"application/pdf", "application/x-pdf"}
_PRIVATE_HINT = "set [research.fetch] allow_private_networks = true to read such pages"


@dataclass
class FetchResult:
    """What fetching one URL gave: the page text, or why there is none."""

    url: str
    ok: bool
    text: str | None = None
    title: str | None = None
    final_url: str | None = None
    content_type: str | None = None
    status_code: int | None = None
    bytes: int = 0
    truncated: bool = False
    error: str | None = None
    latency_s: float = 0.0


class FetchRefusedError(Exception):
    """A page that will not be read; the message says why (no URL secrets, no traceback)."""


@dataclass
class _Download:
    final_url: str
    kind: str  # html | text | pdf
    content_type: str
    charset: str | None
    status: int
    data: bytes
    truncated: bool


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (tests replace this function)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def address_refusal(address: str | IPAddress) -> str | None:
    """Why a connection to ``address`` is not allowed, or None when it is a public address."""
    if isinstance(address, str):
        try:
            ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return "not an IP address"
    else:
        ip = address
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            reason = address_refusal(embedded)
            if reason is not None:
                return reason
    checks = (
        (ip.is_unspecified, "an unspecified address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_multicast, "a multicast address"),
        (ip in _CARRIER_GRADE_NAT, "a carrier-grade NAT address"),
        (ip in _UNIQUE_LOCAL, "a unique-local address"),
        (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local, "a site-local address"),
        (ip.is_private, "a private address"),
        (ip.is_reserved, "a reserved address"),
        (not ip.is_global, "not a public address"),
    )
    for failed, reason in checks:
        if failed:
            return reason
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


async def _vetted_addresses(host: str, port: int) -> list[str]:
    """The addresses a connection to ``host`` may use; FetchRefusedError when any is not public.

    An IP-literal host is judged as it is; a name is resolved once, with ``resolve_host``.
    """
    try:
        addresses = [str(ipaddress.ip_address(host))]
        literal = True
    except ValueError:
        literal = False
        try:
            addresses = await resolve_host(host, port)
        except (OSError, ValueError):  # ValueError: a name IDNA cannot encode
            raise FetchRefusedError(f"cannot resolve the host {host}") from None
    if not addresses:
        raise FetchRefusedError(f"cannot resolve the host {host}")
    for address in addresses:
        reason = address_refusal(address)
        if reason is None:
            continue
        where = f"{address} is" if literal else f"{host} resolves to {address},"
        raise FetchRefusedError(f"refused: {where} {reason} ({_PRIVATE_HINT})")
    return addresses


class _VettingBackend(httpcore.AsyncNetworkBackend):
    """Opens TCP connections only to addresses that ``_vetted_addresses`` accepted.

    httpcore passes the origin's host name here and, separately, as ``server_hostname`` to the
    TLS handshake; connecting to the vetted IP therefore keeps SNI and the certificate check on
    the name, and the Host header is untouched.
    """

    def __init__(self) -> None:
        self._plain = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in await _vetted_addresses(host, port):
            try:
                return await self._plain.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc  # try the next vetted address
        assert failure is not None  # _vetted_addresses never returns an empty list
        raise failure

    async def sleep(self, seconds: float) -> None:
        await self._plain.sleep(seconds)


class _VettedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with its connection pool opening connections through _VettingBackend."""

    def __init__(self, verify: ssl.SSLContext | bool, limits: httpx.Limits) -> None:
        super().__init__(verify=verify, trust_env=False, limits=limits)
        # httpx offers no public way to choose the network backend: replace the pool it built.
        # Fail loudly (every guarded PageFetcher) if httpx stops keeping it in ``_pool``.
        if not isinstance(getattr(self, "_pool", None), httpcore.AsyncConnectionPool):
            raise RuntimeError(
                "httpx.AsyncHTTPTransport has no _pool connection pool any more; "
                "the SSRF guard cannot install its network backend"
            )
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_VettingBackend(),
        )


class PageFetcher:
    """Downloads pages and extracts their text; one HTTP client, reused for every page."""

    def __init__(self, settings: FetchSettings) -> None:
        self.settings = settings
        verify = _verify_from_environment()
        limits = httpx.Limits(
            max_connections=max(10, settings.max_concurrent * 2),
            max_keepalive_connections=max(5, settings.max_concurrent),
        )
        transport = (
            _VettedTransport(verify, limits)
            if self.guarded
            else httpx.AsyncHTTPTransport(verify=verify, trust_env=False, limits=limits)
        )
        self._client = httpx.AsyncClient(
            transport=transport,
            follow_redirects=False,
            timeout=httpx.Timeout(settings.timeout),
            headers={"user-agent": USER_AGENT, "accept": ACCEPT},
            # A proxy from the environment would make the proxy, not the guard, choose the
            # address connected to (the CA bundle of SSL_CERT_FILE / SSL_CERT_DIR still applies).
            trust_env=False,
        )
        # Created on first use, inside the event loop.
        self._downloads: anyio.CapacityLimiter | None = None
        self._extractors: anyio.CapacityLimiter | None = None

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    @property
    def guarded(self) -> bool:
        """Whether private and local addresses are refused."""
        return not self.settings.allow_private_networks

    async def fetch_many(self, urls: list[str]) -> list[FetchResult]:
        """Fetch every URL concurrently (``max_concurrent`` at a time), results in order."""
        results: list[FetchResult | None] = [None] * len(urls)

        async def one(index: int, url: str) -> None:
            results[index] = await self.fetch(url)

        async with anyio.create_task_group() as group:
            for index, url in enumerate(urls):
                group.start_soon(one, index, url)
        return [r for r in results if r is not None]

    async def fetch(self, url: str) -> FetchResult:
        """Download one page and extract its text; never raises for a page's problems."""
        if self._downloads is None:
            self._downloads = anyio.CapacityLimiter(self.settings.max_concurrent)
        if self._extractors is None:
            self._extractors = anyio.CapacityLimiter(EXTRACT_THREADS)
        started = time.perf_counter()
        result = FetchResult(url=url, ok=False)
        try:
            async with self._downloads:
                with anyio.fail_after(self.settings.timeout):
                    download = await self._download(url)
            result.final_url = download.final_url
            result.content_type = download.content_type
            result.status_code = download.status
            result.bytes = len(download.data)
            result.truncated = download.truncated
            text, title = await anyio.to_thread.run_sync(
                partial(_extract, download), limiter=self._extractors
            )
            if not text:
                raise FetchRefusedError("no readable text on the page")
            result.text = text[:MAX_TEXT_CHARS]
            result.title = title
            result.ok = True
        except FetchRefusedError as exc:
            result.error = str(exc)
        except TimeoutError:
            result.error = f"timed out after {self.settings.timeout:g} s"
        except httpx.InvalidURL:
            result.error = "invalid URL"
        except httpx.HTTPError as exc:
            # str(exc) can carry the URL; the type is enough to say what happened.
            result.error = f"network error ({type(exc).__name__})"
        except OSError as exc:
            result.error = f"network error ({type(exc).__name__})"
        except Exception:  # a bug, or a library failing in a new way: one page, not the research
            log.exception("unexpected failure reading %s", _loggable(url))
            result.error = "internal error while reading the page (see the server log)"
        result.latency_s = round(time.perf_counter() - started, 3)
        if not result.ok:
            log.info("fetch of %s failed: %s", _loggable(url), result.error)
        return result

    async def _download(self, url: str) -> _Download:
        current = url
        for hop in range(self.settings.max_redirects + 1):
            target = _parse_url(current)
            # With the guard on, the transport vets the address of every new connection.
            request = self._client.build_request("GET", target)
            response = await self._client.send(request, stream=True)
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    if hop == self.settings.max_redirects:
                        raise FetchRefusedError(
                            f"more than {self.settings.max_redirects} redirects "
                            "([research.fetch] max_redirects)"
                        )
                    try:
                        current = str(target.join(location))
                    except httpx.InvalidURL:
                        raise FetchRefusedError("the redirect points to an invalid URL") from None
                    continue
                if response.status_code >= 400:
                    raise FetchRefusedError(f"the server answered HTTP {response.status_code}")
                return await self._read(response, str(target))
            finally:
                await response.aclose()
        raise FetchRefusedError("too many redirects")  # not reached: the loop returns or raises

    async def _read(self, response: httpx.Response, url: str) -> _Download:
        content_type, charset = _content_type(response.headers.get("content-type", ""))
        kind = _kind_of(content_type)
        limit = self.settings.max_bytes
        declared = _int(response.headers.get("content-length"))
        if kind is None and content_type:
            raise FetchRefusedError(f"unsupported content type {content_type}")
        if kind == "pdf" and declared is not None and declared > limit:
            raise FetchRefusedError(
                f"the PDF is larger than {limit} bytes ([research.fetch] max_bytes)"
            )
        chunks: list[bytes] = []
        size = 0
        truncated = False
        async for chunk in response.aiter_bytes():
            if size + len(chunk) > limit:
                chunks.append(chunk[: limit - size])
                size = limit
                truncated = True
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
        if kind is None:  # no Content-Type: look at the bytes
            kind = _sniff(data)
            if kind is None:
                raise FetchRefusedError("the page has no content type and is not HTML or text")
            content_type = {"pdf": "application/pdf", "html": "text/html"}.get(kind, "text/plain")
        if kind == "pdf" and truncated:
            raise FetchRefusedError(
                f"the PDF is larger than {limit} bytes ([research.fetch] max_bytes)"
            )
        return _Download(
            final_url=url,
            kind=kind,
            content_type=content_type,
            charset=charset,
            status=response.status_code,
            data=data,
            truncated=truncated,
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()


# --------------------------------------------------------------------------- helpers


def _verify_from_environment() -> ssl.SSLContext | bool:
    """Certificate checks with the CA bundle of SSL_CERT_FILE / SSL_CERT_DIR when set.

    The client ignores the environment (``trust_env=False``, for the proxies), which would also
    drop these; a company CA installed through them keeps working.
    """
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        return True
    try:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, ssl.SSLError, ValueError):
        log.warning("SSL_CERT_FILE / SSL_CERT_DIR cannot be loaded; using the default CA bundle")
        return True


def _parse_url(url: str) -> httpx.URL:
    try:
        target = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise FetchRefusedError("invalid URL") from None
    if target.scheme not in ("http", "https"):
        scheme = target.scheme or "none"
        raise FetchRefusedError(f"only http and https URLs are fetched (scheme: {scheme})")
    if not target.raw_host:
        raise FetchRefusedError("the URL has no host")
    return target


def _content_type(header: str) -> tuple[str, str | None]:
    media, _, params = header.partition(";")
    charset = None
    match = re.search(r"charset\s*=\s*\"?([\w.:-]+)", params, re.IGNORECASE)
    if match:
        charset = match.group(1)
    return media.strip().lower(), charset


def _kind_of(content_type: str) -> str | None:
    if content_type in _HTML_TYPES:
        return "html"
    if content_type in _TEXT_TYPES:
        return "text"
    if content_type in _PDF_TYPES:
        return "pdf"
    return None


def _sniff(data: bytes) -> str | None:
    head = data[:1024].lstrip().lower()
    if head.startswith(b"%pdf"):
        return "pdf"
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
        return "html"
    if b"\x00" not in head:
        return "text"
    return None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _loggable(url: str) -> str:
    """A URL without its query string and credentials, for logs."""
    try:
        parsed = httpx.URL(url)
    except Exception:
        return "<invalid URL>"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{parsed.host}{port}{parsed.path}"


def decode(data: bytes, charset: str | None) -> str:
    """Bytes to text: the declared charset, else a <meta charset>, else UTF-8."""
    candidates = [charset] if charset else []
    meta = re.search(rb"<meta[^>]+charset\s*=\s*[\"']?([\w.:-]+)", data[:4096], re.IGNORECASE)
    if meta:
        candidates.append(meta.group(1).decode("ascii", "ignore"))
    candidates.append("utf-8")
    for name in candidates:
        try:
            return data.decode(name)
        except (LookupError, UnicodeDecodeError):
            continue
    return data.decode("utf-8", "replace")


def _extract(download: _Download) -> tuple[str, str | None]:
    """The text and title of a download (runs in a worker thread)."""
    if download.kind == "pdf":
        try:
            pages, title = read_pdf(download.data)
        except PDFError as exc:
            raise FetchRefusedError(str(exc)) from None
        return "\n\n".join(page for page in pages if page), title
    text = decode(download.data, download.charset)
    if download.kind == "html":
        return html_to_text(text, download.final_url), html_title(text)
    return text.strip(), None
