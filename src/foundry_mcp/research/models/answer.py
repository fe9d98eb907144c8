"""A structured answer: the research's answer in the shape of the caller's JSON Schema.

The caller's shape is kept as given (``data``); what backs each value lives beside it, in maps
keyed by the value's JSON pointer (RFC 6901, e.g. ``/rows/0/licence``): the sources that state
it (``citations``) or, for a value left null, why no source establishes it (``unknown``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from foundry_mcp.research.models.base import Verdict, _Model


class ValueSource(_Model):
    """One source backing one value of a structured answer, with the passage that states it."""

    number: int | None = None  # the source's citation number in the report; None: uncited there
    source_id: str
    url: str | None = None
    title: str = ""
    quote: str = ""  # verbatim from the source's stored text
    verdict: str = Verdict.UNVERIFIED.value  # the fact-checker's, a ``Verdict`` value


class StructuredAnswer(_Model):
    """The research's answer in the caller's shape, each value's sources by JSON pointer."""

    data: Any = None  # the caller's shape; None when no answer could be written
    citations: dict[str, list[ValueSource]] = Field(default_factory=dict)
    unknown: dict[str, str] = Field(default_factory=dict)  # pointer -> why the value is null
    valid: bool = False  # validates against the schema with nulls allowed at its leaves
    strict_valid: bool = False  # validates against the schema as given
    errors: list[str] = Field(default_factory=list)  # validation errors, or why there is none
    checked: int = 0  # values sent to the fact-checker
    supported: int = 0  # of them, those its sources state (in full or in part)
    removed: int = 0  # values made null because their sources did not state them
