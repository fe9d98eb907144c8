"""One of the user's documents as text: its first heading and its passages.

A document is split into passages of about 1,200 characters, cut at blank lines when possible,
that remember the lines they span (and their page, for a PDF). HTML is reduced to its main text
and PDF to the text of its pages first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from foundry_mcp.providers.pages.extract import html_title, html_to_text, read_pdf

PASSAGE_CHARS = 1200
_HTML = {".html", ".htm", ".xhtml"}
_MARKDOWN = {".md", ".markdown"}


@dataclass(frozen=True)
class Passage:
    """A piece of a document, with the lines it spans (1-based, inclusive)."""

    start_line: int
    end_line: int
    text: str
    page: int | None = None


def split_passages(
    text: str, target: int = PASSAGE_CHARS, page: int | None = None
) -> list[Passage]:
    """Cut ``text`` into passages of about ``target`` characters, at blank lines when possible."""
    passages: list[Passage] = []
    buffer: list[str] = []
    size = 0
    start = 1

    def flush(end: int) -> None:
        nonlocal buffer, size
        body = "\n".join(buffer).strip()
        if body:
            passages.append(Passage(start, end, body, page))
        buffer, size = [], 0

    for number, line in enumerate(text.splitlines(), start=1):
        if len(line) > target:  # a very long line (minified code, one-paragraph text)
            if buffer:
                flush(number - 1)
            for piece in _pieces(line, target):
                start = number
                buffer, size = [piece], len(piece)
                flush(number)
            start = number + 1
            continue
        if not buffer:
            start = number
            if not line.strip():
                continue
        if not line.strip() and size >= target * 0.6:
            flush(number - 1)
            continue
        buffer.append(line)
        size += len(line) + 1
        if size >= target:
            flush(number)
    if buffer:
        flush(start + len(buffer) - 1)
    return passages


def _pieces(line: str, target: int) -> Iterator[str]:
    while len(line) > target:
        cut = line.rfind(" ", target // 2, target)
        cut = cut if cut > 0 else target
        yield line[:cut]
        line = line[cut:].lstrip()
    if line.strip():
        yield line


def first_heading(text: str, suffix: str) -> str | None:
    """The first heading of a Markdown or reStructuredText document."""
    lines = text.splitlines()[:200]
    if suffix in _MARKDOWN:
        for index, line in enumerate(lines):
            match = re.match(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", line)
            if match:
                return match.group(1).strip()
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if line.strip() and re.fullmatch(r"\s*(=+|-+)\s*", following) and index < 3:
                return line.strip()
    if suffix == ".rst":
        for index, line in enumerate(lines[:-1]):
            underline = lines[index + 1].strip()
            if (
                line.strip()
                and len(underline) >= len(line.strip())
                and re.fullmatch(r"([=\-~^*#+])\1+", underline)
            ):
                return line.strip()
    return None


def read_document(path: Path) -> tuple[str | None, list[Passage]]:
    """The first heading and the passages of one file (HTML and PDF extracted to text)."""
    suffix = path.suffix.lower()
    data = path.read_bytes()
    if suffix == ".pdf":
        pages, title = read_pdf(data)
        passages: list[Passage] = []
        for number, page in enumerate(pages, start=1):
            passages.extend(split_passages(page, page=number))
        return title, passages
    if b"\x00" in data[:8192]:
        raise ValueError("binary file")
    text = data.decode("utf-8", errors="replace")
    if suffix in _HTML:
        return html_title(text), split_passages(html_to_text(text))
    return first_heading(text, suffix), split_passages(text)
