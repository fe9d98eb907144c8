"""The base of every settings table: unknown keys are errors, defaults are validated too."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A table of the configuration."""

    model_config = ConfigDict(extra="forbid", validate_default=True)
