"""How untrusted text is fenced in prompts: the one place that knows it.

Page text, search titles, snippets and URLs, local documents and model output derived from them
are untrusted. Our prompts frame them in tags (``<source id="...">``, ``<finding sources="...">``)
whose attributes carry what the code knows, such as which source said it. Untrusted text must not
be able to close its block and open another one with a different id.

The scheme: inside untrusted text, the ``<`` of anything that could open or close one of our
tags (``STRUCTURAL_TAGS``, any case, blanks, zero-width characters or attributes around the name,
and its HTML-entity or full-width spellings) becomes ``‹`` (U+2039), a visually close character.
A reader, human or model, still sees what the page wrote, but no parser, strict or lenient, sees
a tag. Everything else stays byte for byte, so code samples with ``<`` survive and passages can
be quoted verbatim later. HTML-escaping all text was rejected because it alters every ``<`` and
``&`` of the passage; random delimiters because they make prompts non-deterministic (no prompt
cache, no reproducible tests) while the forged tags would still read as tags to the model.
"""

from __future__ import annotations

import html
import re
from typing import Final

STRUCTURAL_TAGS: Final = (
    "source",
    "document",
    "documents",
    "excerpt",
    "finding",
    "contradiction",
    "report",
    "gap",
    "subanswer",
    "hypothesis",
    "section",
    "clarification",
)
LOOKALIKE: Final = "\u2039"  # ‹ replaces the < of a forged tag

# "<", its full-width and small forms (NFKC folds them to "<") and its HTML entities.
_OPENER = r"(?:<|\uff1c|\ufe64|&lt;?|&#0*60;?|&#x0*3c;?)"
_BLANK = r"[\s\u200b-\u200d\u2060\ufeff]*"
_FORGED_TAG = re.compile(
    rf"{_OPENER}(?={_BLANK}/?{_BLANK}(?:{'|'.join(STRUCTURAL_TAGS)})(?![\w-]))",
    re.IGNORECASE,
)


def neutralize(text: str) -> str:
    """``text`` with every opening or closing structural tag made inert; the rest untouched."""
    return _FORGED_TAG.sub(LOOKALIKE, text)


def one_line(text: str) -> str:
    """A single-line field (title, URL, snippet): runs of blanks and newlines become one space,
    so the text cannot start a field line of its own."""
    return neutralize(" ".join(text.split()))


def attribute(value: str | int) -> str:
    """An attribute value, escaped for use between double quotes, on one line."""
    return html.escape(" ".join(str(value).split()), quote=True)


def fence(tag: str, text: str, **attributes: str | int) -> str:
    """``text`` as a ``<tag attr="...">`` block on lines of its own, the text neutralized."""
    if tag not in STRUCTURAL_TAGS:
        raise ValueError(f"{tag!r} is not a structural tag; add it to STRUCTURAL_TAGS")
    attrs = "".join(f' {name}="{attribute(value)}"' for name, value in attributes.items())
    return f"<{tag}{attrs}>\n{neutralize(text)}\n</{tag}>"
