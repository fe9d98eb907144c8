"""Turning the writer's ``[src-...]`` citations into numbered references resolved from state.

The model cites source ids; the code decides what they mean. Ids not among the sources given
(the synthesizer gives those it showed the writer) are removed, any source list the model wrote
is removed, and a ``## Sources`` section listing exactly the cited sources is appended. The
model's memory never supplies a reference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from foundry_mcp.research.models import ClaimCheck, Source, Verdict

# A bracket of one or more source ids, with the blanks before it: "claim [src-1a2b3c4d]".
_CITATION = re.compile(r"(?P<space>[ \t]*)\[\s*(?P<ids>src-[\w-]+(?:\s*[,;]\s*src-[\w-]+)*)\s*\]")
_ID = re.compile(r"src-[\w-]+")
_MODEL_SOURCES_HEADING = re.compile(
    r"^#{1,6}\s*(sources|references|bibliography|citations|works cited|source list)\s*:?\s*$",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass
class ResolvedReport:
    """A report whose citations are numbers, and the sources those numbers stand for."""

    markdown: str
    cited: list[Source] = field(default_factory=list)
    citations_count: int = 0
    dropped_citations: int = 0


QUOTES_PER_SOURCE = 2
QUOTE_CHARS = 300


def quote_sources(report: str, cited: Sequence[Source], checks: Sequence[ClaimCheck]) -> str:
    """``report`` with, under each entry of its Sources list, the passages of that source that
    backed its supported or partly supported sentences (at most ``QUOTES_PER_SOURCE``, cut to
    ``QUOTE_CHARS``), as a block quote after the entry."""
    quotes: dict[str, list[str]] = {}
    for check in checks:
        if check.verdict not in (Verdict.SUPPORTED, Verdict.PARTIAL):
            continue
        for quote in check.quotes:
            text = " ".join(quote.text.split())
            if len(text) > QUOTE_CHARS:
                text = text[: QUOTE_CHARS - 1].rstrip() + "…"
            kept = quotes.setdefault(quote.source_id, [])
            if text not in kept and len(kept) < QUOTES_PER_SOURCE:
                kept.append(text)
    body, split, listing = report.rpartition("\n## Sources\n")
    if not split or not quotes:
        return report
    lines = listing.split("\n")
    for number, source in reversed(list(enumerate(cited, start=1))):
        entry = next((i for i, line in enumerate(lines) if line.startswith(f"[{number}] ")), None)
        if entry is None or source.id not in quotes:
            continue
        quoted = "\n>\n".join(f'> "{text}"' for text in quotes[source.id])
        lines[entry + 1 : entry + 1] = ["", *quoted.split("\n"), ""]
    return body + split + "\n".join(lines)


def resolve_citations(draft: str, sources: Mapping[str, Source]) -> ResolvedReport:
    """Number the citations of ``draft`` in order of first use and append ``## Sources``."""
    body = _strip_model_source_list(draft)
    numbers: dict[str, int] = {}
    cited: list[Source] = []
    counts = {"citations": 0, "dropped": 0}

    def replace(match: re.Match[str]) -> str:
        refs = []
        for source_id in _ID.findall(match.group("ids")):
            source = sources.get(source_id)
            if source is None:
                counts["dropped"] += 1
                continue
            if source_id not in numbers:
                numbers[source_id] = len(numbers) + 1
                cited.append(source)
            counts["citations"] += 1
            ref = f"[{numbers[source_id]}]"
            if ref not in refs:
                refs.append(ref)
        # A citation that resolves to nothing disappears with the blank before it.
        return match.group("space") + "".join(refs) if refs else ""

    body = _CITATION.sub(replace, body).rstrip()
    if cited:
        lines = [f"[{n}] {_title(s)}" for n, s in enumerate(cited, start=1)]
        body += "\n\n## Sources\n\n" + "\n".join(lines) + "\n"
    return ResolvedReport(
        markdown=body,
        cited=cited,
        citations_count=counts["citations"],
        dropped_citations=counts["dropped"],
    )


def _strip_model_source_list(draft: str) -> str:
    """Cut a sources/references section the model wrote (from its heading to the next one)."""
    match = _MODEL_SOURCES_HEADING.search(draft)
    if match is None:
        return draft
    level = len(match.group(0)) - len(match.group(0).lstrip("#"))
    rest = draft[match.end() :]
    following = re.search(rf"^#{{1,{level}}}\s", rest, re.MULTILINE)
    tail = rest[following.start() :] if following else ""
    return draft[: match.start()].rstrip() + ("\n\n" + tail if tail else "\n")


def _title(source: Source) -> str:
    title = " ".join(source.title.split()) or "Untitled"
    return f"{title} - {source.url}" if source.url else title
