"""The value types of the ``research`` tool's arguments: bounds, and the lenient readings some
clients need (arrays or objects sent as text, ``true`` refused as a number)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from foundry_mcp.config import LIMIT_BOUNDS, MAX_WAIT_SECONDS, WHOLE_PAGES, check_reading_budget
from foundry_mcp.providers.search.base import SourceType


def no_bool(value: Any) -> Any:
    """JSON ``true`` is not the number 1 (pydantic's lax mode would take it as one)."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    return value


def limit_field(name: str, description: str) -> Any:
    low, high = LIMIT_BOUNDS[name]
    return Field(None, description=f"{description}, {low:g}-{high:g}.")


def _as_list(value: Any) -> Any:
    """A list of lower-cased names; one text is read as the JSON array it spells (some clients
    send arrays as text) or as comma-separated names."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text) if text.startswith("[") else text.split(",")
        except (ValueError, RecursionError):  # RecursionError: nested too deeply to read
            value = text.split(",")
    if isinstance(value, list):
        return [item.strip().lower() if isinstance(item, str) else item for item in value]
    return value


def _plan_value(value: Any) -> Any:
    """An edited plan sent as JSON text (some clients send objects as text) is read as JSON."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # RecursionError: nested too deeply to read
            return value
    return value


NOT_BOOL = BeforeValidator(no_bool)
LOW = {name: low for name, (low, _) in LIMIT_BOUNDS.items()}
HIGH = {name: high for name, (_, high) in LIMIT_BOUNDS.items()}
# Constraints before the validator: pydantic then puts them in the published schema.
Iterations = Annotated[int, Field(ge=LOW["max_iterations"], le=HIGH["max_iterations"]), NOT_BOOL]
SubQueries = Annotated[int, Field(ge=LOW["max_sub_queries"], le=HIGH["max_sub_queries"]), NOT_BOOL]
SourcesPerQuery = Annotated[
    int, Field(ge=LOW["max_sources_per_query"], le=HIGH["max_sources_per_query"]), NOT_BOOL
]
Concurrency = Annotated[int, Field(ge=LOW["max_concurrent"], le=HIGH["max_concurrent"]), NOT_BOOL]
TaskTimeout = Annotated[float, Field(ge=LOW["task_timeout"], le=HIGH["task_timeout"]), NOT_BOOL]
ReadingBudget = Annotated[
    int,
    Field(ge=WHOLE_PAGES, le=HIGH["reading_budget"]),
    NOT_BOOL,
    AfterValidator(check_reading_budget),
]
WaitSeconds = Annotated[float, Field(ge=0, le=MAX_WAIT_SECONDS), NOT_BOOL]
Offset = Annotated[int, Field(ge=0), NOT_BOOL]
PageChars = Annotated[int, Field(ge=1000, le=100_000), NOT_BOOL]
PageSize = Annotated[int, Field(ge=1, le=500), NOT_BOOL]
SourceTypes = Annotated[list[SourceType], BeforeValidator(_as_list)]
PreferredSources = Annotated[
    list[Annotated[str, Field(max_length=200)]], Field(max_length=20), BeforeValidator(_as_list)
]


Domains = Annotated[
    list[Annotated[str, Field(max_length=255)]], Field(max_length=50), BeforeValidator(_as_list)
]


EditedPlan = Annotated[dict[str, Any] | list[Any], BeforeValidator(_plan_value)]


# Its keys are checked by the service (``ReviseRequest``), whose errors name the key and list
# the others; published as an object, its keys in research://help, to keep tools/list short.
ReviseObject = Annotated[dict[str, Any], BeforeValidator(_plan_value)]
VersionNumber = Annotated[int, Field(ge=1), NOT_BOOL]
