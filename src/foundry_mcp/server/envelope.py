"""The response envelope every ``research`` call returns."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from foundry_mcp import __version__
from foundry_mcp.errors import FoundryError


class Meta(BaseModel):
    version: str = __version__
    request_id: str = Field(default_factory=lambda: f"req-{uuid.uuid4().hex[:12]}")
    warnings: list[str] = Field(default_factory=list)


class Envelope(BaseModel):
    """``{success, data, error, meta}``; on failure ``data`` holds code, type and remediation."""

    success: bool
    data: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    meta: Meta = Field(default_factory=Meta)


def ok(data: dict[str, Any], warnings: list[str] | None = None) -> Envelope:
    return Envelope(success=True, data=data, meta=Meta(warnings=warnings or []))


def failure(error: FoundryError, warnings: list[str] | None = None) -> Envelope:
    data: dict[str, Any] = {
        "error_code": error.error_code,
        "error_type": error.error_type,
        "remediation": error.remediation,
    }
    field = error.details.get("field")
    if field:
        data["field"] = field
    details = {k: v for k, v in error.details.items() if k != "field" and v is not None}
    if details:
        data["details"] = details
    return Envelope(
        success=False, data=data, error=error.message, meta=Meta(warnings=warnings or [])
    )
