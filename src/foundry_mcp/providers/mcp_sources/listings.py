"""A list tool's answer read as what it is: a commit log by commit, a tree by path, else names.

- A commit log (``git_log`` of mcp-server-git: ``Commit: <hash>``, ``Author:``, ``Date:``,
  ``Message: <subject>`` and the body, unindented; or git's own ``commit <hash>`` with the
  message indented) gives one item per commit, keyed by its full hash: the body's paragraphs
  are part of their commit, never items of their own.
- A JSON tree (``directory_tree``: ``name``/``type``/``children``) gives its files' paths,
  walked with a stack, not recursion.
- Structured content holding a list of names, or text lines (``[FILE]``/``[DIR]`` markers and
  list bullets stripped, folders left out), give names.

Every item that is a path is confined to the source's folder (``paths``); those outside are
set apart as refused. Bounds keep a listing's cost known: its size, its items, a tree's depth;
what lies beyond them is cut and said. A listing that cannot be read raises
:class:`ListingError`, naming why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from foundry_mcp.plain import plain
from foundry_mcp.providers.mcp_sources.connection import McpSourceError
from foundry_mcp.providers.mcp_sources.paths import confine

MAX_LISTING_CHARS = 4_000_000  # text past this is not read
MAX_ITEMS = 5_000
MAX_DEPTH = 32  # folders below this depth of a tree are not walked
MAX_NODES = 100_000  # nodes of a tree visited (its folders too)
TITLE_CHARS = 120
# A commit's first line, followed by its author (or a merge's parents).
COMMIT = re.compile(
    r"^(?:Commit:[ \t]*|commit[ \t]+)([0-9a-f]{40}|[0-9a-f]{64})[ \t]*\n(?=Author:|Merge:)", re.M
)
FIELD = re.compile(r"^(Author|Date|Merge|Commit|Message):[ \t]?(.*)$")
JSON_START = re.compile(r"\s*(\{|\[\s*[\[{\"\]])")  # not "[FILE] a.md"


class ListingError(McpSourceError):
    """A list tool's answer could not be read as any kind of listing (asking again would get
    the same answer: lasting, for the research)."""

    def __init__(self, message: str, *, remediation: str) -> None:
        super().__init__(message, remediation=remediation, kind="unknown")


@dataclass(frozen=True)
class Entry:
    """One item of a listing."""

    item: str  # what the read tool is given: a path under the folder, a commit's full hash
    name: str  # how the link names it: mcp://<source>/<name>
    title: str
    listed: str  # what the listing says of it, ranked against the query before reading
    commit: bool = False


@dataclass
class Listing:
    """What a list tool named, read."""

    entries: list[Entry] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # items outside the folder: never read
    cut: list[str] = field(default_factory=list)  # the bounds it met, said in a warning


def read_listing(text: str, structured: dict[str, Any] | None, root: str | None) -> Listing:
    """``text`` (and ``structured`` content) of a list tool's answer, read; see the module."""
    listing = Listing()
    names = next(
        (
            value
            for value in (structured or {}).values()
            if isinstance(value, list) and value and all(isinstance(n, str) for n in value)
        ),
        None,
    )
    if names is None:
        if len(text) > MAX_LISTING_CHARS:
            if JSON_START.match(text):
                raise ListingError(
                    f"its listing is {len(text):,} characters of JSON, more than the "
                    f"{MAX_LISTING_CHARS:,} read (JSON cannot be cut short and still read).",
                    remediation="List a smaller folder (the list tool's fixed arguments).",
                )
            text = text[: text.rfind("\n", 0, MAX_LISTING_CHARS) + 1]
            listing.cut.append(f"its first {MAX_LISTING_CHARS:,} characters")
        if COMMIT.search(text):
            listing.entries = _commits(text, listing)
            return listing
        names = _tree(text, listing)
        if names is None:
            names = _lines(text)
    targets: set[str] = set()
    for name in dict.fromkeys(n.strip() for n in names if n.strip()):
        if len(listing.entries) >= MAX_ITEMS:
            listing.cut.append(f"its first {MAX_ITEMS:,} items")
            break
        place = confine(name, root)
        if place is None:
            listing.refused.append(name)
        elif place.target not in targets:  # "a.md" and "/notes/a.md" are one item
            targets.add(place.target)
            listing.entries.append(Entry(place.target, place.name, clean(place.name), place.name))
    return listing


def clean(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` as a title: plain (:func:`~foundry_mcp.plain.plain`), one line, at most
    ``limit`` characters."""
    return " ".join(plain(text).split())[:limit]


def _commits(text: str, listing: Listing) -> list[Entry]:
    """One entry per commit of a log, keyed by its full hash (see the module).

    A commit begins the log or follows a blank line, its author on the next line: a hash
    quoted on a line of a message's body (mcp-server-git does not indent bodies) is not one."""
    marks = [
        mark
        for number, mark in enumerate(COMMIT.finditer(text))
        if number == 0 or text.endswith("\n\n", 0, mark.start())
    ]
    entries: list[Entry] = []
    seen: set[str] = set()
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        if len(entries) >= MAX_ITEMS:
            listing.cut.append(f"its first {MAX_ITEMS:,} commits")
            break
        block = text[mark.end() : following.start() if following else len(text)]
        subject, body = _message(block)
        sha = mark.group(1)
        if sha in seen:
            continue
        seen.add(sha)
        title = clean(subject) or sha[:12]
        entries.append(Entry(sha, sha, title, f"{subject}\n{body}".strip(), commit=True))
    return entries


def _message(block: str) -> tuple[str, str]:
    """A commit's subject and body from its block of the log (its header lines aside)."""
    lines = block.strip("\n").splitlines()
    message: list[str] = []
    in_header = True
    for line in lines:
        found = FIELD.match(line) if in_header else None
        if found and found.group(1) == "Message":
            message.append(found.group(2))
            in_header = False
        elif found:
            continue
        else:
            in_header = False
            message.append(line[4:] if line.startswith("    ") else line)
    while message and not message[0].strip():
        message.pop(0)
    subject = message[0].strip() if message else ""
    return subject, "\n".join(message[1:]).strip()


def _tree(text: str, listing: Listing) -> list[str] | None:
    """The file paths of a JSON listing (names, or a tree of ``name``/``children``), or None
    when ``text`` is not JSON."""
    if not text.lstrip().startswith(("[", "{")):
        return None
    try:
        tree = json.loads(text)
    except RecursionError:
        raise ListingError(
            "its JSON listing is nested too deeply to read.",
            remediation="List a shallower folder (the list tool's fixed arguments).",
        ) from None
    except ValueError:
        return None  # "[FILE] a.md" lines begin with a bracket too
    files: list[str] = []
    stack: list[tuple[object, str, int]] = [(tree, "", 0)]
    visited = 0
    while stack:
        node, prefix, depth = stack.pop()
        visited += 1
        if len(files) >= MAX_ITEMS or visited > MAX_NODES:
            listing.cut.append(f"its first {len(files):,} files")
            break
        if isinstance(node, list):
            stack.extend((child, prefix, depth) for child in reversed(node))
        elif isinstance(node, str):
            files.append(prefix + node)
        elif isinstance(node, dict) and isinstance(node.get("name"), str):
            path = prefix + node["name"]
            children = node.get("children")
            if not isinstance(children, list) and node.get("type") != "directory":
                files.append(path)
            elif depth >= MAX_DEPTH:
                if f"folders deeper than {MAX_DEPTH}" not in listing.cut:
                    listing.cut.append(f"folders deeper than {MAX_DEPTH}")
            else:
                stack.extend((child, path + "/", depth + 1) for child in reversed(children or []))
        else:
            raise ListingError(
                "its JSON listing is neither a list of names nor a tree of name/children.",
                remediation="Name another list_tool in its table (foundry-mcp doctor lists "
                "the tools).",
            )
    return files


def _lines(text: str) -> list[str]:
    """A listing's lines, folders (``[DIR]``) left out, markers and bullets stripped."""
    return [
        re.sub(r"^(\[FILE\]\s*|[-*]\s+)", "", line.strip())
        for line in text.splitlines()
        if not line.strip().startswith("[DIR]")
    ]
