"""The ``research`` tool's arguments: the model that is their bounds, validation and published
schema (:mod:`.model`), the types its fields share (:mod:`.types`), and reading a call's
arguments into it (:mod:`.parsing`)."""

from foundry_mcp.server.arguments.model import (
    ACTION_PARAMS,
    ACTION_SUMMARIES,
    BOUND_PARAMS,
    LIMIT_PARAMS,
    RETIRED_PARAMS,
    Action,
    ResearchArguments,
    input_schema,
)
from foundry_mcp.server.arguments.parsing import parse_arguments

__all__ = [
    "ACTION_PARAMS",
    "ACTION_SUMMARIES",
    "BOUND_PARAMS",
    "LIMIT_PARAMS",
    "RETIRED_PARAMS",
    "Action",
    "ResearchArguments",
    "input_schema",
    "parse_arguments",
]
