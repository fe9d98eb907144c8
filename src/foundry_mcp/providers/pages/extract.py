"""Text from HTML and PDF documents: synchronous functions, meant for a worker thread.

HTML: the main text through trafilatura (boilerplate such as menus and footers removed); when it
fails or finds nothing, a small stdlib extractor that keeps all visible text. PDF: pypdf, page
by page. Both libraries are imported on first use, so importing this module costs nothing.

trafilatura failing to import is not a page's problem but a broken installation (for example
lxml 6 without ``lxml_html_clean``): it is logged once as a WARNING, pages are still read with
the stdlib extractor, and ``extractor_problem()`` tells ``foundry-mcp doctor`` what to fix.
"""

from __future__ import annotations

import html as html_lib
import io
import logging
import re
import threading
from html.parser import HTMLParser

log = logging.getLogger(__name__)

# Elements whose content is never visible text.
_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "canvas"}
# Elements that start a new line of text.
_BLOCK = {
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "tr",
    "ul",
}
# Void elements never get an end tag, so they must not open a skipped region.
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


class _TextParser(HTMLParser):
    """Visible text of an HTML document, one line per block element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIP and tag not in _VOID:
            self._skip_depth += 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP and self._skip_depth:
            self._skip_depth -= 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        if not self._skip_depth:
            self.parts.append(data)


def simple_html_text(markup: str) -> str:
    """All visible text of ``markup``, without scripts and styles (stdlib only)."""
    parser = _TextParser()
    try:
        parser.feed(markup)
        parser.close()
    except Exception:  # HTMLParser is lenient; never let a parser bug lose the page
        log.debug("stdlib HTML parser gave up", exc_info=True)
    return normalise_text("".join(parser.parts))


def normalise_text(text: str) -> str:
    """Collapse runs of spaces inside lines and of blank lines between them."""
    lines = [re.sub(r"[ \t\f\v\u00a0]+", " ", line).strip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def html_title(markup: str) -> str | None:
    """The document's ``<title>``, else its first ``<h1>``."""
    for pattern in (r"<title[^>]*>(.*?)</title\s*>", r"<h1[^>]*>(.*?)</h1\s*>"):
        match = re.search(pattern, markup[:200_000], re.IGNORECASE | re.DOTALL)
        if match:
            text = re.sub(r"<[^>]+>", " ", match.group(1))
            text = re.sub(r"\s+", " ", html_lib.unescape(text)).strip()
            if text:
                return text[:300]
    return None


_import_lock = threading.Lock()
_import_problem: list[str] = []  # empty until the first import attempt; then "" or the reason


def extractor_problem() -> str | None:
    """Why the main-text extractor (trafilatura) cannot be used, or None when it can."""
    return _trafilatura_problem() or None


def _trafilatura_problem() -> str:
    with _import_lock:
        if not _import_problem:
            try:
                import trafilatura  # noqa: F401
            except ImportError as exc:
                reason = (
                    f"trafilatura cannot be imported ({exc}); web pages are read with a simpler "
                    "extractor that keeps menus and footers. Reinstall foundry-mcp with its "
                    "dependencies (in its clone: pip install --force-reinstall .), or pip "
                    "install lxml_html_clean."
                )
                log.warning("%s", reason)
                _import_problem.append(reason)
            else:
                _import_problem.append("")
        return _import_problem[0]


def html_to_text(markup: str, url: str | None = None) -> str:
    """The main text of an HTML page: trafilatura, else the stdlib extractor."""
    text = ""
    if _trafilatura_problem():
        return simple_html_text(markup)
    try:
        import trafilatura

        extracted = trafilatura.extract(
            markup,
            url=url,
            output_format="txt",
            include_comments=False,
            include_tables=True,
            favor_recall=True,
            deduplicate=False,
        )
        text = normalise_text(extracted or "")
    except Exception:  # lxml or trafilatura choking on odd markup: fall back
        log.debug("trafilatura failed on %s", url or "a page", exc_info=True)
    if not text:
        text = simple_html_text(markup)
    return text


class PDFError(Exception):
    """A PDF that cannot be read (damaged, encrypted, not a PDF)."""


def read_pdf(data: bytes) -> tuple[list[str], str | None]:
    """The text of each page of a PDF and its metadata title; ``PDFError`` if unreadable."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # it warns about every oddity
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PDFError("the PDF is encrypted")
        pages: list[str] = []
        for page in reader.pages:
            try:
                pages.append(normalise_text(page.extract_text() or ""))
            except Exception:  # one broken page must not lose the others
                log.debug("cannot extract a PDF page", exc_info=True)
                pages.append("")
        title: str | None = None
        try:
            metadata = reader.metadata
            raw_title = metadata.title if metadata is not None else None
        except Exception:
            raw_title = None
        if isinstance(raw_title, str) and raw_title.strip():
            title = re.sub(r"\s+", " ", raw_title).strip()[:300]
        return pages, title
    except PDFError:
        raise
    except Exception as exc:  # pypdf raises a wide range of errors on malformed input
        raise PDFError(f"the PDF cannot be read ({type(exc).__name__})") from exc
