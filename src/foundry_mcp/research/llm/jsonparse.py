"""Reading JSON objects out of model output, leniently: what can be read is kept.

:func:`parse_json_object` recovers the object (strict JSON, a fenced block, the outermost
braces, json-repair). :func:`read_answer` then reads it as an agent's handoff model, after the
model's own lenient validators, field by field and item by item:

* a field of the wrong type that has a default is left out (its default used);
* an item of a list that cannot be read (say, a finding without its text) is left out, and its
  siblings are kept; the same holds within nested models (a finding whose ``parts`` is an
  object keeps everything but ``parts``);
* first, a few coercions whose meaning is clear: one value where a list is expected becomes a
  list of it, a number where text is expected its text, a word of an enumeration in another
  case that word, a one-item list where one value is expected that value.

Only a required field of the answer itself that cannot be read (or no JSON object at all)
leaves nothing: the answer is unreadable. What was left out or coerced is said by field path
(``findings[2].parts``) so that the caller can note it.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, Union, get_args, get_origin

import json_repair
from pydantic import BaseModel, ValidationError

HandoffT = TypeVar("HandoffT", bound=BaseModel)

NO_OBJECT = "The answer holds no JSON object."
MAX_ERRORS = 8  # why an answer is unreadable, told to the model when it is asked again

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


@dataclass(frozen=True)
class Reading(Generic[HandoffT]):
    """What could be read of one model answer."""

    value: HandoffT | None  # None: unreadable (see ``errors``)
    dropped: tuple[str, ...] = ()  # the fields and items left out, by path
    coerced: tuple[str, ...] = ()  # the values read in another form than written, by path
    errors: tuple[str, ...] = ()  # why it is unreadable


def read_answer(text: str, model: type[HandoffT]) -> Reading[HandoffT]:
    """``model`` read leniently from the model output ``text``; see the module."""
    data = parse_json_object(text)
    if data is None:
        return Reading(None, errors=(NO_OBJECT,))
    try:
        return Reading(model.model_validate(data))
    except ValidationError as exc:
        failure = exc
    notes = _Notes()
    pruned = _prune_model(model, data, "", notes)
    if pruned is None:
        return Reading(None, errors=_described(failure))
    return Reading(model.model_validate(pruned), tuple(notes.dropped), tuple(notes.coerced))


_DROP: Any = object()  # a value that cannot be read in its place
Fits = Callable[[Any], bool]  # whether a value validates in its place


@dataclass
class _Notes:
    dropped: list[str] = field(default_factory=list)
    coerced: list[str] = field(default_factory=list)

    def merge(self, other: _Notes) -> None:
        self.dropped += other.dropped
        self.coerced += other.coerced


def _prune_model(
    model: type[BaseModel], data: Any, path: str, notes: _Notes
) -> dict[str, Any] | None:
    """``data`` without what ``model`` cannot read of it; None when a required field is
    missing or unreadable. Fields are tried in turn on a scratch instance, through the model's
    own validators, so that a value is judged as the model would judge it."""
    if not isinstance(data, dict):
        return None
    if _validates(model, data):
        return data
    scratch = model.model_construct()
    validator = model.__pydantic_validator__
    mine = _Notes()
    pruned = dict(data)
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key not in pruned:
            continue

        def fits(value: Any, name: str = name) -> bool:
            try:
                validator.validate_assignment(scratch, name, value)
            except (ValidationError, AttributeError, KeyError, TypeError):
                # (a validator reading another field may not find it on the scratch instance)
                return False
            return True

        where = f"{path}.{name}" if path else name
        value = _repair(pruned[key], info.annotation, fits, where, mine)
        if value is not _DROP:
            pruned[key] = value
            continue
        if info.is_required():
            return None
        del pruned[key]
        mine.dropped.append(where)
    if not _validates(model, pruned):
        return None
    notes.merge(mine)
    return pruned


def _repair(value: Any, annotation: Any, fits: Fits, path: str, notes: _Notes) -> Any:
    """``value`` as it fits its place (typed ``annotation``), or ``_DROP``."""
    if fits(value):
        return value
    item_type = _list_item(annotation)
    if item_type is not None:
        return _repair_list(value, item_type, fits, path, notes)
    nested = _model_in(annotation)
    if nested is not None and isinstance(value, dict):
        pruned = _prune_model(nested, value, path, notes)
        if pruned is not None and fits(pruned):
            return pruned
    for candidate in _coercions(value):
        if fits(candidate):
            notes.coerced.append(path)
            return candidate
    return _DROP


def _repair_list(value: Any, item_type: Any, fits: Fits, path: str, notes: _Notes) -> Any:
    """The readable items of ``value`` (one value alone read as a list of it), or ``_DROP``."""
    single = not isinstance(value, list)
    items = [value] if single else value
    mine = _Notes()
    kept = []
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        repaired = _repair(item, item_type, lambda v: fits([v]), where, mine)
        if repaired is _DROP:
            mine.dropped.append(where)
        else:
            kept.append(repaired)
    if (single and not kept) or not fits(kept):
        return _DROP
    if single:
        mine.coerced.append(path)
    notes.merge(mine)
    return kept


def _coercions(value: Any) -> list[Any]:
    """Other readings of ``value`` whose meaning is clear, to try in turn."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [str(value)]  # a number where text is expected
    if isinstance(value, str):
        word = " ".join(value.split()).lower()
        return [word] if word != value else []  # an enumeration's word in another case
    if isinstance(value, list) and len(value) == 1:
        return [value[0]]  # one value, listed
    return []


def _members(annotation: Any) -> tuple[Any, ...]:
    """The types of a union (``X | None``), or the annotation alone."""
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for a in get_args(annotation) if a is not type(None))
    return (annotation,)


def _list_item(annotation: Any) -> Any | None:
    """The item type of a list annotation (or of an optional one), else None."""
    for member in _members(annotation):
        if get_origin(member) is list:
            args = get_args(member)
            return args[0] if args else Any
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (alone or optional), else None."""
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            return member
    return None


def _validates(model: type[BaseModel], data: Any) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


def _described(error: ValidationError) -> tuple[str, ...]:
    """The first problems of ``error``, each led by the path of the value concerned."""
    lines = []
    for problem in error.errors(include_url=False)[:MAX_ERRORS]:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem["loc"])
        lines.append(f"{path.lstrip('.') or '(the answer)'}: {problem['msg']}")
    return tuple(lines)
