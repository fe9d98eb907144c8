"""The base of every settings table: unknown keys are errors, defaults are validated too, and a
value chosen from a fixed set is accepted in any case (``level = "debug"``)."""

from __future__ import annotations

import types
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator


class Section(BaseModel):
    """A table of the configuration."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _choices_in_any_case(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        choices = literal_choices(cls)
        fixed = dict(data)
        for name, options in choices.items():
            value = fixed.get(name)
            if isinstance(value, str) and value not in options:
                said = value.strip().casefold()
                fixed[name] = next((o for o in options if o.casefold() == said), value)
        return fixed


@cache
def literal_choices(model: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """Each field of ``model`` whose value is one of fixed strings, and those strings."""
    choices = {}
    for name, field in model.model_fields.items():
        options = tuple(_string_literals(field.annotation))
        if options:
            choices[name] = options
    return choices


def _string_literals(annotation: Any) -> list[str]:
    origin = get_origin(annotation)
    if origin is Literal:
        return [arg for arg in get_args(annotation) if isinstance(arg, str)]
    if origin is Annotated:
        return _string_literals(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [value for arg in get_args(annotation) for value in _string_literals(arg)]
    return []
