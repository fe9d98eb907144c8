"""Fake Google Custom Search and Semantic Scholar APIs, and a fake web of pages to fetch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .http import FakeHTTPServer, FakeResponse, RecordedRequest
from .providers import slugify

GoogleCorpus = Mapping[str, list[dict[str, Any]]] | Callable[[str], list[dict[str, Any]]]


def _first(request: RecordedRequest, name: str) -> str | None:
    values = request.query.get(name)
    return values[0] if values else None


# --------------------------------------------------------------------------- Google


def google_items(query: str, count: int = 5) -> list[dict[str, Any]]:
    """Deterministic Custom Search ``items`` for ``query``."""
    slug = slugify(query)
    return [
        {
            "kind": "customsearch#result",
            "title": f"{query.strip().capitalize()} - result {n}",
            "link": f"https://web.example.net/{slug}/{n}",
            "displayLink": "web.example.net",
            "snippet": f"Result {n} about {query}:\nwhat the page says, in two lines.",
        }
        for n in range(1, count + 1)
    ]


def google_error(status: int, message: str, reason: str) -> dict[str, Any]:
    """An error body in Google's shape."""
    return {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"message": message, "domain": "global", "reason": reason}],
            "status": "INVALID_ARGUMENT" if status == 400 else "PERMISSION_DENIED",
        }
    }


def fake_google(
    corpus: GoogleCorpus | None = None,
    *,
    api_key: str | None = None,
    cse_id: str | None = None,
) -> FakeHTTPServer:
    """A started fake of ``GET /customsearch/v1`` (key and cx checked when given)."""
    server = FakeHTTPServer()

    def search(request: RecordedRequest) -> FakeResponse:
        key = _first(request, "key")
        if not key or (api_key is not None and key != api_key):
            return FakeResponse(
                400,
                google_error(400, "API key not valid. Please pass a valid API key.", "badRequest"),
            )
        cx = _first(request, "cx")
        if not cx or (cse_id is not None and cx != cse_id):
            return FakeResponse(
                400, google_error(400, "Request contains an invalid argument.", "badRequest")
            )
        query = _first(request, "q") or ""
        num = int(_first(request, "num") or 10)
        if num > 10:
            return FakeResponse(400, google_error(400, "Invalid value for num", "invalid"))
        if callable(corpus):
            items = corpus(query)
        elif corpus is not None and query in corpus:
            items = corpus[query]
        else:
            items = google_items(query)
        body: dict[str, Any] = {
            "kind": "customsearch#search",
            "queries": {"request": [{"searchTerms": query, "count": num}]},
        }
        if items:
            body["items"] = items[:num]
        return FakeResponse(json=body)

    server.route("GET", "/customsearch/v1", search)
    return server.start()


# --------------------------------------------------------------------------- Semantic Scholar


def paper(
    n: int,
    query: str,
    *,
    doi: str | None = None,
    arxiv: str | None = None,
    abstract: str | None = "",
    tldr: str | None = "",
) -> dict[str, Any]:
    """One paper as the Graph API returns it."""
    external: dict[str, Any] = {"CorpusId": 1000 + n}
    if doi:
        external["DOI"] = doi
    if arxiv:
        external["ArXiv"] = arxiv
    return {
        "paperId": f"{n:040x}",
        "url": f"https://www.semanticscholar.org/paper/{n:040x}",
        "title": f"A study of {query} ({n})",
        "abstract": (
            f"We study {query}. Our measurements over {n * 10} sites show a clear effect."
            if abstract == ""
            else abstract
        ),
        "tldr": (
            {"model": "tldr@v2.0.0", "text": f"{query.capitalize()} matters, finding {n}."}
            if tldr == ""
            else (None if tldr is None else {"model": "tldr@v2.0.0", "text": tldr})
        ),
        "externalIds": external,
        "year": 2015 + n,
        "venue": "Journal of Examples",
        "citationCount": 10 * n,
        "authors": [{"authorId": str(i), "name": f"Author {i}"} for i in range(1, n + 2)],
    }


def scholar_papers(query: str, limit: int = 5) -> list[dict[str, Any]]:
    """Deterministic papers: the first has a DOI, the second an arXiv id, the rest neither."""
    papers = []
    for n in range(1, limit + 1):
        doi = f"10.1234/example.{n}" if n == 1 else None
        arxiv = f"2401.{n:05d}" if n == 2 else None
        papers.append(paper(n, query, doi=doi, arxiv=arxiv))
    return papers


def fake_semantic_scholar(
    corpus: Mapping[str, list[dict[str, Any]]] | None = None,
    *,
    api_key: str | None = None,
) -> FakeHTTPServer:
    """A started fake of ``GET /graph/v1/paper/search`` (``x-api-key`` checked when given)."""
    server = FakeHTTPServer()

    def search(request: RecordedRequest) -> FakeResponse:
        if api_key is not None and request.headers.get("x-api-key") != api_key:
            return FakeResponse(403, {"message": "Forbidden"})
        query = _first(request, "query") or ""
        if not query:
            return FakeResponse(400, {"error": "Missing required parameter: 'query'"})
        limit = int(_first(request, "limit") or 10)
        papers = corpus[query] if corpus is not None and query in corpus else None
        if papers is None:
            papers = scholar_papers(query, min(limit, 5))
        papers = papers[:limit]
        return FakeResponse(json={"total": len(papers), "offset": 0, "data": papers})

    server.route("GET", "/graph/v1/paper/search", search)
    return server.start()


# --------------------------------------------------------------------------- pages


def article_html(title: str, paragraphs: list[str], *, boilerplate: bool = True) -> str:
    """An HTML article with navigation, scripts and a footer around the main text."""
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    nav = (
        "<nav><ul><li><a href='/'>Home</a></li><li><a href='/about'>About us</a></li>"
        "<li><a href='/shop'>Shop</a></li></ul></nav>"
        if boilerplate
        else ""
    )
    footer = (
        "<footer>Copyright 2026 Example Corp. All rights reserved.</footer>" if boilerplate else ""
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>body {{ color: red; }}</style>"
        "<script>var tracking = 'do not extract me';</script></head>"
        f"<body>{nav}<main><article><h1>{title}</h1>{body}</article></main>{footer}</body></html>"
    )


def make_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A small, valid PDF with one line of Helvetica text per page (no dependency needed)."""

    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    objects: list[bytes] = []
    page_count = len(pages)
    font_id = 3 + 2 * page_count
    info_id = font_id + 1
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(page_count))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {page_count} >>".encode())
    for i, text in enumerate(pages):
        content_id = 4 + 2 * i
        objects.append(
            (
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                f"/Resources << /Font << /F1 {font_id} 0 R >> >> /Contents {content_id} 0 R >>"
            ).encode()
        )
        stream = f"BT /F1 12 Tf 72 720 Td ({escape(text)}) Tj ET".encode()
        objects.append(
            b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream"
        )
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(f"<< /Title ({escape(title or '')}) >>".encode())

    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info {info_id} 0 R >>\n"
        f"startxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


def long_paragraphs(chars: int, fact: str, depth: float = 0.9) -> list[str]:
    """Distinct paragraphs of about ``chars`` characters in all, with the sentence ``fact`` in
    the one at ``depth`` of the text (0.9: near the end, past any fixed cut of old)."""
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        n = len(paragraphs)
        paragraph = (
            f"Section {n} of the survey reports measurement {n * 7 % 101} for site {n % 37}, "
            f"taken in season {n % 4} with instrument {n % 13}; the readings of batch {n} agree "
            f"with those of batch {n - 1} within {n % 9} percent across every sampled depth."
        )
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    paragraphs[int(len(paragraphs) * depth)] += " " + fact
    return paragraphs


def fake_pages(pages: Mapping[str, FakeResponse] | None = None) -> FakeHTTPServer:
    """A started server answering ``GET <path>`` with the given responses."""
    server = FakeHTTPServer()
    for path, response in (pages or {}).items():
        server.route("GET", path, lambda _request, answer=response: answer)
    return server.start()


def html_page(markup: str, status: int = 200) -> FakeResponse:
    return FakeResponse(status, body=markup, headers={"content-type": "text/html; charset=utf-8"})


def redirect(location: str, status: int = 302) -> FakeResponse:
    return FakeResponse(status, body="", headers={"location": location})
