"""The answer in the caller's shape (``output_schema``), as the report action, the JSON export
and the resource ``research://{id}/answer`` give it."""

from __future__ import annotations

from typing import Any

from foundry_mcp.research.models import ResearchState


def answer_payload(state: ResearchState) -> dict[str, Any]:
    """``{"answer": ...}`` for a research started with an ``output_schema`` (``None`` until it
    is written); nothing for one started without."""
    if state.options.output_schema is None:
        return {}
    answer = state.structured_answer
    return {"answer": answer.model_dump(mode="json") if answer is not None else None}
