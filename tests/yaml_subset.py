"""A reader of the YAML subset ``deploy/compose.yaml`` uses, for tests that need no YAML library.

Block mappings and lists, flow lists in JSON form, quoted strings, anchors, aliases and ``<<``
merges; anything else is refused (``YamlSubsetError``) rather than misread.
"""

from __future__ import annotations

import json
import re
from typing import Any


class YamlSubsetError(ValueError):
    """compose.yaml uses YAML this reader does not know: extend the reader, do not guess."""


def parse_yaml(text: str) -> Any:
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise YamlSubsetError(f"line {number}: a tab in the indentation")
        content = _without_comment(raw).rstrip()
        if content.strip():
            lines.append((len(content) - len(content.lstrip()), content.strip(), number))
    if not lines:
        return None
    anchors: dict[str, Any] = {}
    node, end = _block(lines, 0, lines[0][0], anchors)
    if end != len(lines):
        raise YamlSubsetError(f"line {lines[end][2]}: unexpected indentation")
    return node


def _without_comment(line: str) -> str:
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def _block(
    lines: list[tuple[int, str, int]], i: int, indent: int, anchors: dict[str, Any]
) -> tuple[Any, int]:
    if lines[i][1] == "-" or lines[i][1].startswith("- "):
        return _sequence(lines, i, indent)
    return _mapping(lines, i, indent, anchors)


def _sequence(lines: list[tuple[int, str, int]], i: int, indent: int) -> tuple[list[Any], int]:
    items = []
    while i < len(lines) and lines[i][0] == indent:
        _, content, number = lines[i]
        if not content.startswith("- "):
            raise YamlSubsetError(f"line {number}: a list item expected")
        item = content[2:].strip()
        if re.match(r"^[\w.-]+:(\s|$)", item):
            raise YamlSubsetError(f"line {number}: a mapping inside a list")
        items.append(_scalar(item, number))
        i += 1
    return items, i


def _mapping(
    lines: list[tuple[int, str, int]], i: int, indent: int, anchors: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    own: dict[str, Any] = {}
    merged: dict[str, Any] = {}
    while i < len(lines) and lines[i][0] == indent:
        _, content, number = lines[i]
        match = re.match(r'^("[^"]*"|[^\s"\'{}\[\]:]+):(?:\s+(.*))?$', content)
        if not match:
            raise YamlSubsetError(f"line {number}: not a 'key: value' line: {content!r}")
        key, rest = match.group(1).strip('"'), (match.group(2) or "").strip()
        anchor = None
        if rest.startswith("&"):
            anchor, _, rest = rest[1:].partition(" ")
            rest = rest.strip()
        i += 1
        value: Any
        if rest.startswith("*"):
            if rest[1:] not in anchors:
                raise YamlSubsetError(f"line {number}: unknown alias {rest}")
            value = anchors[rest[1:]]
        elif rest:
            value = _scalar(rest, number)
        elif i < len(lines) and lines[i][0] > indent:
            value, i = _block(lines, i, lines[i][0], anchors)
        else:
            value = None
        if anchor:
            anchors[anchor] = value
        if key == "<<":
            if not isinstance(value, dict):
                raise YamlSubsetError(f"line {number}: '<<' merges a mapping")
            merged.update(value)
        elif key in own:
            raise YamlSubsetError(f"line {number}: {key!r} twice")
        else:
            own[key] = value
    return {**merged, **own}, i


def _scalar(text: str, number: int) -> Any:
    if text.startswith("["):
        try:
            return json.loads(text)
        except ValueError:
            raise YamlSubsetError(f"line {number}: a flow list that is not JSON") from None
    if text.startswith(("{", "&", "*", "|", ">", "!")):
        raise YamlSubsetError(f"line {number}: unsupported value {text!r}")
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("'"):
        if not text.endswith("'"):
            raise YamlSubsetError(f"line {number}: unterminated string")
        return text[1:-1].replace("''", "'")
    return text
