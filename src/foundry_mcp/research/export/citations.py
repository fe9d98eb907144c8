"""The cited sources of a research as BibTeX and RIS entries, for a reference manager.

A source's ``Publication`` (authors, year, venue, DOI, arXiv id, as Semantic Scholar gives them
for a paper, or the day Tavily gives for a news article) fills the bibliographic fields; without
one an entry has the title, the URL and the day it was read, and a DOI or arXiv id read from a
``doi.org`` or ``arxiv.org`` link. A source with a venue is a journal article (BibTeX
``@article``, RIS ``JOUR``); any other is ``@misc``, in RIS ``JOUR`` when it has a DOI (a DOI
names a scholarly work, and RIS needs no journal for one) and ``ELEC`` otherwise.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the server's argument model imports the export before the research code
    from foundry_mcp.research.models import Source

_DOI_URL = re.compile(r"^https?://(?:dx\.)?doi\.org/(10\.\d{4,9}/\S+)$", re.IGNORECASE)
_ARXIV_URL = re.compile(r"^https?://arxiv\.org/abs/([\w./-]+?)(?:v\d+)?$", re.IGNORECASE)


def doi_of(url: str | None) -> str | None:
    """The DOI of a ``doi.org`` link (the URL of a Semantic Scholar paper that has one, and of
    any other search hit that points at a DOI)."""
    match = _DOI_URL.match(url or "")
    return match.group(1) if match else None


def _arxiv_of(url: str | None) -> str | None:
    match = _ARXIV_URL.match(url or "")
    return match.group(1) if match else None


def source_doi(source: Source) -> str | None:
    """The DOI the search API gave for the source, else the one its URL names."""
    known = source.publication.doi if source.publication else None
    return known or doi_of(source.url)


def _source_arxiv(source: Source) -> str | None:
    known = source.publication.arxiv_id if source.publication else None
    return known or _arxiv_of(source.url)


# ---------------------------------------------------------------------- authors

# A name BibTeX would split, read as "Last, First" or as "et al.": kept whole (in BibTeX, braced).
_NAME_SPLITTER = re.compile(r",|(?:^|\s)and(?:\s|$)|^others$", re.IGNORECASE)
_NAME_SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"}


def _authors(source: Source) -> list[str]:
    names = source.publication.authors if source.publication else []
    return [" ".join(name.split()) for name in names if name.strip()]


def _name_parts(name: str) -> tuple[str, str, str | None]:
    """``(first, last, suffix)`` of a ``First [Middle] Last [Jr.]`` name: its last word (before
    a suffix) is taken for the last name."""
    words = name.split(" ")
    suffix = words.pop() if len(words) > 2 and words[-1].lower() in _NAME_SUFFIXES else None
    last = words.pop()
    return " ".join(words), last, suffix


# ---------------------------------------------------------------------- BibTeX

_BIBTEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_",
    "^": r"\^{}",
    "~": r"\~{}",
}


def bibtex_escape(text: str) -> str:
    """``text`` as a BibTeX field value: LaTeX specials escaped, braces always balanced."""
    return "".join(_BIBTEX_SPECIAL.get(char, char) for char in " ".join(text.split()))


def _bibtex_url(url: str) -> str:
    # A URL field is read verbatim by biblatex/url.sty: only what would unbalance the braces,
    # end the field or break a line is percent-encoded.
    return "".join(f"%{ord(c):02X}" if c in "{}\\ \n\r\t" else c for c in url)


def _bibtex_name(name: str) -> str:
    """A ``First Last`` name as BibTeX reads it: ``Last, Jr., First`` with a suffix (BibTeX would
    take the suffix for the last name), whole in braces when it would split."""
    if _NAME_SPLITTER.search(name):
        return "{" + bibtex_escape(name) + "}"
    first, last, suffix = _name_parts(name)
    if suffix is None:
        return bibtex_escape(name)
    return ", ".join(bibtex_escape(part) for part in (last, suffix, first))


def bibtex_key(source: Source) -> str:
    """A stable, unique key: the source id (``src-1a2b3c4d``), safe characters only."""
    return re.sub(r"[^A-Za-z0-9_:-]", "_", source.id)


def bibtex_entry(source: Source, *, accessed: date) -> str:
    """One ``@article`` (a paper with a venue) or ``@misc`` entry, keyed by the source id.

    A ``@misc`` also gets the URL as ``howpublished = {\\url{...}}``: the classic styles
    (plain, alpha, unsrt) print no ``url`` field.
    """
    publication = source.publication
    venue = publication.venue if publication else None
    fields: list[tuple[str, str]] = []
    authors = _authors(source)
    if authors:
        fields.append(("author", " and ".join(_bibtex_name(name) for name in authors)))
    fields.append(("title", "{" + bibtex_escape(source.title) + "}"))
    if venue:
        fields.append(("journal", bibtex_escape(venue)))
    elif source.url:
        fields.append(("howpublished", r"\url{" + _bibtex_url(source.url) + "}"))
    if publication and publication.year is not None:
        fields.append(("year", str(publication.year)))
    if publication and publication.published is not None:
        fields.append(("date", publication.published.isoformat()))  # biblatex's full date
    doi = source_doi(source)
    if doi:
        fields.append(("doi", _bibtex_url(doi)))
    arxiv = _source_arxiv(source)
    if arxiv:
        fields += [("eprint", _bibtex_url(arxiv)), ("archiveprefix", "arXiv")]
    if source.url:
        fields.append(("url", _bibtex_url(source.url)))
        fields.append(("urldate", accessed.isoformat()))
        fields.append(("note", f"Accessed {accessed.isoformat()}"))
    kind = "article" if venue else "misc"
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@{kind}{{{bibtex_key(source)},\n{body}\n}}\n"


# ---------------------------------------------------------------------- RIS


def _ris_text(text: str) -> str:
    return " ".join(text.split())  # RIS is line-based: one line per tag


def _ris_name(name: str) -> str:
    """``Last, First[, Suffix]``, as RIS wants it, from a name written ``First Last``."""
    if " " not in name or _NAME_SPLITTER.search(name):  # one word, or not a person's name
        return name
    first, last, suffix = _name_parts(name)
    return ", ".join([last, first, *([suffix] if suffix else [])])


def ris_entry(source: Source, *, accessed: date) -> str:
    """One RIS record: ``TY`` first, ``ER`` last, one tag per line."""
    publication = source.publication
    venue = publication.venue if publication else None
    doi = source_doi(source)
    lines = [("TY", "JOUR" if venue or doi else "ELEC"), ("ID", source.id)]
    lines += [("AU", _ris_name(name)) for name in _authors(source)]
    lines.append(("TI", _ris_text(source.title)))
    if venue:
        lines += [("T2", _ris_text(venue)), ("JO", _ris_text(venue))]
    if publication and publication.year is not None:
        lines.append(("PY", str(publication.year)))
    if publication and publication.published is not None:
        lines.append(("DA", publication.published.strftime("%Y/%m/%d")))
    if doi:
        lines.append(("DO", _ris_text(doi)))
    if source.url:
        lines += [("UR", _ris_text(source.url)), ("Y2", accessed.strftime("%Y/%m/%d"))]
    lines.append(("ER", ""))
    return "".join(f"{tag}  - {value}\n" for tag, value in lines)
