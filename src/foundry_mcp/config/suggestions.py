"""What an unknown configuration key probably meant: the closest known key of its table, and
the file's name for a limit that the command line's flags and the tool call by a shorter one
(``max_iterations`` is ``deep_research_max_iterations`` in ``[research]``)."""

from __future__ import annotations

import difflib
import typing

from pydantic import BaseModel

from foundry_mcp.config.research_settings import LIMIT_KEYS
from foundry_mcp.config.settings import Settings
from foundry_mcp.config.untrusted import section_of

UNKNOWN = "unknown key (it is not read by foundry-mcp; check the spelling)"


def unknown_key_message(loc: tuple[str, ...]) -> str:
    """The message for the unknown key at ``loc`` (its table's path, then the key)."""
    *table, key = loc
    known = known_keys(tuple(table))
    if not known:
        return UNKNOWN
    file_name = LIMIT_KEYS.get(key) or f"deep_research_{key}"
    if file_name in known:
        return f"unknown key (in the file, {key} is called {file_name})"
    # A key is also found by its short name: max_sorces is close to (deep_research_)max_sources.
    names = {name: name for name in known}
    for name in known:
        names.setdefault(name.removeprefix("deep_research_"), name)
    close = difflib.get_close_matches(key.lower(), names, n=1, cutoff=0.75)
    if close:
        return f"unknown key (did you mean {names[close[0]]}?)"
    return UNKNOWN


def known_keys(table: tuple[str, ...]) -> list[str]:
    """The keys of the table at ``table`` (e.g. ``("research", "fetch")``); [] if unknown."""
    model: type[BaseModel] = Settings
    parts = list(table)
    while parts:
        field = model.model_fields.get(parts.pop(0))
        section = section_of(field) if field is not None else None
        if field is None or section is None:
            return []
        if typing.get_origin(field.annotation) is dict:  # a table of named tables
            if not parts:
                return []
            parts.pop(0)  # [providers.<name>]
        model = section
    return list(model.model_fields)
