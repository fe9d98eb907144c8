"""An untrusted ``./foundry-mcp.toml``: the values of it that apply, and those that wait for trust.

Until the user trusts the file (``foundry-mcp trust``, see :mod:`foundry_mcp.trust`), each of
its values is sifted by the rule its key carries (:mod:`foundry_mcp.config.effects`): a value
that would delete, run, spend, move, read or send more than what applies without the file is
ignored and named in an :class:`UntrustedProjectConfig`; a value whose effect only the code using
it can judge is set aside (:class:`ProjectNarrowing`); every other value applies.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from foundry_mcp.config.effects import (
    Effect,
    Harmless,
    NarrowsWhereUsed,
    Protected,
    Rule,
    WithinProject,
    rule_of,
    same_value,
)
from foundry_mcp.config.files import absolute, read_layer
from foundry_mcp.config.settings import Settings

# A key with no rule (a defect the field-walking test catches) needs trust, to be safe.
UNCLASSIFIED = Protected(Effect.SPENDS)


class Sifted(NamedTuple):
    """An untrusted project file's layer, sifted."""

    kept: dict[str, Any]  # the values that apply as they stand
    ignored: list[str]  # the keys whose values were dropped, as "[table] key"
    set_aside: dict[str, Any]  # the NarrowsWhereUsed values, in a layer of their own
    set_aside_keys: list[str]  # their keys, as "[table] key"


def without_protected_keys(
    layer: dict[str, Any],
    project: Path,
    below: dict[str, Any] | None = None,
    model: type[BaseModel] = Settings,
) -> Sifted:
    """An untrusted project file's settings without the values it may not set.

    ``below`` holds the layers under the file (the user's own file), whose values, or else the
    built-in defaults, are what applies without it.
    """
    kept = copy.deepcopy(layer)
    ignored: list[str] = []
    set_aside: dict[str, Any] = {}
    _sift(kept, model, below or {}, (), absolute(project), ignored, set_aside)
    return Sifted(kept, ignored, set_aside, _names(set_aside))


def protected_keys_in(path: Path, data: bytes) -> list[str]:
    """The keys of a project file that apply only once it is trusted (against the defaults),
    those that only narrow where used among them."""
    sifted = without_protected_keys(read_layer(path, data), path.parent)
    return sifted.ignored + sifted.set_aside_keys


def _sift(
    layer: dict[str, Any],
    model: type[BaseModel],
    below: dict[str, Any],
    where: tuple[str, ...],
    project: Path,
    ignored: list[str],
    set_aside: dict[str, Any],
) -> None:
    for key in list(layer):
        field = model.model_fields.get(key)
        if field is None:
            continue  # validation names an unknown key
        value = layer[key]
        underneath = below.get(key) if isinstance(below, dict) else None
        rule = rule_of(field.metadata)
        section = section_of(field)
        if rule is None and section is not None:
            _sift_section(
                value, section, field, underneath, (*where, key), project, ignored, set_aside
            )
            continue
        if isinstance(rule, Harmless):
            continue
        if isinstance(rule, NarrowsWhereUsed):
            table = set_aside
            for name in where:
                table = table.setdefault(name, {})
            table[key] = layer.pop(key)
            continue
        restriction = rule if rule is not None else UNCLASSIFIED
        applying = underneath if key in below else _default(field)
        if isinstance(restriction, WithinProject):
            _sift_folders(layer, key, restriction, where, project, ignored)
        elif same_value(value, applying) or same_value(value, _default(field)):
            # A value that is the default, or applies anyway, is dropped without a word: the
            # user's own value (or that same default) applies, and nothing they should know
            # about happened. Dropped, not kept: a key the file sets counts as set, and a
            # value some kinds of provider override when it is unset (the keyless search's
            # hedging, say) must keep their own.
            del layer[key]
        elif not restriction.keeps(value, applying, project):
            del layer[key]
            ignored.append(_name(where, key))


def _sift_section(
    value: Any,
    section: type[BaseModel],
    field: FieldInfo,
    below: Any,
    where: tuple[str, ...],
    project: Path,
    ignored: list[str],
    set_aside: dict[str, Any],
) -> None:
    if not isinstance(value, dict):
        return  # validation names a value that is not a table
    below = below if isinstance(below, dict) else {}
    if typing.get_origin(field.annotation) is dict:
        for name, table in value.items():
            if isinstance(table, dict):
                inner = (*where, name)
                _sift(table, section, below.get(name) or {}, inner, project, ignored, set_aside)
    else:
        _sift(value, section, below, where, project, ignored, set_aside)


def _sift_folders(
    layer: dict[str, Any],
    key: str,
    rule: WithinProject,
    where: tuple[str, ...],
    project: Path,
    ignored: list[str],
) -> None:
    folders = layer[key]
    if not isinstance(folders, list):
        return
    outside = [folder for folder in folders if not rule.inside(folder, project)]
    if outside:
        layer[key] = [folder for folder in folders if folder not in outside]
        listed = ", ".join(str(folder) for folder in outside)
        ignored.append(f"{_name(where, key)} outside {project} ({listed})")


def every_key(
    model: type[BaseModel] = Settings, where: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], str, Rule | None]]:
    """Every key of the settings as ``(table, key, rule)``, sections walked into; ``rule`` is
    None for a key that has none (which is then treated as protected)."""
    for key, field in model.model_fields.items():
        rule = rule_of(field.metadata)
        section = section_of(field)
        if rule is None and section is not None:
            table = "<name>" if typing.get_origin(field.annotation) is dict else None
            inner = (*where, key, table) if table else (*where, key)
            yield from every_key(section, inner)
        else:
            yield where, key, rule


def section_of(field: FieldInfo) -> type[BaseModel] | None:
    """The settings model a field holds (itself, or as the values of a table), if any."""
    annotation = field.annotation
    if typing.get_origin(annotation) is dict:
        annotation = typing.get_args(annotation)[1]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _default(field: FieldInfo) -> Any:
    return field.get_default(call_default_factory=True)


def _names(set_aside: dict[str, Any]) -> list[str]:
    """The "[table] key" names of a set-aside layer: tables two deep at most ([research])."""
    return [
        _name((table,), key)
        for table, values in set_aside.items()
        for key in (values if isinstance(values, dict) else {})
    ]


def _name(where: tuple[str, ...], key: str) -> str:
    return f"[{'.'.join(where)}] {key}" if where else f"[{key}]"
