"""Reading the ``research`` tool's arguments: validated into :class:`ResearchArguments`, or
refused with an error naming the first field that is wrong and what it must be."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from foundry_mcp.errors import InputError, UnknownActionError
from foundry_mcp.server.arguments.model import ACTION_PARAMS, RETIRED_PARAMS, ResearchArguments


def parse_arguments(raw: dict[str, Any]) -> ResearchArguments:
    """Validated arguments, or an ``InputError`` naming the first field that is wrong."""
    try:
        return ResearchArguments.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        raise _refusal(errors[0], raw, len(errors)) from None


def _refusal(error: ErrorDetails, raw: dict[str, Any], count: int) -> InputError:
    field = str(error["loc"][0]) if error["loc"] else "arguments"
    kind = error["type"]
    more = f" ({count - 1} more problem(s) after this one)" if count > 1 else ""
    if field == "action" and kind != "missing":
        return UnknownActionError(
            f"Unknown action {_shown(raw.get(field))}{more}.",
            remediation=f"Use one of: {', '.join(ACTION_PARAMS)}.",
            details={"field": field},
        )
    if kind == "extra_forbidden" and field in RETIRED_PARAMS:
        return InputError(
            f"The parameter '{field}' was removed{more}.",
            remediation=f"Leave it out: {RETIRED_PARAMS[field]}.",
            details={"field": field},
        )
    if kind == "missing":
        return InputError(
            f"{field} is required{more}.",
            remediation=f"Pass action, one of: {', '.join(ACTION_PARAMS)}.",
            details={"field": field},
        )
    if kind == "literal_error":  # a value outside a fixed set: name the set
        expected = str(error.get("ctx", {}).get("expected", ""))
        return InputError(
            f"{field} {_shown(error['input'])} is not one of {expected}{more}.",
            remediation=f"Use {expected} for {field}, or leave it out.",
            details={"field": field},
        )
    if kind == "extra_forbidden":
        action = raw.get("action")
        accepted = ACTION_PARAMS.get(action, ()) if isinstance(action, str) else ()
        known = ", ".join(accepted) if accepted else ", ".join(ResearchArguments.model_fields)
        return InputError(
            f"Unknown parameter '{field}'{more}.",
            remediation=f"Remove it or check its spelling. Parameters accepted here: {known}.",
            details={"field": field},
        )
    return InputError(
        f"{field} {_expectation(field)} (got {_shown(raw.get(field))}){more}.",
        remediation=f"Pass {field} {_expectation(field, bare=True)}, or leave it out.",
        details={"field": field},
    )


def _expectation(field: str, *, bare: bool = False) -> str:
    """What a field must be, read off its schema: 'must be an integer between 1 and 10'."""
    schema = ResearchArguments.model_json_schema()["properties"].get(field, {})
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    spec = options[0] if options else {}
    kind = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "array": "a list",
    }.get(spec.get("type", ""), "a valid value")
    if spec.get("items", {}).get("enum"):
        kind += " of " + ", ".join(repr(value) for value in spec["items"]["enum"])
    low, high = spec.get("minimum"), spec.get("maximum")
    if low is not None and high is not None:
        kind += f" between {low:g} and {high:g}"
    elif low is not None:
        kind += f" of at least {low:g}"
    if spec.get("maxLength") is not None:
        kind += f" of at most {spec['maxLength']:,} characters"
    return kind if bare else f"must be {kind}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
