"""Reading one configuration file into a layer: bytes, TOML, and paths anchored at its folder."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from foundry_mcp.errors import ConfigError

# Path-valued keys, as (table path, key): relative values are taken from the file's folder.
PATH_KEYS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("research",), "research_dir"),
    (("research",), "research_archive_dir"),
    (("research", "local"), "paths"),
)


def absolute(path: Path) -> Path:
    return path.expanduser().resolve()


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{path} cannot be read: {exc.strerror}.",
            remediation=f"Check the permissions of {path}.",
        ) from None


def read_layer(path: Path, data: bytes) -> dict[str, Any]:
    """One file's settings, with relative paths anchored at the file's folder."""
    layer = _parse_toml(path, data)
    for tables, key in PATH_KEYS:
        found = table(layer, tables)
        if found is None or key not in found:
            continue
        value = found[key]
        if isinstance(value, str):
            found[key] = str(_anchored(value, path.parent))
        elif isinstance(value, list):
            found[key] = [
                str(_anchored(item, path.parent)) if isinstance(item, str) else item
                for item in value
            ]
    return layer


def table(layer: dict[str, Any], tables: tuple[str, ...]) -> dict[str, Any] | None:
    """The table at ``tables`` in a layer, or None where it is missing or not a table."""
    node: Any = layer
    for name in tables:
        node = node.get(name) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _anchored(value: str, folder: Path) -> Path:
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else folder / candidate


def _parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path} is not valid TOML: {exc}.",
            remediation=f"Fix the syntax of {path} (docs/configuration.md lists every key).",
        ) from None
