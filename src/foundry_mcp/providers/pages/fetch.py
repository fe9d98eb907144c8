"""Reading the pages behind search results: bounded, guarded downloads and text extraction.

``PageFetcher`` downloads with one ``httpx.AsyncClient`` and never raises for a page: every
problem (refused address, too many redirects, wrong content type, timeout, HTTP error, nothing
readable) comes back as ``FetchResult(ok=False, error=...)``.

Limits (``[research.fetch]``): ``max_concurrent`` downloads at a time, ``max_bytes`` per body
(read as a stream and stopped there), ``max_redirects`` hops (followed one by one so each is
checked), ``timeout`` per page, and ``max_page_chars`` of text kept (a safety limit far above any
article: the whole page is read). Only HTML, plain text and PDF are read. Text is extracted in a
worker thread (trafilatura for HTML with a stdlib fallback, pypdf for PDF), so a large page never
blocks the event loop.

SSRF guard (unless ``allow_private_networks``): only ``http``/``https`` URLs, and every TCP
connection goes through the vetting transport of ``ssrf``, which connects only to public
addresses it resolved itself (see that module).
"""

from __future__ import annotations

import logging
import os
import re
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import anyio
import httpx

from foundry_mcp.config import FetchSettings
from foundry_mcp.providers.pages.extract import PDFError, html_title, html_to_text, read_pdf
from foundry_mcp.providers.pages.ssrf import FetchRefusedError, VettedTransport

log = logging.getLogger(__name__)

USER_AGENT = "Mozilla/5.0 (compatible; foundry-mcp/0.1; deep research)"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.1"
EXTRACT_THREADS = 2  # extraction is CPU-bound; more threads only contend for the GIL
REDIRECT_STATUSES = {301, 302, 303, 307, 308}
_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_TEXT_TYPES = {"text/plain", "text/markdown", "text/x-markdown", "text/x-rst", "text/csv"}
_PDF_TYPES = {"application/pdf", "application/x-pdf"}


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


@dataclass
class _Download:
    final_url: str
    kind: str  # html | text | pdf
    content_type: str
    charset: str | None
    status: int
    data: bytes
    truncated: bool


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
            VettedTransport(verify, limits)
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

    async def fetch(self, url: str, allowed: Callable[[str], bool] | None = None) -> FetchResult:
        """Download one page and extract its text; never raises for a page's problems.

        ``allowed``: whether a URL may be read (a research's source bounds); a page, or a
        redirect, to one it refuses is not requested.
        """
        if self._downloads is None:
            self._downloads = anyio.CapacityLimiter(self.settings.max_concurrent)
        if self._extractors is None:
            self._extractors = anyio.CapacityLimiter(EXTRACT_THREADS)
        started = time.perf_counter()
        result = FetchResult(url=url, ok=False)
        try:
            async with self._downloads:
                with anyio.fail_after(self.settings.timeout):
                    download = await self._download(url, allowed)
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
            limit = self.settings.max_page_chars
            result.text = text[:limit]
            result.truncated = result.truncated or len(text) > limit
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

    async def _download(self, url: str, allowed: Callable[[str], bool] | None) -> _Download:
        current = url
        for hop in range(self.settings.max_redirects + 1):
            if allowed is not None and not allowed(current):
                raise FetchRefusedError("outside the research's source bounds")
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
