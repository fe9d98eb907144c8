"""What a caller asks of a revision (the tool's ``revise`` object, the ``revise`` command's
options): one pydantic model is its bounds, its validation and its guide (``research://help``).

Light on purpose: the tool's guide reads it before any research code is loaded.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from foundry_mcp.errors import InputError
from foundry_mcp.research.models.versions import (
    MAX_INSTRUCTION_CHARS,
    MAX_LENGTH_WORDS,
    MIN_LENGTH_WORDS,
    ReportForm,
    RevisionKind,
    WritingInstructions,
    misfit,
)

MAX_SEARCHES = 50  # the most searches a deepen or a refresh may be given

ReviseKind = Literal["rewrite", "deepen", "refresh"]
_FIXES = {
    "part": "Give part with kind 'deepen' (a sub-question's or gap's id, a section's heading, or "
    "a question of your own), or drop it for a rewrite or a refresh.",
    "max_searches": "Drop max_searches, or use kind 'deepen' or 'refresh' to search.",
}


class ReviseRequest(BaseModel):
    """A rewrite, deepen or refresh of a completed research's report."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    kind: ReviseKind = Field(
        description="rewrite: written again from the saved findings and sources, no search; "
        "deepen: one part searched and read further, then written again; refresh: its "
        "searches asked again for what is new, with a section on what changed."
    )
    form: ReportForm | None = Field(
        None,
        description="report (default), brief (one page), table (a comparison table) or memo.",
    )
    audience: str | None = Field(
        None, min_length=1, max_length=300, description="Who reads it, e.g. 'a CFO'."
    )
    length_words: int | None = Field(
        None,
        ge=MIN_LENGTH_WORDS,
        le=MAX_LENGTH_WORDS,
        strict=True,
        description=f"About how many words ({MIN_LENGTH_WORDS}-{MAX_LENGTH_WORDS:,}).",
    )
    language: str | None = Field(
        None, min_length=1, max_length=40, description="e.g. 'German' (default: the report's)."
    )
    corrections: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_INSTRUCTION_CHARS,
        description="What to correct or change, in your words.",
    )
    part: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_INSTRUCTION_CHARS,
        description="deepen (required): a sub-question's or gap's id, a section's heading, or a "
        "question of your own.",
    )
    max_searches: int | None = Field(
        None,
        ge=1,
        le=MAX_SEARCHES,
        strict=True,
        description=f"deepen, refresh: the most new searches (1-{MAX_SEARCHES}).",
    )

    @classmethod
    def read(cls, given: Any) -> ReviseRequest:
        """``given`` (an object, or its JSON text) as a request; ``InputError`` naming the key
        and what it takes otherwise."""
        if isinstance(given, str) and given.strip().startswith("{"):
            with contextlib.suppress(ValueError, RecursionError):  # said below, as not an object
                given = json.loads(given)
        if not isinstance(given, dict):
            raise _refused(
                "revise is required: an object such as {kind: 'rewrite', form: 'brief'}.",
                key=None,
            )
        try:
            asked = cls.model_validate(given)
        except ValidationError as exc:
            # A key it does not know first: a misspelt key also makes the right one missing.
            errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
            said = [
                f"revise.{error['loc'][0] if error['loc'] else ''}: "
                + ("is not a key of revise" if error["type"] == "extra_forbidden" else error["msg"])
                for error in errors
            ]
            key = str(errors[0]["loc"][0]) if errors[0]["loc"] else None
            raise _refused("; ".join(said) + ".", key=key) from None
        asked._check_kind()
        return asked

    def _check_kind(self) -> None:
        key, why = misfit(self.revision_kind, part=self.part, max_searches=self.max_searches)
        if key:
            raise _refused(f"revise.{key} {why}.", key=key, remediation=_FIXES[key])

    @property
    def revision_kind(self) -> RevisionKind:
        return RevisionKind(self.kind)

    def instructions(self) -> WritingInstructions:
        """What the new version's writer is asked for."""
        return WritingInstructions(
            form=self.form or ReportForm.REPORT,
            audience=self.audience,
            length_words=self.length_words,
            language=self.language,
            corrections=self.corrections,
        )


def guide() -> list[str]:
    """The ``revise`` object's keys, one line each, for ``research://help``."""
    lines = []
    for name, field in ReviseRequest.model_fields.items():
        lines.append(
            f"  - `{name}`{' (required)' if field.is_required() else ''}: {field.description}"
        )
    return lines


def _refused(message: str, *, key: str | None, remediation: str | None = None) -> InputError:
    keys = ", ".join(ReviseRequest.model_fields)
    return InputError(
        message,
        remediation=remediation
        or f"Pass revise as an object with kind (rewrite, deepen or refresh) and any of: {keys} "
        "(research://help describes each).",
        details={"field": "revise", **({"key": key} if key else {})},
    )
