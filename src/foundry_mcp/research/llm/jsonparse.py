"""Reading JSON objects out of model output, repairing what can be repaired."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import json_repair
from pydantic import BaseModel, ValidationError

HandoffT = TypeVar("HandoffT", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text``, or None when nothing usable can be recovered.

    Tries strict JSON, then a fenced block, then the outermost braces, then json-repair
    (which fixes trailing commas, single quotes and truncated output).
    """
    try:
        whole = json.loads(text.strip())
    except ValueError:
        pass
    else:
        return whole if isinstance(whole, dict) else None
    candidates = [text.strip()]
    fenced = _FENCE.search(text)
    if fenced:
        candidates.append(fenced.group(1).strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    for candidate in candidates[1:] or candidates:
        repaired = json_repair.loads(candidate)
        if isinstance(repaired, dict) and repaired:
            return repaired
    return None


def parse_handoff(text: str, model: type[HandoffT]) -> HandoffT | None:
    """The agent handoff ``model`` read from model output, or None if it cannot be."""
    data = parse_json_object(text)
    if data is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError:
        return None
