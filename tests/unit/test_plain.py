"""Untrusted text made plain: every control sequence a terminal obeys goes, the text stays."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foundry_mcp.plain import plain, plain_within

ESC = "\x1b"


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (f"a{ESC}[2Jb", "ab"),  # clear the screen
        (f"{ESC}[8mhidden{ESC}[0m text", "hidden text"),  # hidden-text mode, then reset
        (f"{ESC}[38;5;196mred{ESC}[m", "red"),
        (f"{ESC}[?25lcursor", "cursor"),  # a private CSI
        (f"{ESC}]8;;http://evil{ESC}\\click{ESC}]8;;{ESC}\\ here", "click here"),  # OSC 8, ST
        (f"{ESC}]0;a window title\x07text", "text"),  # OSC ended by BEL
        (f"{ESC}]8;;http://evil\x9cclick", "click"),  # OSC ended by an 8-bit ST
        (f"{ESC}Pq#0;2;0;0;0{ESC}\\after", "after"),  # DCS (sixel)
        (f"{ESC}_an application command{ESC}\\x", "x"),  # APC
        (f"{ESC}^privacy{ESC}\\x", "x"),  # PM
        (f"{ESC}Xstart of string{ESC}\\x", "x"),  # SOS
        ("\x9b2Jscreen", "screen"),  # C1 CSI
        ("\x9d8;;http://evil\x07link", "link"),  # C1 OSC
        (f"{ESC}creset", "reset"),  # RIS: resets the terminal
        (f"{ESC}(Bcharset", "charset"),
        (f"{ESC}7save{ESC}8", "save"),
        (f"lone {ESC}", "lone "),
        (f"{ESC}]8;;unterminated", "8;;unterminated"),  # only its introducer goes
        ("bell\x07 back\x08space nul\x00 del\x7f", "bell backspace nul del"),
        ("c1\x80\x85x\x9f", "c1\nx"),  # NEL is a line end; other C1 controls go
        ("\u202eevil\u202c \u2066iso\u2069 \u202a\u202b\u202d", "evil iso "),
        ("line\r\nnext\rover", "line\nnext\nover"),
        ("a\x0bb\x0cc", "a b c"),
    ],
)
def test_control_sequences_go_and_their_text_stays(raw: str, said: str) -> None:
    assert plain(raw) == said


def test_markdown_tabs_newlines_and_other_scripts_are_data_and_stay() -> None:
    text = (
        "# Title\n\n| a | b |\n|---|---|\n\t`code` *em* [link](https://x.org) <b>\n"
        "שלום עולם مرحبا 漢字 \u200d emoji 👍 \u00a0 \u00e9"
    )
    assert plain(text) is text


def test_every_string_of_a_document_is_made_plain() -> None:
    document = {
        "title": f"{ESC}[2Jt",
        f"k{ESC}[1m": ["x\u202e", 3, None, {"deep": ("\x9b2Jy",)}],
        "n": 1.5,
    }
    assert plain_within(document) == {
        "title": "t",
        "k": ["x", 3, None, {"deep": ("y",)}],
        "n": 1.5,
    }


@given(st.text())
def test_nothing_a_terminal_obeys_is_left(text: str) -> None:
    cleaned = plain(text)
    assert not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in cleaned)
    assert not any(c in cleaned for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert plain(cleaned) == cleaned
