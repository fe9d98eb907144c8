"""JSON documents addressed by JSON pointers (RFC 6901), and a caller's JSON bounded.

:func:`overrun` walks a value without recursion, so a caller's JSON nested any depth is
measured (and refused) before anything recursive (jsonschema, the JSON encoder, a deep copy)
sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def escape(token: str) -> str:
    """One reference token of a JSON pointer: "~" as "~0", "/" as "~1"."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def to_pointer(tokens: list[str]) -> str:
    """The JSON pointer of a path of keys and indexes ("" for the whole document)."""
    return "".join(f"/{escape(token)}" for token in tokens)


def tokens_of(pointer: str) -> list[str]:
    """The keys and indexes of a JSON pointer, unescaped."""
    if not pointer:
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"not a JSON pointer: {pointer!r}")
    return [unescape(token) for token in pointer[1:].split("/")]


def leaves(data: Any) -> list[tuple[str, Any]]:
    """Every value of ``data`` that is not an object or an array, with its JSON pointer, in
    document order. Iterative: a model's answer nested deep cannot overflow the stack."""
    found: list[tuple[str, Any]] = []
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, pointer = stack.pop()
        if isinstance(value, dict | list):
            pairs = value.items() if isinstance(value, dict) else enumerate(value)
            children = [(item, f"{pointer}/{escape(str(key))}") for key, item in pairs]
            stack.extend(reversed(children))  # popped in document order
        else:
            found.append((pointer, value))
    return found


def get_at(data: Any, pointer: str) -> Any:
    """The value at ``pointer``; ``KeyError`` when there is none."""
    value = data
    for token in tokens_of(pointer):
        value = _step(value, token)
    return value


def set_at(data: Any, pointer: str, value: Any) -> None:
    """Replace the value at ``pointer`` (an existing key or index of its container) in place."""
    parts = tokens_of(pointer)
    if not parts:
        raise ValueError("the whole document cannot be replaced in place")
    container = get_at(data, to_pointer(parts[:-1]))
    last = parts[-1]
    if isinstance(container, dict):
        container[last] = value
    elif isinstance(container, list) and last.isdigit() and int(last) < len(container):
        container[int(last)] = value
    else:
        raise KeyError(pointer)


def _step(value: Any, token: str) -> Any:
    if isinstance(value, dict) and token in value:
        return value[token]
    if isinstance(value, list) and token.isdigit() and int(token) < len(value):
        return value[int(token)]
    raise KeyError(token)


# --------------------------------------------------------------------------- bounds


@dataclass(frozen=True)
class Overrun:
    """Where a JSON value first goes past a bound: ``depth`` (nesting), ``values`` (how many),
    ``size`` (characters of its keys and strings) or ``type`` (no JSON value)."""

    bound: str
    pointer: str


def overrun(value: Any, *, depth: int, values: int, chars: int) -> Overrun | None:
    """The first bound ``value`` goes past, or None. Iterative (an explicit stack, so no
    nesting overflows Python's stack) and at most ``values`` steps, however large ``value``."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    counted, text = 1, 0
    while stack:
        item, pointer, level = stack.pop()
        if level > depth:
            return Overrun("depth", pointer)
        if isinstance(item, str):
            text += len(item)
        elif isinstance(item, dict | list):
            counted += len(item)
            if counted > values:
                return Overrun("values", pointer)
            pairs = list(item.items() if isinstance(item, dict) else enumerate(item))
            for key, sub in reversed(pairs):  # popped in document order
                if isinstance(item, dict):
                    if not isinstance(key, str):
                        return Overrun("type", pointer)
                    text += len(key)
                stack.append((sub, f"{pointer}/{escape(str(key))}", level + 1))
        elif not (item is None or isinstance(item, bool | int | float)):
            return Overrun("type", pointer)
        if text > chars:
            return Overrun("size", pointer)
    return None
