"""Untrusted text made plain: what a page, a title, a quote, a model or an MCP source wrote,
with every control sequence a terminal would obey taken out.

A page can hold escape sequences that clear the screen (``ESC [2J``), hide text (``ESC [8m``),
make a link that shows one address and opens another (OSC 8), or reorder what is shown
(Unicode bidi overrides). Shown raw on a terminal, or kept in a Markdown file someone later
``cat``s, they act instead of being read. :func:`plain` removes them: whole escape sequences
(CSI, OSC to its BEL or ST, DCS/SOS/PM/APC strings, two-byte escapes, their 8-bit C1 forms),
then any C0 control but newline and tab, DEL, C1 controls and the bidi embeddings, overrides
and isolates. Everything else, Markdown characters included, is data and stays.

The command line's views and the exports both call it, so it lives on the ground floor.
"""

from __future__ import annotations

import re
from typing import Any

_STRING_END = r"(?:\x07|\x1b\\|\x9c)"  # BEL, or ST in its 7-bit or 8-bit form
_SEQUENCE = re.compile(
    # CSI: ESC [ or 0x9b, parameters, intermediates, one final byte (colours, 2J, cursor moves)
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    # OSC (titles, OSC 8 hyperlinks) and DCS, SOS, PM, APC strings, each up to its end; the
    # body stops at any ESC, so an unterminated string loses only its introducer
    rf"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*{_STRING_END}"
    # any other escape: ESC, intermediates, a final byte (ESC c resets the terminal)
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]"
)
# Line ends a terminal would act on as a carriage return or a page break, said as text.
_BREAKS = str.maketrans({"\r": "\n", "\x85": "\n", "\x0b": " ", "\x0c": " "})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def plain(text: str) -> str:
    """``text`` without control sequences, control characters or bidi controls (see the
    module); newlines and tabs stay, a carriage return becomes a newline."""
    if not _CONTROL.search(text):
        return text  # the usual case: nothing to take out, no copy made
    text = _SEQUENCE.sub("", text.replace("\r\n", "\n"))
    return _CONTROL.sub("", text.translate(_BREAKS))


def plain_within(value: Any) -> Any:
    """:func:`plain` applied to every string of a JSON-like value, keys included."""
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, list):
        return [plain_within(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain_within(item) for item in value)
    if isinstance(value, dict):
        return {plain_within(key): plain_within(item) for key, item in value.items()}
    return value
