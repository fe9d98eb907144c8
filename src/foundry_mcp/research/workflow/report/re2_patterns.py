"""The ``pattern`` of a caller's ``output_schema``, run by RE2 (the ``google-re2`` binding).

Python's ``re`` (and ``regex``) backtrack: ``^((((\\w+)+)+)+)+\\d$`` takes about a minute on
twelve letters, holding the interpreter all the while. RE2's time is linear in the text (and
it lets go of the interpreter meanwhile), so a caller's pattern is only ever run by RE2:
checked when the research starts (:func:`check_pattern`) and matched in the answer's
validation (:func:`matches`). Without RE2 importable a pattern is refused, never run by ``re``.

RE2's time per character grows with the pattern's compiled size, so that is bounded too
(:data:`MAX_PROGRAM`); with the answer's size bounded, one check of the answer is bounded.
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType
from typing import Any

MAX_PROGRAM = 2_000  # RE2 instructions of one pattern; ^[a-z]{1,100}$ compiles to 201
# A pattern is first compiled under a small memory budget: one too large fails at once and
# costs little in re2's cache of compiled patterns. An accepted one runs under the default
# budget, which leaves room for RE2's fast (DFA) matcher.
_PROBE_MEMORY = 1 << 20
REWRITE = (
    "Patterns are run by RE2 (linear time: https://github.com/google/re2/wiki/Syntax), which "
    "has no backreferences (\\1) and no lookaround ((?=...), (?!...), (?<=...), (?<!...)); "
    "rewrite the pattern without them (\\z, not \\Z, for the end of the text), or state the "
    "rule in the value's 'description'."
)
SIMPLER = (
    "Write a simpler pattern: a bounded repeat such as {0,1000} counts every repetition; "
    "bound a length with minLength/maxLength rather than in the pattern."
)
NO_ENGINE = (
    "Patterns need RE2 (the google-re2 package), which cannot be imported here: reinstall "
    "foundry-mcp with its dependencies (pip install google-re2), or leave 'pattern' out."
)


class PatternError(ValueError):
    """A pattern RE2 cannot run, or RE2 missing: ``reason`` says why, ``remediation`` what to do."""

    def __init__(self, reason: str, remediation: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.remediation = remediation


@cache
def _engine() -> ModuleType | None:
    try:
        return importlib.import_module("re2")
    except ImportError:
        return None


def _options(probe: bool) -> Any:
    re2 = _engine()
    assert re2 is not None
    options = re2.Options()
    options.log_errors = False  # RE2 would print each refused pattern on stderr
    if probe:
        options.max_mem = _PROBE_MEMORY
    return options


def _compile(pattern: str, *, probe: bool = False) -> Any:
    re2 = _engine()
    if re2 is None:
        raise PatternError("RE2 (the google-re2 package) is not installed", NO_ENGINE)
    try:
        return re2.compile(pattern, _options(probe))
    except re2.error as exc:
        said = exc.args[0] if exc.args else "cannot be compiled"
        why = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
        if "too large" in why:
            raise PatternError("it is too large for RE2", SIMPLER) from None
        remediation = SIMPLER if "repetition" in why else REWRITE  # RE2 repeats 1,000 at most
        raise PatternError(f"RE2 cannot compile it ({why})", remediation) from None
    except UnicodeEncodeError:
        raise PatternError("it is not valid Unicode text", REWRITE) from None


def check_pattern(pattern: str) -> None:
    """``PatternError`` unless RE2 can run ``pattern`` within :data:`MAX_PROGRAM`."""
    size = _compile(pattern, probe=True).programsize
    if size > MAX_PROGRAM:
        raise PatternError(
            f"it is too complex: RE2 compiles it to {size:,} instructions, at most "
            f"{MAX_PROGRAM:,} are accepted",
            SIMPLER,
        )


def matches(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (as JSON Schema's ``pattern``: not
    anchored); ``PatternError`` when RE2 cannot run it."""
    check_pattern(pattern)  # again: a research saved before patterns were checked at start
    compiled = _compile(pattern)
    try:
        return compiled.search(text) is not None
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" is valid JSON): match its bytes
        return compiled.search(text.encode("utf-8", "surrogatepass")) is not None


def is_regex(value: object) -> bool:
    """The "regex" format, as RE2 reads it (jsonschema's own check compiles with ``re``)."""
    if isinstance(value, str):
        check_pattern(value)
    return True
